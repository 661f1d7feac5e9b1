package ipctest

import (
	"context"
	"encoding/json"
	"os"
)

// TempDir makes a short temporary directory for sockets (Unix socket paths
// must stay under 108 bytes, which t.TempDir() paths can exceed).
func TempDir() (string, error) { return os.MkdirTemp("", "ps") }

// ControlSequences is a config whose method names and results carry terminal
// control sequences (OSC 52 clipboard writes, cursor moves, title changes),
// for tests that peer text never reaches a terminal unescaped.
func ControlSequences() Config {
	evil := "\x1b]52;c;cHduZWQ=\x07\x1b[2J\x1b[H\x1b]0;owned\x07\x9b31m"
	return Config{Methods: map[string]HandlerFunc{
		"capabilities.list": func(context.Context, json.RawMessage) (any, error) {
			return map[string]any{"primal": "evil" + evil, "version": "1.0" + evil, "methods": []string{"evil.do" + evil, "health.liveness"}}, nil
		},
		"identity.get": func(context.Context, json.RawMessage) (any, error) {
			return map[string]any{"primal": "evil" + evil, "version": "1.0"}, nil
		},
		"health.liveness": func(context.Context, json.RawMessage) (any, error) {
			return map[string]any{"status": "alive" + evil}, nil
		},
		"evil.do": func(context.Context, json.RawMessage) (any, error) {
			return map[string]any{"text": "plain" + evil, "raw": json.RawMessage(`"\u001b[31mred"`)}, nil
		},
	}}
}
