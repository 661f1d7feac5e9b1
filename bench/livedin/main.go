// Command livedin makes the state a long-time user of primalscope has, for
// whole-process benchmarks (bench/run.sh): see internal/livedin. By default
// the state of issue 23: 16,000 remembered endpoints, 100,000 calls in
// history (100 saved), a journal backlog of 1,000, 200 named targets.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/ecoPrimals/primalscope/internal/livedin"
)

func main() {
	o := livedin.Issue23("", "")
	flag.StringVar(&o.StateHome, "state-home", "", "the $XDG_STATE_HOME to fill (required)")
	flag.StringVar(&o.ConfigHome, "config-home", "", "the $XDG_CONFIG_HOME to write the config file in (none when empty)")
	flag.IntVar(&o.Endpoints, "endpoints", o.Endpoints, "endpoints remembered")
	flag.IntVar(&o.History, "history", o.History, "calls in the history database")
	flag.IntVar(&o.Saved, "saved", o.Saved, "calls saved by name")
	flag.IntVar(&o.Backlog, "backlog", o.Backlog, "calls in the journal, not yet folded")
	flag.IntVar(&o.Targets, "targets", o.Targets, "named targets in the config file")
	topUp := flag.Bool("top-up", false, "only add journal records until the backlog holds -backlog (for hyperfine --prepare)")
	flag.Parse()
	if *topUp {
		if err := livedin.TopUp(o.StateHome, o.Backlog); err != nil {
			fmt.Fprintln(os.Stderr, "livedin:", err)
			os.Exit(1)
		}
		return
	}
	if err := livedin.Build(context.Background(), o); err != nil {
		fmt.Fprintln(os.Stderr, "livedin:", err)
		os.Exit(1)
	}
}
