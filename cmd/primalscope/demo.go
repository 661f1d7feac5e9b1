package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/ecoPrimals/primalscope/internal/demo"
	"github.com/ecoPrimals/primalscope/ipc"
)

func (a *app) demoCmd() *cobra.Command {
	var (
		serve bool
		dir   string
		tick  time.Duration
	)
	cmd := &cobra.Command{
		Use:   "demo [--serve]",
		Short: "Explore a built-in simulated ecosystem (no setup needed)",
		Long: `Start a simulated primal ecosystem in a fresh temporary socket directory:
a BearDog-like crypto primal (plus a family-scoped socket that demands BTSP),
a Songbird-like registry, a rhizoCrypt-like level-3 primal behind dag.sock,
a Squirrel-like primal behind ai.sock, a NestGate-like storage primal, a lean
NDJSON daemon, a stale socket and a primal that comes and goes. They emit
heartbeats and events.

With --serve only the simulation runs: the socket directory's path is printed
alone on the first line of standard output, a description of what is served
goes to standard error, and it serves until interrupted, then removes the
directory.`,
		Args: argsFor(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			eco, err := demo.Start(ctx, demo.Options{Dir: dir, Tick: tick})
			if err != nil {
				return err
			}
			defer eco.Close()
			defer a.forgetDemo(eco) // before Close: it lists the sockets
			if serve {
				fmt.Fprintln(a.io.out, eco.Dir)
				eco.WriteOverview(a.io.err)
				<-ctx.Done()
				return nil
			}
			return a.runDemoUI(ctx, eco)
		},
	}
	cmd.Flags().BoolVar(&serve, "serve", false, "run only the simulation and print its socket directory")
	cmd.Flags().StringVar(&dir, "dir", "", "socket directory to use instead of a fresh temporary one")
	cmd.Flags().DurationVar(&tick, "tick", time.Second, "heartbeat period")
	return cmd
}

// runDemoUI shows the demo ecosystem to a person: the TUI over its socket
// directory.
func (a *app) runDemoUI(ctx context.Context, eco *demo.Ecosystem) error {
	a.useDemo(eco)
	if sec, err := a.security(); err == nil {
		sec.Memory.Ephemeral(eco.Dir) // its sockets go with it: nothing to remember
	}
	return a.runTUI(ctx, true)
}

// useDemo makes the run about the demo ecosystem: its socket directory,
// its targets only, its family, and its own seed for its own family.
func (a *app) useDemo(eco *demo.Ecosystem) {
	a.socketDirs = []string{eco.Dir}
	// Its own ecosystem only: not other processes' buses, nor the
	// environment's or the config file's targets.
	a.scope = eco.Confine
	// The demo's own family seed, always, for its own family: its BTSP
	// socket is reachable whatever seed the shell holds (FAMILY_SEED is
	// the user's family's, and is never handed to the demo's sockets).
	a.demoSeed = &familySeed{family: eco.Family, file: eco.SeedFile, userFamily: a.familyID()}
	if a.family == "" {
		a.family = eco.Family
	}
}

// forgetDemo removes what is remembered about the demo's sockets, by this
// process or by others that called them (demo --serve): they go with the
// demo, so their records would only take room. The memory is written when
// the command ends (closeMemory).
func (a *app) forgetDemo(eco *demo.Ecosystem) {
	sec, err := a.security()
	if err != nil {
		return
	}
	ents, _ := os.ReadDir(eco.Dir)
	for _, e := range ents {
		sec.Memory.Forget(ipc.Endpoint{Transport: ipc.Unix, Path: filepath.Join(eco.Dir, e.Name())})
	}
	sec.Memory.ForgetUnder(eco.Dir)
}
