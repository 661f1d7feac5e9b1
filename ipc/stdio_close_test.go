package ipc_test

import (
	"context"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/ipc"
)

// A stdio peer that answers, then ignores the end of its stdin: Close gives
// it the usual 500 ms to exit before killing it; CloseContext with no time
// left kills it at once, so a command's deadline holds on stdio too.
func TestStdioCloseContextKillsAtOnce(t *testing.T) {
	t.Parallel()
	script := `read line; printf '{"jsonrpc":"2.0","id":1,"result":{}}\n'; exec sleep 30`
	ep := ipc.Endpoint{Transport: ipc.Stdio, Argv: []string{"sh", "-c", script}}
	for _, tc := range []struct {
		name  string
		close func(c *ipc.Conn)
		check func(took time.Duration) bool
	}{
		{"Close waits for the grace", func(c *ipc.Conn) { c.Close() }, func(d time.Duration) bool { return d >= 450*time.Millisecond }},
		{"CloseContext without time left", func(c *ipc.Conn) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			c.CloseContext(ctx)
		}, func(d time.Duration) bool { return d < 450*time.Millisecond }},
	} {
		c, err := ipc.Dial(ctxT(t, 5*time.Second), ep, ipc.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Call(ctxT(t, 5*time.Second), "x", nil); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		tc.close(c)
		took := time.Since(start)
		t.Logf("%s: %s", tc.name, took.Round(time.Millisecond))
		if !tc.check(took) {
			t.Errorf("%s: took %s", tc.name, took)
		}
	}
}
