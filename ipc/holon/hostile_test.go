package holon_test

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/ipc"
	"github.com/ecoPrimals/primalscope/ipc/holon"
	"github.com/ecoPrimals/primalscope/ipc/ipctest"
)

// bound is what the timed checks below allow: what is promised (the call's
// timeout, holon.DefaultCloseGrace for a close) plus room for a loaded
// 2-core machine under -race. Measured figures are logged.
const bound = time.Second

func hostile(t *testing.T, cfg ipctest.HostileWSConfig) *ipctest.HostileWS {
	t.Helper()
	s, err := ipctest.ListenHostileWS(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func dialHostile(t *testing.T, s *ipctest.HostileWS) *ipc.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := ipc.Dial(ctx, ipc.Endpoint{Transport: ipc.WS, URL: s.URL}, ipc.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// timedClose closes c and fails when it takes longer than want + bound.
func timedClose(t *testing.T, c *ipc.Conn, want time.Duration) {
	t.Helper()
	start := time.Now()
	c.Close()
	took := time.Since(start)
	t.Logf("close took %s", took.Round(time.Millisecond))
	if took > want+bound {
		t.Errorf("Close took %s (promised %s)", took, want)
	}
}

// TestCloseDoesNotWaitForAPeerThatNeverCloses: the peer answers, then never
// sends its close frame: Close gives it DefaultCloseGrace, then drops it.
func TestCloseDoesNotWaitForAPeerThatNeverCloses(t *testing.T) {
	t.Parallel()
	s := hostile(t, ipctest.HostileWSConfig{Mode: ipctest.WSAnswer, NeverClose: true})
	c := dialHostile(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := c.Call(ctx, "x", nil); err != nil {
		t.Fatal(err)
	}
	timedClose(t, c, holon.DefaultCloseGrace)
	eventually(t, "the close frame to reach the peer", func() bool { return s.CloseFrames() == 1 })
}

// TestHostileFramesEndAtTheDeadline: floods and a frame that never ends
// cannot hold a call past its deadline, and Close after it is immediate.
func TestHostileFramesEndAtTheDeadline(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  ipctest.HostileWSConfig
	}{
		{"fragment-flood", ipctest.HostileWSConfig{Mode: ipctest.WSFragmentFlood, NeverClose: true}},
		{"ping-flood", ipctest.HostileWSConfig{Mode: ipctest.WSPingFlood, NeverClose: true}},
		{"huge-header-stall", ipctest.HostileWSConfig{Mode: ipctest.WSHugeHeaderStall, NeverClose: true}},
		{"silent", ipctest.HostileWSConfig{Mode: ipctest.WSSilent, NeverClose: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := hostile(t, tc.cfg)
			c := dialHostile(t, s)
			const timeout = 300 * time.Millisecond
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			start := time.Now()
			_, err := c.Call(ctx, "x", nil)
			took := time.Since(start)
			var te *ipc.TimeoutError
			if !errors.As(err, &te) {
				t.Fatalf("want a timeout, got %v", err)
			}
			t.Logf("call ended after %s", took.Round(time.Millisecond))
			if took > timeout+bound {
				t.Errorf("the call took %s with a %s deadline", took, timeout)
			}
			timedClose(t, c, 0)
		})
	}
}

// TestOversizedMessagesFailFast: a frame header announcing 2^62 bytes, or
// fragments that add up past the 1 MiB limit, end the connection as soon as
// the limit is passed (the memory held stays near the limit), and Close
// does not then wait for the rest.
func TestOversizedMessagesFailFast(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  ipctest.HostileWSConfig
	}{
		{"huge-header", ipctest.HostileWSConfig{Mode: ipctest.WSHugeHeader, NeverClose: true}},
		{"growing-fragments", ipctest.HostileWSConfig{Mode: ipctest.WSFragmentFlood, FragmentSize: 4096, NeverClose: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := hostile(t, tc.cfg)
			c := dialHostile(t, s)
			var before runtime.MemStats
			runtime.ReadMemStats(&before)
			const deadline = 30 * time.Second
			ctx, cancel := context.WithTimeout(context.Background(), deadline)
			defer cancel()
			start := time.Now()
			_, err := c.Call(ctx, "x", nil)
			took := time.Since(start)
			var tooBig *holon.MessageTooBigError
			if !errors.As(err, &tooBig) || tooBig.Limit != holon.DefaultMaxMessage {
				t.Fatalf("want a message-too-big error, got %v", err)
			}
			t.Logf("failed after %s", took.Round(time.Millisecond))
			// Reading 1 MiB takes a while under -race; the point is that
			// the error comes when the limit is passed, not at the deadline.
			if took > deadline/3 {
				t.Errorf("took %s to see the limit passed", took)
			}
			var after runtime.MemStats
			runtime.ReadMemStats(&after)
			if grew := int64(after.TotalAlloc - before.TotalAlloc); grew > 64<<20 {
				t.Errorf("allocated %d MiB for a 1 MiB limit", grew>>20)
			}
			timedClose(t, c, 0)
		})
	}
}

// TestStalledUpgradeEndsWithTheDialContext: a server that accepts the TCP
// connection and never answers the upgrade holds Dial no longer than ctx.
func TestStalledUpgradeEndsWithTheDialContext(t *testing.T) {
	t.Parallel()
	s := hostile(t, ipctest.HostileWSConfig{Mode: ipctest.WSStallUpgrade})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := holon.Dial(ctx, s.URL, holon.Options{})
	if err == nil {
		t.Fatal("dial succeeded against a server that never upgrades")
	}
	if took := time.Since(start); took > 300*time.Millisecond+bound {
		t.Errorf("dial took %s", took)
	}
}

// TestCloseContextWithoutTimeLeftDropsAtOnce: a caller whose deadline has
// passed gives the peer no grace.
func TestCloseContextWithoutTimeLeftDropsAtOnce(t *testing.T) {
	t.Parallel()
	s := hostile(t, ipctest.HostileWSConfig{Mode: ipctest.WSAnswer, NeverClose: true})
	f, err := holon.Dial(context.Background(), s.URL, holon.Options{CloseGrace: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	f.CloseContext(ctx)
	if took := time.Since(start); took > bound {
		t.Errorf("CloseContext took %s", took)
	}
	if _, err := f.ReadFrame(); err == nil {
		t.Error("ReadFrame after close returned a frame")
	}
}
