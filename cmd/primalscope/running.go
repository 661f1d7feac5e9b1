package main

import (
	"strings"

	"github.com/spf13/cobra"
)

// noteRunning remembers which command runs (app.running), for what
// primalscope tells a peer about itself.
func (a *app) noteRunning(root *cobra.Command) {
	prev := root.PersistentPreRunE
	root.PersistentPreRunE = func(cmd *cobra.Command, args []string) error {
		a.running = cmd.CommandPath()
		if strings.HasPrefix(cmd.Name(), "__") { // the shell's completion
			a.running = root.Name() + " completion"
		}
		if prev != nil {
			return prev(cmd, args)
		}
		return nil
	}
}

// runningName is the running command as the user typed it ("primalscope
// call"), or "primalscope" before a command is known.
func (a *app) runningName() string {
	if a.running == "" {
		return "primalscope"
	}
	return a.running
}
