package discovery

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/ipc/ipctest"
)

// TestWatchProgress: with Progress, a sweep's targets go out as it finds
// them (Added, not probed yet) and as each is judged (Changed), so an
// answering socket is known live while silent ones are still waited for;
// without it, a sweep's events all follow its end.
func TestWatchProgress(t *testing.T) {
	dir, err := ipctest.TempDir()
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	c, err := ipctest.StartCrowd(dir, 5, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	d := New(Options{Getenv: func(string) string { return "" }, Environ: func() []string { return nil },
		SocketDirs: []string{dir}, NoProc: true, Probe: ProbeOptions{StaleTimeout: 20 * time.Second}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := d.Watch(ctx, WatchOptions{Interval: time.Minute, PollInterval: time.Minute, Progress: true})
	added, live := 0, 0
	guard := time.After(15 * time.Second) // a hang guard: the silent ones take 20 s
	for live < 5 {
		select {
		case e := <-ch:
			switch {
			case e.Kind == Synced:
				t.Fatal("the sweep ended before its answering targets were sent")
			case e.Kind == Added:
				added++
				if e.Target.Probe != nil {
					t.Errorf("%s added already probed", e.Target.Name)
				}
			case e.Kind == Changed && strings.HasPrefix(e.Target.Name, "live"):
				if e.Target.State() == StateLive {
					live++
				}
			case e.Kind == Changed:
				t.Errorf("%s judged %s while its probe waits", e.Target.Name, e.Target.State())
			}
		case <-guard:
			t.Fatalf("%d added, %d live after 15 s", added, live)
		}
	}
	if added != 8 {
		t.Errorf("%d targets added before the live ones were judged, want all 8", added)
	}
	cancel()
	for range ch {
	}
}
