package main

import "github.com/spf13/cobra"

// examples are the Example sections of the commands whose own file does
// not set one, by command path (cobra's own commands included).
var examples = map[string]string{
	"primalscope": `  primalscope                      # the TUI over the live ecosystem
  primalscope demo                 # the TUI over a simulated one
  primalscope ls
  primalscope call beardog health.liveness
  primalscope help targets`,
	"primalscope ls": `  primalscope ls
  primalscope ls --json
  primalscope ls --jq '.targets[] | select(.state == "live") | .name'
  primalscope ls --watch --json
  primalscope ls --socket-dir /tmp/biomeos --stale 500ms`,
	"primalscope caps": `  primalscope caps beardog
  primalscope caps ai --json
  primalscope caps rhizocrypt --jq '.capabilities.methods[]'
  primalscope caps tcp://10.0.0.5:9200`,
	"primalscope check": `  primalscope check
  primalscope check beardog --level 2
  primalscope check --level 3 --json
  primalscope check --jq '.targets[] | {target, level}'`,
	"primalscope demo": `  primalscope demo
  primalscope demo --serve > demo.dir &
  primalscope ls --socket-dir "$(head -1 demo.dir)"
  primalscope demo --serve --dir /tmp/ps-demo --tick 200ms`,
	"primalscope history save": `  primalscope history save 42 daily-sign
  primalscope replay daily-sign`,
	"primalscope history export": `  primalscope history export 42
  primalscope history export daily-sign --as socat
  primalscope history export 42 --as json | jq .params`,
	"primalscope completion": `  source <(primalscope completion bash)
  primalscope completion zsh > "${fpath[1]}/_primalscope"
  primalscope completion fish > ~/.config/fish/completions/primalscope.fish`,
	"primalscope completion bash": `  source <(primalscope completion bash)
  primalscope completion bash > /etc/bash_completion.d/primalscope`,
	"primalscope completion zsh":        `  primalscope completion zsh > "${fpath[1]}/_primalscope"`,
	"primalscope completion fish":       `  primalscope completion fish > ~/.config/fish/completions/primalscope.fish`,
	"primalscope completion powershell": `  primalscope completion powershell | Out-String | Invoke-Expression`,
}

// addExamples fills in the Example of every command that has none.
func addExamples(root *cobra.Command) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Example == "" {
			c.Example = examples[c.CommandPath()]
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}
