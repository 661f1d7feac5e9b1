package events

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// heldSource emits one event and runs until it is stopped, or fails at
// once with err.
type heldSource struct {
	name    string
	err     error
	stopped chan struct{}
}

func (h *heldSource) Name() string { return h.name }

func (h *heldSource) Run(ctx context.Context, emit Emit) error {
	if h.err != nil {
		return h.err
	}
	emit(Event{Source: h.name, Kind: KindEvent, Name: "hello"})
	<-ctx.Done()
	close(h.stopped)
	return nil
}

func held(name string) *heldSource { return &heldSource{name: name, stopped: make(chan struct{})} }

// collector gathers what a group emits.
type collector struct {
	mu  sync.Mutex
	evs []Event
}

func (c *collector) emit(e Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.evs = append(c.evs, e)
}

func (c *collector) has(kind, source string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.evs {
		if e.Kind == kind && e.Source == source {
			return true
		}
	}
	return false
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after 5 s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestGroupBoundStopEnded: a group runs at most Max sources; a stopped
// source frees its place and ends; a source that fails by itself is said
// in a note and reported to Ended, and its place is free; Close stops the
// rest and waits for them.
func TestGroupBoundStopEnded(t *testing.T) {
	var c collector
	var mu sync.Mutex
	ended := map[string]error{}
	g := NewGroup(context.Background(), c.emit, GroupOptions{Max: 3, Ended: func(key string, err error) {
		mu.Lock()
		ended[key] = err
		mu.Unlock()
	}})
	srcs := map[string]*heldSource{}
	for i := 0; i < 4; i++ {
		k := fmt.Sprint("k", i)
		srcs[k] = held(k)
		if ok := g.Start(k, srcs[k]); ok != (i < 3) {
			t.Fatalf("start %s: %v with %d running, bound 3", k, ok, g.Len())
		}
	}
	if g.Start("k0", held("again")) {
		t.Fatal("a key that runs started twice")
	}
	waitFor(t, "the three say hello", func() bool { return c.has(KindEvent, "k0") && c.has(KindEvent, "k1") && c.has(KindEvent, "k2") })

	g.Stop("k1")
	select {
	case <-srcs["k1"].stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("a stopped source did not end")
	}
	if g.Running("k1") || !g.Start("k3", srcs["k3"]) {
		t.Fatal("a stopped source's place is not free")
	}
	mu.Lock()
	if _, ok := ended["k1"]; ok {
		t.Error("a stopped source was reported as ended by itself")
	}
	mu.Unlock()

	g.Stop("k2")
	<-srcs["k2"].stopped
	bad := &heldSource{name: "bad", err: errors.New("no seed")}
	if !g.Start("bad", bad) {
		t.Fatal("the failing source did not start")
	}
	waitFor(t, "the failure reported", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return ended["bad"] != nil
	})
	if !c.has(KindNote, "bad") || g.Running("bad") {
		t.Fatalf("a failed source: note %v, still running %v", c.has(KindNote, "bad"), g.Running("bad"))
	}
	if g.Source("k0") != srcs["k0"] || g.Source("bad") != nil {
		t.Fatal("Source does not name the running sources")
	}

	g.Close()
	for _, k := range []string{"k0", "k3"} {
		select {
		case <-srcs[k].stopped:
		default:
			t.Fatalf("%s still runs after Close", k)
		}
	}
	if g.Start("late", held("late")) || g.Len() != 0 {
		t.Fatal("a closed group started a source")
	}
}
