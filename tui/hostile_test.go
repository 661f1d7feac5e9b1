package tui

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/ecoPrimals/primalscope/discovery"
	"github.com/ecoPrimals/primalscope/ipc/ipctest"
)

const hostileEvil = "\x1b]52;c;cHduZWQ=\x07\x1b[2J\x1b[H\x1b]0;owned\x07\x9b31m"

func hostileHealthy() ipctest.Config {
	p := &ipctest.Primal{Name: "hostile", Version: "1.0", Domain: "test", Groups: []ipctest.Group{{Type: "test", Methods: []string{"echo"}}}}
	return p.Config()
}

func hostileWith(b ipctest.Behavior) func() ipctest.Config {
	return func() ipctest.Config {
		c := hostileHealthy()
		c.Behavior = b
		return c
	}
}

func hostileFlood(n int) []byte {
	var b bytes.Buffer
	m, _ := json.Marshal("flood.event" + hostileEvil)
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, `{"jsonrpc":"2.0","method":%s,"params":{"seq":%d}}`+"\n", m, i)
	}
	return b.Bytes()
}

func hostileFDs() int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return 0
	}
	return len(ents)
}

// hostileFDList names the open file descriptors (for a leak's report).
func hostileFDList() string {
	ents, _ := os.ReadDir("/proc/self/fd")
	var out []string
	for _, e := range ents {
		l, _ := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		out = append(out, e.Name()+"→"+l)
	}
	return strings.Join(out, " ")
}

// hostileServe serves cfg on a fresh socket for the test; it is closed
// and removed when the test ends (tests close it earlier to count leaks).
func hostileServe(t *testing.T, cfg ipctest.Config) (string, *ipctest.Server) {
	t.Helper()
	dir, err := ipctest.TempDir()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "hostile.sock")
	s, err := ipctest.Listen(path, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return path, s
}

// hostileNoLeak fails t when goroutines or file descriptors outlive the
// test's peers and client (counted before as g0 and fd0), after a grace.
func hostileNoLeak(t *testing.T, g0, fd0 int) {
	t.Helper()
	if g := hostileSettles(runtime.NumGoroutine, g0, 3*time.Second); g > g0 {
		buf := make([]byte, 1<<16)
		buf = buf[:runtime.Stack(buf, true)]
		t.Errorf("goroutine leak: %d before, %d after\n%s", g0, g, buf)
	}
	if n := hostileSettles(hostileFDs, fd0, 3*time.Second); n > fd0 {
		t.Errorf("file descriptor leak: %d before, %d after: %s", fd0, n, hostileFDList())
	}
}

