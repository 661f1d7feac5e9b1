package discovery

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/ipc/ipctest"
)

// TestSweepUntilJudged: a one-shot sweep does not hold every verdict for
// one silent socket's whole probe timeout. With a probe timeout far longer
// than the test may run, the sweep ends once every other target has been
// judged, the silent socket left unjudged (unknown, cut off, saying how
// long it was waited for and what the probe timeout is: never stale, which
// only its own deadline passing may say), while the answering ones are
// judged as usual; a plain Sweep in the same time judges nothing of the
// silent one.
func TestSweepUntilJudged(t *testing.T) {
	dir := tempDir(t)
	serve(t, dir, "quiet.sock", ipctest.Config{Behavior: ipctest.Behavior{Silent: true}})
	for _, n := range []string{"alpha", "beta", "gamma"} {
		serve(t, dir, n+".sock", primal(n, false).Config())
	}
	d := New(Options{Getenv: func(string) string { return "" }, SocketDirs: []string{dir}, NoProc: true, NoRegistries: true,
		Probe: ProbeOptions{StaleTimeout: time.Hour}})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	snap, err := d.SweepUntilJudged(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Targets) != 4 {
		t.Fatalf("%d targets", len(snap.Targets))
	}
	for _, tg := range snap.Targets {
		p := tg.Probe
		switch {
		case p == nil:
			t.Errorf("%s: not probed", tg.Name)
		case tg.Name == "quiet":
			if p.State != StateUnknown || !p.CutOff || !p.Incomplete || !strings.Contains(p.Err, "cut off") || !strings.Contains(p.Err, "1h0m0s") {
				t.Errorf("quiet: %+v", p)
			}
		case p.State != StateLive || p.CutOff:
			t.Errorf("%s: %s %s", tg.Name, p.State, p.Err)
		}
	}
	// A plain sweep waits for the silent socket's own deadline: cut by
	// its caller, it does not judge it.
	short, stop := context.WithTimeout(ctx, 2*time.Second)
	defer stop()
	snap, _ = New(Options{Getenv: func(string) string { return "" }, SocketDirs: []string{dir}, NoProc: true, NoRegistries: true,
		Probe: ProbeOptions{StaleTimeout: time.Hour}}).Sweep(short, nil)
	for _, tg := range snap.Targets {
		if tg.Name == "quiet" && tg.Probe != nil && (tg.Probe.CutOff || tg.Probe.State == StateStale) {
			t.Errorf("a plain sweep cut the silent socket off: %+v", tg.Probe)
		}
	}
}
