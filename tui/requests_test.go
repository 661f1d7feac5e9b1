package tui

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/ecoPrimals/primalscope/ipc"
)

// fakeLink is a connection as the requests pane sees it.
type fakeLink struct {
	gen int64
	up  bool
	err error
}

func (f *fakeLink) Link() (int64, bool) { return f.gen, f.up }
func (f *fakeLink) Err() error          { return f.err }

// requestAt is a server request that came at, on link.
func requestAt(at time.Time, source, method string, link *fakeLink) line {
	l := tailLine(at, source, "k-"+source, EvRequest, method, json.RawMessage(`{"v":1}`), json.RawMessage(`"s1"`))
	l.conn = reqConn{c: link, gen: link.gen}
	l.reply = func(context.Context, json.RawMessage, *ipc.RPCError) error { return nil }
	return l
}

// TestServerRequestsAgeAndConnection: each request shows its age and the
// state of the connection it came on; one older than its peer's known
// deadline, or whose connection is gone (closed, or replaced by a
// reconnect), says so, is not counted as waiting, and answering it is
// refused with the reason. One that can still be answered opens the
// composer.
func TestServerRequestsAgeAndConnection(t *testing.T) {
	for _, tc := range []struct {
		name     string
		age      time.Duration
		method   string
		link     *fakeLink
		state    string // on the request's row
		conn     string
		refusal  string // "" when it can be answered
		waitings int
	}{
		{"fresh hello", time.Second, "client.v1.Client/Hello", &fakeLink{up: true}, "waiting", "conn open", "", 1},
		// a go-holons server stops waiting for its Hello after 3 s
		{"stale hello", 10 * time.Second, "client.v1.Client/Hello", &fakeLink{up: true}, "expired", "conn open", "stops waiting for client.v1.Client/Hello after 3s", 0},
		// a request of no known deadline waits while its connection lives
		{"old ask", 2 * time.Hour, "server.ask", &fakeLink{up: true}, "waiting", "conn open", "", 1},
		{"closed", time.Second, "server.ask", &fakeLink{err: errors.New("peer closed the connection")}, "gone", "conn closed", "the connection that asked is closed: peer closed the connection", 0},
		{"reconnected", time.Second, "client.v1.Client/Hello", &fakeLink{up: true}, "gone", "conn replaced", "was replaced", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, _ := testModel(t, goldenConfig("dark"))
			r := requestAt(t0.Add(-tc.age), "holon-greeter", tc.method, tc.link)
			if tc.name == "reconnected" {
				tc.link.gen++ // the session reconnected after the request came
			}
			m.update(feedMsg{items: []any{r}})
			keyMsgs(t, m, "R")
			screen := ansi.Strip(m.render())
			// Its two rows: what it asks, then where it stands.
			row := ""
			lines := strings.Split(screen, "\n")
			for i, l := range lines {
				if strings.Contains(l, "› "+tc.method) && i+1 < len(lines) && strings.Contains(lines[i+1], "holon-") {
					row = l + "\n" + lines[i+1]
				}
			}
			if !strings.Contains(row, tc.state) || !strings.Contains(row, tc.conn) || !strings.Contains(row, age(tc.age)) {
				t.Fatalf("the request's row lacks %q, %q or its age %q:\n%s", tc.state, tc.conn, age(tc.age), screen)
			}
			if got := m.reqs().pending(); got != tc.waitings {
				t.Errorf("%d counted as waiting, want %d", got, tc.waitings)
			}
			keyMsgs(t, m, "a")
			if tc.refusal == "" {
				if m.pc.focus != pComposer || m.comp().reply == nil {
					t.Fatalf("answering did not open the composer in reply mode (status %q)", m.pc.status)
				}
				return
			}
			if m.comp().reply != nil || !m.pc.statusErr || !strings.Contains(m.pc.status, "cannot answer") || !strings.Contains(m.pc.status, tc.refusal) {
				t.Fatalf("answering was not refused with the reason %q: status %q, reply mode %v", tc.refusal, m.pc.status, m.comp().reply != nil)
			}
			if screen := ansi.Strip(m.render()); !strings.Contains(screen, tc.state+": ") {
				t.Errorf("the pane does not say why it cannot be answered:\n%s", screen)
			}
		})
	}
}

// TestReplyRefusedOnceThePeerGaveUp: a request opened in the composer
// while it could be answered is not answered once it no longer can (the
// answer would reach nobody, or the wrong connection).
func TestReplyRefusedOnceThePeerGaveUp(t *testing.T) {
	link := &fakeLink{up: true}
	sent := 0
	r := requestAt(time.Now(), "holon-greeter", "client.v1.Client/Hello", link)
	r.reply = func(context.Context, json.RawMessage, *ipc.RPCError) error { sent++; return nil }
	now := r.Time.Add(time.Second)
	guarded := guardReply(r, func() time.Time { return now })
	if err := guarded(context.Background(), json.RawMessage(`{}`), nil); err != nil || sent != 1 {
		t.Fatalf("within the deadline: %v, sent %d", err, sent)
	}
	now = r.Time.Add(4 * time.Second)
	if err := guarded(context.Background(), json.RawMessage(`{}`), nil); !errors.Is(err, errCannotAnswer) || sent != 1 {
		t.Fatalf("past the deadline: %v, sent %d", err, sent)
	}
	now = r.Time.Add(time.Second)
	link.up, link.err = false, errors.New("EOF")
	if err := guarded(context.Background(), json.RawMessage(`{}`), nil); !errors.Is(err, errCannotAnswer) || sent != 1 {
		t.Fatalf("connection closed: %v, sent %d", err, sent)
	}
}

// TestServerRequestOnClosedConnection: a real peer asks over the TUI's
// listening connection, then drops it: the request says its connection is
// gone and cannot be answered.
func TestServerRequestOnClosedConnection(t *testing.T) {
	s, tg := startPrimal(t)
	cfg := goldenConfig("dark")
	cfg.NoListen = false
	m, _ := testModel(t, cfg)
	run(t, m, m.update(feedMsg{items: added(tg)}))
	deadline := time.Now().Add(5 * time.Second)
	for len(s.Conns()) == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if len(s.Conns()) == 0 {
		t.Fatal("the TUI did not connect to listen")
	}
	sc := s.Conns()[0]
	asked := make(chan struct{})
	actx, acancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer acancel()
	go func() {
		defer close(asked)
		_, _ = sc.Ask(actx, "client.confirm", map[string]any{"question": "sign?"})
	}()
	deadline = time.Now().Add(10 * time.Second)
	for m.reqs().pending() == 0 && time.Now().Before(deadline) {
		drainFeed(t, m, 100*time.Millisecond)
	}
	if m.reqs().pending() != 1 {
		t.Fatal("the request did not reach the requests pane")
	}
	sc.Close()
	acancel() // the peer stops waiting too
	<-asked
	deadline = time.Now().Add(10 * time.Second)
	for m.reqs().pending() != 0 && time.Now().Before(deadline) {
		drainFeed(t, m, 100*time.Millisecond)
	}
	if m.reqs().pending() != 0 {
		t.Fatal("the request still counts as waiting after its connection closed")
	}
	keyMsgs(t, m, "R", "a")
	if m.comp().reply != nil || !strings.Contains(m.pc.status, "the connection that asked is closed") {
		t.Fatalf("answering was not refused: status %q", m.pc.status)
	}
	if screen := ansi.Strip(m.render()); !strings.Contains(screen, "conn closed") {
		t.Errorf("the request does not show its connection closed:\n%s", screen)
	}
}