func hostileSettles(f func() int, want int, grace time.Duration) int {
	deadline := time.Now().Add(grace)
	for {
		n := f()
		if n <= want || time.Now().After(deadline) {
			return n
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestHostilePeersTUICall sends a call from the composer to every
// misbehaving peer: the response pane shows the right outcome with a
// message naming the fault, the call ends within the timeout, no control
// sequence from the peer reaches the screen, and closing the TUI's client
// leaves no goroutine or file descriptor behind.
func TestHostilePeersTUICall(t *testing.T) {
	if testing.Short() {
		t.Skip("hostile peers: not in -short")
	}
	// The first network use opens the poller's descriptors; open them
	// before anything is counted.
	if dir, err := ipctest.TempDir(); err == nil {
		if s, err := ipctest.Listen(filepath.Join(dir, "warm.sock"), hostileHealthy()); err == nil {
			s.Close()
		}
		os.RemoveAll(dir)
	}
	for _, tc := range []struct {
		name    string
		cfg     func() ipctest.Config
		method  string
		params  string
		timeout time.Duration
		outcome string
		text    string
	}{
		{"slow", hostileWith(ipctest.Behavior{Delay: 3 * time.Second}), "", "", 0, "timeout", "no answer within"},
		{"silent", hostileWith(ipctest.Behavior{Silent: true}), "", "", 0, "timeout", "no answer within"},
		{"garbage", hostileWith(ipctest.Behavior{Garbage: true}), "", "", 0, "timeout", "not JSON-RPC"},
		{"oversize", hostileWith(ipctest.Behavior{Oversize: 64 << 10}), "", "", 0, "failed", "larger than the 4 KiB limit"},
		{"closemidline", hostileWith(ipctest.Behavior{CloseMidLine: true}), "", "", 0, "failed", "closed in the middle of a message"},
		{"duplicate", hostileWith(ipctest.Behavior{Duplicate: true}), "", "", 0, "ok", `"method": "test.echo"`},
		{"wrongid", hostileWith(ipctest.Behavior{WrongID: true}), "", "", 0, "timeout", "no answer within"},
		{"control", ipctest.ControlSequences, "evil.do", "", 0, "ok", "plain"},
		{"controlerror", func() ipctest.Config {
			c := hostileHealthy()
			c.Methods["test.echo"] = ipctest.Error(-32000, "boom"+hostileEvil)
			return c
		}, "", "", 0, "error", "boom"},
		{"flood", func() ipctest.Config {
			c := hostileHealthy()
			c.Behavior.OnConnect = hostileFlood(5000)
			return c
		}, "", "", 3 * time.Second, "ok", `"method": "test.echo"`},
		{"neverread", hostileWith(ipctest.Behavior{NeverRead: true}), "", `{"blob":"` + strings.Repeat("x", 4<<20) + `"}`, 2 * time.Second, "timeout", "did not read|no answer within"}, // 2 s: preparing 4 MiB under -race on a loaded machine can outlast 250 ms before the dial
	} {
		t.Run(tc.name, func(t *testing.T) {
			// No garbage collection while counting descriptors: a socket
			// left open must be closed by its owner, not by a finalizer.
			defer debug.SetGCPercent(debug.SetGCPercent(-1))
			g0, fd0 := runtime.NumGoroutine(), hostileFDs()
			path, s := hostileServe(t, tc.cfg())
			timeout := tc.timeout
			if timeout == 0 {
				timeout = 250 * time.Millisecond
			}
			cfg := goldenConfig("dark")
			cfg.Timeout, cfg.MaxFrame = timeout, 4096
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			m := newModel(ctx, cfg)
			m.manualFeed = true
			m.update(tea.WindowSizeMsg{Width: 160, Height: 48})
			tg := discovered("unix://"+path, "hostile"+hostileEvil, "unix://"+path, discovery.StateLive)
			m.update(feedMsg{items: added(tg)})
			m.setFocus(pComposer)
			method := tc.method
			if method == "" {
				method = "test.echo"
			}
			m.comp().method.Set(method)
			if tc.params != "" {
				m.comp().params.Set(tc.params)
			}
			start := time.Now()
			cmd := m.update(press("enter")[0])
			if !m.comp().inflight || cmd == nil {
				t.Fatal("the call is not in flight")
			}
			done := make(chan tea.Msg, 1)
			go func() { done <- cmd() }()
			select {
			case msg := <-done:
				m.update(msg)
			case <-time.After(timeout + 5*time.Second):
				t.Fatalf("the call did not end within %v past its %v timeout", 5*time.Second, timeout)
			}
			took := time.Since(start)
			a := m.resp().ans
			if a == nil || a.outcome != tc.outcome {
				t.Fatalf("outcome %+v, want %q", a, tc.outcome)
			}
			for _, p := range []paneID{pResponse, pComposer, pTargets, pTrace} {
				m.setFocus(p)
				out := m.render()
				for _, bad := range []string{"\x1b[2J", "\x1b[H", "\x1b]52", "\x1b]0;", "\x9b", "\x07"} {
					if strings.Contains(out, bad) {
						t.Fatalf("pane %d: raw %q reached the screen", p, bad)
					}
				}
			}
			m.setFocus(pResponse)
			screen := ansi.Strip(m.render())
			said := false
			for _, alt := range strings.Split(tc.text, "|") { // "a|b": either will do (under load the never-read peer has shown both)
				said = said || strings.Contains(screen, alt)
			}
			if !said {
				t.Errorf("the screen does not say %q:\n%s", tc.text, screen)
			}
			t.Logf("%s in %v", a.outcome, took.Round(time.Millisecond))
			if a.outcome == "failed" {
				// The connection broke: wait until the client has seen it
				// end (its "connection closed" note), as a user would.
				wait := time.After(3 * time.Second)
			note:
				for {
					select {
					case <-m.feed.wake:
						for _, e := range feedTaken(m.feed).lines {
							if e.kind == EvNote && e.title == "connection closed" {
								break note
							}
						}
					case <-wait:
						t.Error("no \"connection closed\" note after the connection broke")
						break note
					}
				}
			}
			cancel()
			m.listen.close()
			m.pc.client.close()
			s.Close()
			hostileNoLeak(t, g0, fd0)
		})
	}
}

// TestHostilePeersTUIListen points the TUI's listening path (what a live
// target pushes becomes events, requests and trace frames) at peers that
// push floods, garbage, oversize lines, and control sequences in every
// field: no control sequence reaches any pane, the live panes stay within
// their bounds, the fault is named, and closing leaves no goroutine or
// file descriptor behind.
func TestHostilePeersTUIListen(t *testing.T) {
	if testing.Short() {
		t.Skip("hostile peers: not in -short")
	}
	evilJSON, _ := json.Marshal("x" + hostileEvil)
	for _, tc := range []struct {
		name    string
		push    []byte
		maxLine int64
		want    string // on the events, trace or requests pane (plain text)
	}{
		{"flood", hostileFlood(20000), 0, "flood.event"},
		{"garbage", bytes.Repeat([]byte("\x1b]0;owned\x07 this is not JSON \x1b[2J\n"), 200), 0, `invalid character '\x1b'`},
		{"oversize", append(append([]byte(`{"jsonrpc":"2.0","method":"big","params":"`), bytes.Repeat([]byte("x"), 64<<10)...), `"}`+"\n"...), 4096, "larger than"},
		{"notification", []byte(`{"jsonrpc":"2.0","method":` + string(evilJSON) + `,"params":{"text":` + string(evilJSON) + `}}` + "\n"), 0, `x\x1b]52`},
		{"event", []byte(`{"type":` + string(evilJSON) + `,"data":{"text":` + string(evilJSON) + `}}` + "\n"), 0, `x\x1b]52`},
		{"request", []byte(`{"jsonrpc":"2.0","id":7,"method":` + string(evilJSON) + `,"params":{"text":` + string(evilJSON) + `}}` + "\n"), 0, `x\x1b]52`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer debug.SetGCPercent(debug.SetGCPercent(-1))
			g0, fd0 := runtime.NumGoroutine(), hostileFDs()
			cfg := hostileHealthy()
			cfg.Behavior.OnConnect = tc.push
			path, s := hostileServe(t, cfg)
			mc := goldenConfig("dark")
			mc.NoListen, mc.EventBuffer, mc.TraceBuffer = false, 1000, 500
			if tc.maxLine > 0 {
				mc.MaxFrame = tc.maxLine
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			m := newModel(ctx, mc)
			m.manualFeed = true
			m.update(tea.WindowSizeMsg{Width: 160, Height: 48})
			tg := discovered("unix://"+path, "hostile"+hostileEvil, "unix://"+path, discovery.StateLive)
			run(t, m, m.update(feedMsg{items: added(tg)}))
			if !m.listen.listening[tg.ID] {
				t.Fatal("the TUI does not listen to the live target")
			}
			screenText := func() string {
				var b strings.Builder
				for _, p := range []paneID{pEvents, pTrace, pRequests} {
					m.setFocus(p)
					m.zoom = true
					m.layout()
					out := m.render()
					m.zoom = false
					m.layout()
					for _, bad := range []string{"\x1b[2J", "\x1b[H", "\x1b]52", "\x1b]0;", "\x9b", "\x07"} {
						if strings.Contains(out, bad) {
							t.Fatalf("%s pane: raw %q reached the screen", tabName(p), bad)
						}
					}
					b.WriteString(ansi.Strip(out))
				}
				return b.String()
			}
			deadline := time.Now().Add(5 * time.Second)
			for {
				drainFeed(t, m, 100*time.Millisecond)
				if m.events().ring.Len() > 1000 || m.trace().ring.Len() > 500 {
					t.Fatalf("live panes past their bounds: %d events, %d frames", m.events().ring.Len(), m.trace().ring.Len())
				}
				if strings.Contains(screenText(), tc.want) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("after 5 s the screen does not say %q:\n%s", tc.want, screenText())
				}
			}
			cancel()
			m.listen.close()
			m.pc.client.close()
			s.Close()
			hostileNoLeak(t, g0, fd0)
		})
	}
}
