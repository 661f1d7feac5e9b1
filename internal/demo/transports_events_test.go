package demo

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/ipc"
	"github.com/ecoPrimals/primalscope/ipc/sse"
)

func TestHolonAndBiomeOSParts(t *testing.T) {
	e, err := Start(context.Background(), Options{Tick: 20 * time.Millisecond, Churn: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	// The holon is registered under its ws:// endpoint and speaks first.
	var found bool
	for _, r := range e.Registry.List() {
		if r.PrimalID == HolonID && strings.HasPrefix(r.Endpoint, "ws://") {
			found = true
		}
	}
	if !found {
		t.Fatal("the holon is not registered with a ws:// endpoint")
	}
	ep, err := ipc.ParseEndpoint(e.HolonURL())
	if err != nil {
		t.Fatal(err)
	}
	c, err := ipc.Dial(ctx, ep, ipc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	select {
	case m := <-c.Incoming():
		if m.Kind != ipc.KindRequest || m.Method != "client.v1.Client/Hello" {
			t.Fatalf("first message %s", m.Raw)
		}
	case <-ctx.Done():
		t.Fatal("no Hello")
	}
	resp, err := c.Call(ctx, "greeting.v1.Greeting/SayHello", map[string]string{"name": "ada"})
	if err != nil || !strings.Contains(string(resp.Result), "hello, ada") {
		t.Fatalf("%v %v", resp, err)
	}

	// The biomeOS API streams a heartbeat and a typed event every tick.
	st, err := sse.OpenUnix(ctx, e.BiomeOSAPIPath(), sse.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	types := map[string]bool{}
	for len(types) < 3 {
		ev, err := st.Next()
		if err != nil {
			t.Fatal(err)
		}
		types[ev.Type] = true
	}
	if !types["heartbeat"] {
		t.Errorf("no heartbeat among %v", types)
	}
}
