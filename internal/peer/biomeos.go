package peer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// BiomeOSPrefix is the riboCipher prefix the biomeOS API socket requires
// (0xEC, then 0x04 for HTTP).
const BiomeOSPrefix = "\xEC\x04"

// BiomeOS is a simulated biomeOS API socket: HTTP over a Unix socket after the
// riboCipher prefix (connections without it are dropped silently), serving
// GET /api/v1/events/stream as server-sent events and GET /api/v1/health.
type BiomeOS struct {
	// Path is the socket path.
	Path string

	ln     net.Listener
	srv    *http.Server
	conns  chan net.Conn
	done   chan struct{}
	wg     sync.WaitGroup
	mu     sync.Mutex
	subs   map[chan []byte]struct{}
	nextID atomic.Int64

	dropped   atomic.Int64 // connections refused for a missing prefix
	streams   atomic.Int64 // event streams opened
	closeOnce sync.Once
}

// ListenBiomeOS starts a simulated biomeOS API on a new Unix socket at path.
func ListenBiomeOS(path string) (*BiomeOS, error) {
	_ = os.Remove(path)
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", path, err)
	}
	b := &BiomeOS{Path: path, ln: ln, conns: make(chan net.Conn), done: make(chan struct{}), subs: map[chan []byte]struct{}{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1/events/stream", b.stream)
	mux.HandleFunc("GET /api/v1/health", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"status":"healthy","service":"biomeos-api"}`)
	})
	b.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	b.wg.Add(2)
	go b.acceptLoop()
	go func() {
		defer b.wg.Done()
		_ = b.srv.Serve(prefixListener{b})
	}()
	return b, nil
}

// Dropped counts connections dropped for a missing riboCipher prefix.
func (b *BiomeOS) Dropped() int64 { return b.dropped.Load() }

// Streams counts event streams opened.
func (b *BiomeOS) Streams() int64 { return b.streams.Load() }

// Subscribers reports how many event streams are open now.
func (b *BiomeOS) Subscribers() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.subs)
}

// Publish sends one event to every open stream. data must encode to a JSON
// object; its "type" is set to typ. Slow streams drop the event.
func (b *BiomeOS) Publish(typ string, data map[string]any) error {
	obj := map[string]any{}
	for k, v := range data {
		obj[k] = v
	}
	obj["type"] = typ
	js, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	id := b.nextID.Add(1)
	var msg bytes.Buffer
	fmt.Fprintf(&msg, "event: %s\nid: %d\ndata: %s\n\n", typ, id, js)
	b.mu.Lock()
	defer b.mu.Unlock()
	for ch := range b.subs {
		select {
		case ch <- msg.Bytes():
		default:
		}
	}
	return nil
}

// Heartbeat publishes the biomeOS heartbeat event.
func (b *BiomeOS) Heartbeat(primals, healthy int, families []string) error {
	return b.Publish("heartbeat", map[string]any{
		"timestamp": time.Now().UTC().Format(time.RFC3339Nano), "primals_count": primals,
		"healthy_count": healthy, "families": families,
	})
}

// Close stops the server, its streams and goroutines.
func (b *BiomeOS) Close() error {
	var err error
	b.closeOnce.Do(func() {
		close(b.done)
		err = b.ln.Close()
		_ = b.srv.Close()
		b.wg.Wait()
		_ = os.Remove(b.Path)
	})
	return err
}

func (b *BiomeOS) acceptLoop() {
	defer b.wg.Done()
	for {
		c, err := b.ln.Accept()
		if err != nil {
			return
		}
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
			var p [2]byte
			if _, err := io.ReadFull(c, p[:]); err != nil || string(p[:]) != BiomeOSPrefix {
				b.dropped.Add(1)
				c.Close() // silently, as the real socket does
				return
			}
			_ = c.SetReadDeadline(time.Time{})
			select {
			case b.conns <- c:
			case <-b.done:
				c.Close()
			}
		}()
	}
}

func (b *BiomeOS) stream(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "no streaming", http.StatusInternalServerError)
		return
	}
	ch := make(chan []byte, 64)
	b.mu.Lock()
	b.subs[ch] = struct{}{}
	b.mu.Unlock()
	b.streams.Add(1)
	defer func() {
		b.mu.Lock()
		delete(b.subs, ch)
		b.mu.Unlock()
	}()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	_, _ = io.WriteString(w, ": biomeos-api event stream\nretry: 1000\n\n")
	fl.Flush()
	ka := time.NewTicker(15 * time.Second)
	defer ka.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-b.done:
			return
		case <-ka.C:
			_, _ = io.WriteString(w, ": keep-alive "+strconv.FormatInt(time.Now().Unix(), 10)+"\n\n")
		case msg := <-ch:
			if _, err := w.Write(msg); err != nil {
				return
			}
		}
		fl.Flush()
	}
}

// prefixListener hands the HTTP server only connections that sent the prefix.
type prefixListener struct{ b *BiomeOS }

func (l prefixListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.b.conns:
		return c, nil
	case <-l.b.done:
		return nil, errors.New("closed")
	}
}

func (l prefixListener) Close() error   { return nil }
func (l prefixListener) Addr() net.Addr { return l.b.ln.Addr() }
