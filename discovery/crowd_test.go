package discovery_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/discovery"
	"github.com/ecoPrimals/primalscope/ipc/ipctest"
)

// crowdLive and crowdSilent make the directory of issue 11: 2,000 sockets,
// 500 of them hung.
const (
	crowdLive   = 1500
	crowdSilent = 500
)

// startCrowd starts the 2,000-socket directory, stopped when the test ends.
func startCrowd(t *testing.T, live, silent int) *ipctest.Crowd {
	t.Helper()
	if testing.Short() {
		t.Skip("load: not in -short")
	}
	dir, err := ipctest.TempDir()
	if err != nil {
		t.Fatal(err)
	}
	c, err := ipctest.StartCrowd(dir, live, silent)
	if err != nil {
		os.RemoveAll(dir)
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Close()
		os.RemoveAll(dir)
	})
	return c
}

// crowdDiscoverer looks only in the crowd's directory, with the default
// prober.
func crowdDiscoverer(c *ipctest.Crowd, probe discovery.ProbeOptions) *discovery.Discoverer {
	return discovery.New(discovery.Options{
		Getenv:     func(string) string { return "" },
		Environ:    func() []string { return nil },
		SocketDirs: []string{c.Dir},
		NoProc:     true,
		Probe:      probe,
	})
}

// crowdVerdict checks one sweep of the crowd: every live socket is live;
// every silent one that is stale had a connection of its own accepted. It
// returns the number of live targets.
func crowdVerdict(t *testing.T, c *ipctest.Crowd, targets []*discovery.Target) int {
	t.Helper()
	byPath := map[string]*discovery.Target{}
	for _, tg := range targets {
		byPath[tg.Endpoint.Path] = tg
	}
	live, bad := 0, 0
	for _, p := range c.Live {
		tg := byPath[p]
		switch {
		case tg == nil:
			bad++
			t.Errorf("%s not listed", p)
		case tg.State() == discovery.StateLive:
			live++
		default:
			bad++
			if bad <= 5 {
				msg := ""
				if tg.Probe != nil {
					msg = tg.Probe.Err
				}
				t.Errorf("live socket %s reported %s (%s)", tg.Name, tg.State(), msg)
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d live sockets not reported live", bad, len(c.Live))
	}
	for _, p := range c.Silent {
		tg := byPath[p]
		if tg == nil {
			t.Errorf("%s not listed", p)
			continue
		}
		switch tg.State() {
		case discovery.StateStale:
			if c.Accepted(p) == 0 {
				t.Errorf("silent %s is stale but was never connected to", tg.Name)
			}
		case discovery.StateLive:
			t.Errorf("silent %s reported live", tg.Name)
		}
	}
	return live
}

// TestCrowd watches a directory of 2,000 sockets, 500 of them hung (they
// accept and read but never answer), with the default prober, as the TUI
// does, then sweeps it once more with a caller that gives up at once:
//
//   - the first sweep finds every one of the 1,500 answering sockets live
//     and every hung one stale after a probe of its own; it takes about
//     (hung sockets / MaxOpen + 1) stale timeouts, not 500 of them in
//     series (the bound asserted is generous: a loaded 2-core machine);
//   - every later sweep counts 1,500 live, and no answering target ever
//     changes state;
//   - a sweep cut short by its caller leaves the targets it did not get
//     to judge with their last judged health (all 1,500 stay live).
func TestCrowd(t *testing.T) {
	c := startCrowd(t, crowdLive, crowdSilent)
	d := crowdDiscoverer(c, discovery.ProbeOptions{})
	opts := d.Prober().Options()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	// The hung sockets, once judged, wait for their own retry time.
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	events := d.Watch(wctx, discovery.WatchOptions{Interval: 50 * time.Millisecond, MaxInterval: 50 * time.Millisecond,
		RetryBase: time.Minute, PollInterval: time.Hour})
	known := map[string]*discovery.Target{}
	synced := 0
	for ev := range events {
		switch ev.Kind {
		case discovery.Added, discovery.Changed:
			known[ev.Target.ID] = ev.Target
			if synced > 0 && strings.HasPrefix(ev.Target.Name, "live") && ev.Target.State() != discovery.StateLive {
				t.Errorf("watch: %s %s: %s", ev.Kind, ev.Target.Name, ev.Target.State())
			}
		case discovery.Removed:
			delete(known, ev.Target.ID)
			t.Errorf("watch: %s removed", ev.Target.Name)
		case discovery.Synced:
			synced++
			s := ev.Sweep
			t.Logf("watch sweep %d (%s): %d live of %d, took %v", synced, s.Reason, s.Live, s.Targets, s.Took.Round(time.Millisecond))
			if s.Live != crowdLive {
				t.Errorf("watch sweep %d: %d live, want %d", synced, s.Live, crowdLive)
			}
			if synced == 1 {
				for _, e := range s.Errors {
					t.Errorf("source error: %s: %s", e.Source, e.Err)
				}
				var ts []*discovery.Target
				stale := 0
				for _, tg := range known {
					ts = append(ts, tg)
					if strings.HasPrefix(tg.Name, "mute") && tg.State() == discovery.StateStale {
						stale++
					}
				}
				crowdVerdict(t, c, ts)
				if stale != crowdSilent {
					t.Errorf("first sweep: %d of %d hung sockets stale", stale, crowdSilent)
				}
				// Hung sockets are waited for MaxOpen at a time, and
				// doubtful verdicts looked at again (twice at most); the
				// answering ones take what the machine gives.
				rounds := (1 + maxLooks) * (crowdSilent/opts.MaxOpen + 1)
				bound := time.Duration(rounds)*(opts.StaleTimeout+time.Second) + 30*time.Second
				if s.Took > bound {
					t.Errorf("the first sweep took %v; hung sockets are waited for in parallel (bound %v)", s.Took, bound)
				}
			}
			if synced == 3 {
				stop()
			}
		}
	}
	if synced < 3 {
		t.Fatalf("watch: %d sweeps", synced)
	}

	// A sweep whose caller gives up almost at once.
	cut, cancelCut := context.WithTimeout(ctx, 20*time.Millisecond)
	snap, err := d.Sweep(cut, nil)
	cancelCut()
	t.Logf("cut sweep: %v after %v", err, snap.Took.Round(time.Millisecond))
	if err == nil {
		t.Log("the cut sweep ended in time (a fast machine): nothing to check")
	} else if live := crowdVerdict(t, c, snap.Targets); live != crowdLive {
		t.Errorf("cut sweep: %d live, want %d: a sweep that did not reach a target changed it", live, crowdLive)
	}
}

// maxLooks is how many more times a sweep may probe a doubtful stale verdict.
const maxLooks = 2
