package events_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/internal/events"
	"github.com/ecoPrimals/primalscope/ipc"
	"github.com/ecoPrimals/primalscope/ipc/holon"
	"github.com/ecoPrimals/primalscope/ipc/ipctest"
)

type burst struct{ n int }

func (b burst) Name() string { return "burst" }
func (b burst) Run(ctx context.Context, emit events.Emit) error {
	for i := 0; i < b.n; i++ {
		emit(events.Event{Source: "burst", Kind: events.KindNotification, Name: "n", Payload: json.RawMessage(`{}`)})
	}
	return errors.New("burst over")
}

func TestStreamDropsOldestAndSaysSo(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := events.Merge(ctx, []events.Source{burst{n: 100}}, events.Options{Buffer: 10})
	s.Wait()
	ev, err := s.Next(ctx)
	if err != nil || ev.Kind != events.KindDropped {
		t.Fatalf("first: %+v %v", ev, err)
	}
	var d struct{ Dropped, Total int }
	_ = json.Unmarshal(ev.Payload, &d)
	if d.Dropped != 91 || s.Dropped() != 91 {
		t.Fatalf("dropped %+v (counter %d)", d, s.Dropped())
	}
	n := 0
	var last events.Event
	for {
		ev, err := s.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		n++
		last = ev
	}
	if n != 10 || last.Kind != events.KindNote || !strings.Contains(string(last.Payload), "burst over") {
		t.Fatalf("got %d events, last %+v", n, last)
	}
}

func shortDir(t *testing.T) string {
	d, err := os.MkdirTemp("", "ps")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// collect reads events until want returns true for one, or 5 s pass.
func collect(t *testing.T, ctx context.Context, s *events.Stream, want func(events.Event) bool) []events.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var got []events.Event
	for {
		ev, err := s.Next(ctx)
		if err != nil {
			t.Fatalf("waiting: %v; got %s", err, dump(got))
		}
		got = append(got, ev)
		if want(ev) {
			return got
		}
	}
}

func dump(evs []events.Event) string {
	var b strings.Builder
	for _, ev := range evs {
		b.WriteString(ev.Source + " " + ev.Kind + " " + ev.Name + " " + string(ev.Payload) + "\n")
	}
	return b.String()
}

func is(kind, name string) func(events.Event) bool {
	return func(ev events.Event) bool { return ev.Kind == kind && ev.Name == name }
}

func fast() events.Config {
	return events.Config{Interval: 20 * time.Millisecond, StaleAfter: time.Second, BackoffMin: 5 * time.Millisecond, BackoffMax: 20 * time.Millisecond}
}

