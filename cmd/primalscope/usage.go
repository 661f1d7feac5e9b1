package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ecoPrimals/primalscope/ipc"
)

// usageEverywhere makes every way cobra can refuse a command line a usage
// error (exit 2): an unknown command (with cobra's "did you mean"
// suggestions), a wrong number of arguments, an unknown flag or a bad flag
// value, on every command, the ones cobra adds itself (completion, help)
// included. Call it once the tree is built.
func usageEverywhere(root *cobra.Command) {
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return usageErr(fmt.Errorf("%w (see %s --help)", err, cmd.CommandPath()))
	})
	root.Args = unknownCommand
	root.InitDefaultHelpCmd()
	if !root.CompletionOptions.DisableDefaultCmd { // see skipCompletionCmd
		root.InitDefaultCompletionCmd()
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c != root && !c.Runnable() && c.HasSubCommands() {
			// A group (completion): with no subcommand it shows its help;
			// anything else is an unknown subcommand.
			c.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
			c.Args = unknownCommand
			c.SuggestionsMinimumDistance = 2
		}
		if c != root {
			v := c.Args
			if v == nil {
				v = cobra.ArbitraryArgs // what cobra does for a subcommand without Args
			}
			c.Args = usageArgs(v)
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// usageArgs wraps an argument validator so that its failures are usage
// errors; one already marked is kept as it is.
func usageArgs(v cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		err := v(cmd, args)
		if err == nil {
			return nil
		}
		if _, ok := err.(*usageError); ok {
			return err
		}
		return usageErr(fmt.Errorf("%s: %w (see %s --help)", cmd.CommandPath(), err, cmd.CommandPath()))
	}
}

// unknownCommand is the root's argument check: the root takes no
// arguments, so one is a command that does not exist; cobra's suggestions
// (by edit distance and prefix) are added.
func unknownCommand(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += "\n\nDid you mean this?\n\t" + strings.Join(s, "\n\t")
	}
	return usageErr(fmt.Errorf("%s\n\nRun '%s --help' for the commands", msg, cmd.CommandPath()))
}

// shellFit adds what makes the CLI fit a shell: --version and version,
// help topics, dynamic completion, and exit 2 for every usage error. It
// runs once the commands are all added.
func (a *app) shellFit(root *cobra.Command) {
	root.SuggestionsMinimumDistance = 2
	if !namesCommand(root, a.args) {
		// root's own --version: of no use when another command runs
		// (reading the build information costs a one-shot call 0.05 ms).
		versionFlag(root)
	}
	root.AddCommand(a.versionCmd(), a.refreshCmd())
	root.SetHelpCommand(a.helpCmd(root))
	usageEverywhere(root)
	a.checkFlagsFirst(root)
	a.completions(root)
	addExamples(root)
}

// checkGlobalFlags refuses a bad value of a global flag before any command
// runs, whether or not that command would have read it: `ls --color
// sometimes` is as wrong as `call --color sometimes`.
func (a *app) checkGlobalFlags() error {
	if _, err := a.colorChoice(); err != nil {
		return err
	}
	if _, err := ipc.ParseWire(a.wire); err != nil {
		return usageErr(fmt.Errorf("--wire: %w", err))
	}
	if _, err := ipc.ParsePrefixMode(a.prefix); err != nil {
		return usageErr(fmt.Errorf("--prefix: %w", err))
	}
	if _, _, err := ipc.ParseBTSPCipher(a.btspCipher); err != nil {
		return usageErr(fmt.Errorf("--btsp-cipher: %w", err))
	}
	if a.timeout <= 0 {
		return usageErr(fmt.Errorf("--timeout must be positive, not %s", a.timeout))
	}
	if a.maxFrame <= 0 {
		return usageErr(errors.New("--max-frame must be positive"))
	}
	if a.theme != "" {
		if _, err := a.themeFor(); err != nil {
			return err
		}
	}
	return nil
}

// checkFlagsFirst runs checkGlobalFlags before root's persistent pre-run.
func (a *app) checkFlagsFirst(root *cobra.Command) {
	prev := root.PersistentPreRunE
	root.PersistentPreRunE = func(cmd *cobra.Command, args []string) error {
		if err := a.checkGlobalFlags(); err != nil {
			return err
		}
		if prev != nil {
			return prev(cmd, args)
		}
		return nil
	}
}
