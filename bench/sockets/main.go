// Command sockets serves a socket directory for whole-process benchmarks:
// live primals, stale sockets that accept and never answer, and dead socket
// files. It prints the directory on its first line and serves until
// interrupted, then removes it.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/ecoPrimals/primalscope/internal/peer"
)

func main() {
	live := flag.Int("live", 100, "live primals")
	stale := flag.Int("stale", 50, "sockets that accept and never answer")
	dead := flag.Int("dead", 50, "socket files nobody listens on")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := serve(ctx, *live, *stale, *dead); err != nil {
		fmt.Fprintln(os.Stderr, "sockets:", err)
		os.Exit(1)
	}
}

func serve(ctx context.Context, live, stale, dead int) error {
	dir, err := os.MkdirTemp("", "ps-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	var servers []*peer.Server
	defer func() {
		for _, s := range servers {
			s.Close()
		}
	}()
	for i := 0; i < live; i++ {
		p := &peer.Primal{Name: fmt.Sprintf("primal%03d", i), Version: "1.0.0", Groups: []peer.Group{{Type: "work", Methods: []string{"do", "undo"}}}}
		s, err := peer.StartPrimal(filepath.Join(dir, p.Name+".sock"), p)
		if err != nil {
			return err
		}
		servers = append(servers, s)
	}
	for i := 0; i < stale; i++ {
		s, err := peer.Listen(filepath.Join(dir, fmt.Sprintf("stale%03d.sock", i)), peer.Config{Behavior: peer.Behavior{Silent: true}})
		if err != nil {
			return err
		}
		servers = append(servers, s)
	}
	for i := 0; i < dead; i++ {
		// A socket file whose listener has gone: connect() is refused.
		p := filepath.Join(dir, fmt.Sprintf("dead%03d.sock", i))
		ln, err := net.Listen("unix", p)
		if err != nil {
			return err
		}
		ln.(*net.UnixListener).SetUnlinkOnClose(false)
		ln.Close()
	}
	fmt.Println(dir)
	<-ctx.Done()
	return nil
}