func TestTargetSourceNotificationsRequestsLiveness(t *testing.T) {
	dir := shortDir(t)
	path := filepath.Join(dir, "rhizocrypt.sock")
	cfg := ipctest.Config{Methods: map[string]ipctest.HandlerFunc{
		"health.liveness": func(context.Context, json.RawMessage) (any, error) { return map[string]string{"status": "alive"}, nil },
	}}
	srv, err := ipctest.Listen(path, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	spec := events.SpecForEndpoint("rhizocrypt", ipc.Endpoint{Transport: ipc.Unix, Path: path})
	s := events.Merge(ctx, []events.Source{fast().Source(spec)}, events.Options{})
	collect(t, ctx, s, is(events.KindLiveness, events.StateAlive))
	for len(srv.Conns()) == 0 {
		time.Sleep(time.Millisecond)
	}
	srv.Notify("dag.event.appended", map[string]int{"seq": 1})
	got := collect(t, ctx, s, is(events.KindNotification, "dag.event.appended"))
	if p := string(got[len(got)-1].Payload); p != `{"seq":1}` {
		t.Errorf("payload %s", p)
	}
	_ = srv.Conns()[0].Event("NewMail", map[string]int{"unread": 2})
	collect(t, ctx, s, is(events.KindEvent, "NewMail"))
	go func() {
		actx, acancel := context.WithTimeout(ctx, 5*time.Second)
		defer acancel()
		_, _ = srv.Conns()[0].Ask(actx, "server.ask", map[string]string{"q": "?"})
	}()
	got = collect(t, ctx, s, is(events.KindRequest, "server.ask"))
	if p := string(got[len(got)-1].Payload); !strings.Contains(p, `"answered_error"`) || !strings.Contains(p, `"s1"`) {
		t.Errorf("request payload %s", p)
	}

	// The target goes away: gone (was alive); it comes back: alive (was gone).
	srv.Close()
	got = collect(t, ctx, s, is(events.KindLiveness, events.StateGone))
	if p := string(got[len(got)-1].Payload); !strings.Contains(p, `"was":"alive"`) {
		t.Errorf("gone payload %s", p)
	}
	srv2, err := ipctest.Listen(path, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer srv2.Close()
	got = collect(t, ctx, s, is(events.KindLiveness, events.StateAlive))
	if p := string(got[len(got)-1].Payload); !strings.Contains(p, `"was":"gone"`) || !strings.Contains(p, "latency_ms") {
		t.Errorf("alive payload %s", p)
	}
	cancel()
	s.Wait()
}

func TestTargetSourceStale(t *testing.T) {
	dir := shortDir(t)
	path := filepath.Join(dir, "slow.sock")
	srv, err := ipctest.Listen(path, ipctest.Config{Behavior: ipctest.Behavior{Silent: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := fast()
	c.StaleAfter = 30 * time.Millisecond
	s := events.Merge(ctx, []events.Source{c.Source(events.Spec{Name: "slow", Endpoint: ipc.Endpoint{Transport: ipc.Unix, Path: path}})}, events.Options{})
	got := collect(t, ctx, s, is(events.KindLiveness, events.StateStale))
	if p := string(got[len(got)-1].Payload); !strings.Contains(p, "no answer to health.liveness") {
		t.Errorf("stale payload %s", p)
	}
	cancel()
	s.Wait()
}

func TestRegistryWatch(t *testing.T) {
	dir := shortDir(t)
	path := filepath.Join(dir, "songbird.sock")
	sb := ipctest.NewSongbird()
	sb.Register(ipctest.Service{PrimalID: "old", Capabilities: []string{"x"}, Endpoint: "/tmp/old.sock"})
	srv, err := ipctest.Listen(path, sb.Config())
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	spec := events.SpecForEndpoint("songbird", ipc.Endpoint{Transport: ipc.Unix, Path: path})
	if !spec.Registry {
		t.Fatal("songbird.sock is not taken for a registry")
	}
	s := events.Merge(ctx, []events.Source{fast().Source(spec)}, events.Options{})
	collect(t, ctx, s, is(events.KindLiveness, events.StateAlive))
	time.Sleep(50 * time.Millisecond) // let the first ipc.watch learn the revision
	sb.Register(ipctest.Service{PrimalID: "fresh", Capabilities: []string{"y"}, Endpoint: "/tmp/fresh.sock"})
	got := collect(t, ctx, s, is(events.KindRegistry, "registered"))
	last := got[len(got)-1]
	if !strings.Contains(string(last.Payload), `"fresh"`) {
		t.Errorf("payload %s", last.Payload)
	}
	for _, ev := range got {
		if strings.Contains(string(ev.Payload), `"old"`) {
			t.Errorf("history replayed: %s", ev.Payload)
		}
	}
	cancel()
	s.Wait()
}

func TestSSESource(t *testing.T) {
	dir := shortDir(t)
	path := filepath.Join(dir, "biomeos-api-fam.sock")
	b, err := ipctest.ListenBiomeOS(path)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	spec := events.SpecForEndpoint("biomeos-api", ipc.Endpoint{Transport: ipc.Unix, Path: path})
	if !spec.BiomeOSAPI {
		t.Fatal("not taken for the biomeOS API")
	}
	s := events.Merge(ctx, []events.Source{fast().Source(spec)}, events.Options{})
	for b.Subscribers() == 0 {
		time.Sleep(time.Millisecond)
	}
	_ = b.Heartbeat(3, 2, []string{"fam"})
	got := collect(t, ctx, s, is(events.KindSSE, "heartbeat"))
	if p := string(got[len(got)-1].Payload); !strings.Contains(p, `"healthy_count":2`) {
		t.Errorf("payload %s", p)
	}
	cancel()
	s.Wait()
}

func TestHolonTarget(t *testing.T) {
	srv, err := ipctest.ListenHolon("127.0.0.1:0", ipctest.HolonConfig{SpeakFirst: true, Heartbeat: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := fast()
	c.Holon = holon.SessionOptions{HeartbeatInterval: -1, BackoffMin: 5 * time.Millisecond, BackoffMax: 20 * time.Millisecond}
	ep, _ := ipc.ParseEndpoint(srv.URL)
	s := events.Merge(ctx, []events.Source{c.Source(events.SpecForEndpoint("holon", ep))}, events.Options{})
	got := collect(t, ctx, s, is(events.KindRequest, "client.v1.Client/Hello"))
	if p := string(got[len(got)-1].Payload); !strings.Contains(p, `"answered":{"name":"primalscope"`) {
		t.Errorf("hello payload %s", p)
	}
	collect(t, ctx, s, is(events.KindRequest, "rpc.heartbeat"))
	collect(t, ctx, s, is(events.KindLiveness, events.StateAlive))
	for srv.HelloAnswered() != 1 {
		time.Sleep(time.Millisecond)
	}
	// A drop is survived by the session: notes say so, liveness goes on.
	srv.Drop()
	collect(t, ctx, s, func(ev events.Event) bool {
		return ev.Kind == events.KindNote && strings.Contains(string(ev.Payload), "reconnected")
	})
	cancel()
	s.Wait()
}

// TestReplyGoesToTheConnectionThatAsked: the peer asks (id "s1") on its
// first connection, which then ends; the source reconnects and the peer
// asks again with the same id on the second. The first request can no
// longer be answered: ReplyOn with its connection fails, and Reply by the
// id alone cannot tell the two apart and fails too; neither sends anything
// to the second connection, which gets exactly the answer given for it.
func TestReplyGoesToTheConnectionThatAsked(t *testing.T) {
	dir := shortDir(t)
	path := filepath.Join(dir, "asker.sock")
	srv, err := ipctest.Listen(path, ipctest.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ts := &events.TargetSource{
		Source: "asker", LivenessMethod: "-", BackoffMin: 5 * time.Millisecond, BackoffMax: 20 * time.Millisecond,
		Answer: func(*ipc.Message) (json.RawMessage, *ipc.RPCError) { return nil, nil }, // the user answers
		Dial: func(ctx context.Context, trace func(ipc.TraceEvent)) (*ipc.Conn, error) {
			return ipc.Dial(ctx, ipc.Endpoint{Transport: ipc.Unix, Path: path}, ipc.Options{Trace: trace, IncomingBuffer: 16})
		},
	}
	s := events.Merge(ctx, []events.Source{ts}, events.Options{})
	defer func() {
		cancel()
		s.Wait()
	}()
	conn := func(srv *ipctest.Server) *ipctest.ServerConn {
		t.Helper()
		for ctx.Err() == nil {
			if cs := srv.Conns(); len(cs) > 0 {
				return cs[0]
			}
			time.Sleep(2 * time.Millisecond)
		}
		t.Fatal("the source did not connect")
		return nil
	}
	type answer struct {
		m   *ipc.Message
		err error
	}
	ask := func(sc *ipctest.ServerConn) (<-chan answer, events.Event) {
		t.Helper()
		ch := make(chan answer, 1)
		go func() {
			m, err := sc.Ask(ctx, "server.ask", map[string]string{"q": "?"})
			ch <- answer{m, err}
		}()
		got := collect(t, ctx, s, is(events.KindRequest, "server.ask"))
		return ch, got[len(got)-1]
	}
	idOf := func(ev events.Event) json.RawMessage {
		var p struct {
			ID json.RawMessage `json:"id"`
		}
		if err := json.Unmarshal(ev.Payload, &p); err != nil {
			t.Fatal(err)
		}
		return p.ID
	}

	_, ev1 := ask(conn(srv))
	srv.Close() // the first connection ends
	srv2, err := ipctest.Listen(path, ipctest.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv2.Close()
	a2, ev2 := ask(conn(srv2))
	id1, id2 := idOf(ev1), idOf(ev2)
	if string(id1) != string(id2) || ev1.Conn == 0 || ev2.Conn == 0 || ev1.Conn == ev2.Conn {
		t.Fatalf("ids %s and %s on connections %d and %d", id1, id2, ev1.Conn, ev2.Conn)
	}
	if err := ts.ReplyOn(ctx, ev1.Conn, id1, json.RawMessage(`"for the first"`), nil); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("ReplyOn to the closed connection: %v", err)
	}
	if err := ts.Reply(ctx, id1, json.RawMessage(`"for the first"`), nil); err == nil {
		t.Errorf("Reply by an id both connections used answered someone")
	}
	if err := ts.ReplyOn(ctx, ev2.Conn, id2, json.RawMessage(`"for the second"`), nil); err != nil {
		t.Fatalf("ReplyOn to the connection that asked: %v", err)
	}
	select {
	case a := <-a2:
		if a.err != nil || a.m == nil || string(a.m.Result) != `"for the second"` {
			t.Fatalf("the second connection got %+v", a)
		}
	case <-ctx.Done():
		t.Fatal("the second connection got no answer")
	}
}

// TestFromMessagePayload: a notification the connection decoded (and so
// validated) keeps its params as they came; one made any other way is
// still checked, and params that are not JSON become a JSON string.
func TestFromMessagePayload(t *testing.T) {
	m, err := ipc.DecodeMessage([]byte(`{"jsonrpc":"2.0","method":"tick","params":{"seq":1, "v":[true]}}`))
	if err != nil || !m.JSONChecked {
		t.Fatalf("decode: %v (checked %v)", err, m.JSONChecked)
	}
	if ev := events.FromMessage("p", m); string(ev.Payload) != `{"seq":1, "v":[true]}` || ev.Name != "tick" {
		t.Fatalf("decoded notification: %s %s", ev.Name, ev.Payload)
	}
	hand := &ipc.Message{Kind: ipc.KindNotification, Method: "tick", Params: []byte(`{"seq":`)}
	if ev := events.FromMessage("p", hand); string(ev.Payload) != `"{\"seq\":"` {
		t.Fatalf("unchecked params that are not JSON: payload %s, want them as a JSON string", ev.Payload)
	}
	if ev := events.FromMessage("p", &ipc.Message{Kind: ipc.KindEvent, Type: "e", JSONChecked: true}); string(ev.Payload) != "null" {
		t.Fatalf("an event without data: payload %s, want null", ev.Payload)
	}
}
