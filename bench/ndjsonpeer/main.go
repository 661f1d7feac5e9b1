// Command ndjsonpeer is a plain line-oriented JSON-RPC 2.0 server for
// whole-process benchmarks, written from the Primal IPC standard v3.1 and
// not from primalscope's own code: it reads one JSON object per line from a
// Unix socket and answers each request with one line of raw JSON. It knows
// nothing of the riboCipher prefix or BTSP; a line it cannot parse is skipped
// without a word, as many real servers do.
//
// Methods: health.liveness ({"status":"alive"}), health.check, and
// bench.sample, whose result is an array of small objects (numbers,
// booleans, nulls, strings) of about -size bytes, generated
// deterministically at start. Anything else is -32601.
//
// It prints the socket path on its first line once listening, serves until
// SIGINT or SIGTERM, then removes the socket.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/ecoPrimals/primalscope/internal/sampledoc"
)

// maxLine is the longest request line read; a longer one is skipped.
const maxLine = 1 << 20

func main() {
	sock := flag.String("socket", "", "Unix socket path to listen on (required)")
	size := flag.Int("size", 10<<20, "approximate size in bytes of bench.sample's result")
	flag.Parse()
	if *sock == "" {
		fmt.Fprintln(os.Stderr, "ndjsonpeer: -socket is required")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := serve(ctx, *sock, sampledoc.Answer(*size)); err != nil {
		fmt.Fprintln(os.Stderr, "ndjsonpeer:", err)
		os.Exit(1)
	}
}

// serve listens on path until ctx ends, answering every connection.
func serve(ctx context.Context, path string, big []byte) error {
	_ = os.Remove(path)
	ln, err := net.Listen("unix", path)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", path, err)
	}
	defer os.Remove(path)
	fmt.Println(path)
	var wg sync.WaitGroup
	var mu sync.Mutex
	conns := map[net.Conn]struct{}{}
	go func() {
		<-ctx.Done()
		ln.Close()
		mu.Lock()
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
	}()
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			if errors.Is(err, net.ErrClosed) {
				break
			}
			continue
		}
		mu.Lock()
		conns[c] = struct{}{}
		mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			handle(c, big)
			mu.Lock()
			delete(conns, c)
			mu.Unlock()
			c.Close()
		}()
	}
	wg.Wait()
	return nil
}

// request is the part of a JSON-RPC request this server reads.
type request struct {
	Method string          `json:"method"`
	ID     json.RawMessage `json:"id"`
}

// handle answers the requests on one connection, one line each, until the
// peer closes.
func handle(c net.Conn, big []byte) {
	r := bufio.NewReaderSize(c, 64<<10)
	w := bufio.NewWriterSize(c, 64<<10)
	for {
		line, err := readLine(r)
		if err != nil {
			return
		}
		var req request
		if json.Unmarshal(line, &req) != nil || req.Method == "" {
			continue // not JSON (a binary prefix, garbage): skipped silently
		}
		if len(req.ID) == 0 || string(req.ID) == "null" {
			continue // a notification: no answer
		}
		var out []byte
		switch req.Method {
		case "health.liveness":
			out = answer(req.ID, []byte(`{"status":"alive"}`))
		case "health.check":
			out = answer(req.ID, []byte(`{"status":"healthy","name":"ndjsonpeer","version":"1.0.0"}`))
		case "bench.sample":
			out = answer(req.ID, big)
		default:
			out = append([]byte(`{"jsonrpc":"2.0","error":{"code":-32601,"message":"Method not found"},"id":`), req.ID...)
			out = append(out, "}\n"...)
		}
		if _, err := w.Write(out); err != nil {
			return
		}
		if err := w.Flush(); err != nil {
			return
		}
	}
}

// readLine returns the next line without its newline; a line longer than
// maxLine is skipped whole.
func readLine(r *bufio.Reader) ([]byte, error) {
	var buf []byte
	skipping := false
	for {
		part, err := r.ReadSlice('\n')
		if !skipping {
			if len(buf)+len(part) > maxLine {
				skipping, buf = true, nil
			} else {
				buf = append(buf, part...)
			}
		}
		switch {
		case err == nil && skipping:
			skipping = false // the end of a line too long: read the next one
		case err == nil:
			return buf[:len(buf)-1], nil
		case !errors.Is(err, bufio.ErrBufferFull):
			return nil, err
		}
	}
}

// answer frames a result as one line.
func answer(id, result []byte) []byte {
	out := make([]byte, 0, len(result)+64)
	out = append(out, `{"jsonrpc":"2.0","result":`...)
	out = append(out, result...)
	out = append(out, `,"id":`...)
	out = append(out, id...)
	return append(out, "}\n"...)
}
