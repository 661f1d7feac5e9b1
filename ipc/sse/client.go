package sse

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"strings"
	"syscall"
	"time"

	"github.com/ecoPrimals/primalscope/internal/human"
	"github.com/ecoPrimals/primalscope/internal/textsafe"
	"github.com/ecoPrimals/primalscope/ipc"
)

// HTTPPrefix is the riboCipher first-byte signal for HTTP: the biomeOS API
// socket drops connections that do not start with it.
var HTTPPrefix = []byte{0xEC, 0x04}

// DefaultPath is the biomeOS API's event stream.
const DefaultPath = "/api/v1/events/stream"

// Options configure OpenUnix.
type Options struct {
	// Path is the stream's path (default DefaultPath).
	Path string
	// NoPrefix leaves out the riboCipher prefix (for servers without it).
	NoPrefix bool
	// MaxLine and MaxEvent bound one line and one event (defaults).
	MaxLine, MaxEvent int
	// ConnectTimeout bounds connecting and the response headers (default 5 s).
	ConnectTimeout time.Duration
	// LastEventID is sent as Last-Event-ID when resuming.
	LastEventID string
	// Peer says which local users may serve the socket (its TrustUIDs:
	// besides the user and root). The zero value refuses any other with
	// *ipc.ForeignPeerError before a byte is sent; Observe is ignored: an
	// event stream is never read from a socket the user does not trust.
	Peer ipc.PeerPolicy
}

// Stream is an open event stream.
type Stream struct {
	*Reader
	body io.ReadCloser
	// Status and ContentType are what the server answered.
	Status      int
	ContentType string
}

// Close ends the stream.
func (s *Stream) Close() error { return s.body.Close() }

// StatusError reports an answer that is not an event stream.
type StatusError struct {
	Status      int
	ContentType string
	Body        string
}

func (e *StatusError) Error() string {
	s := fmt.Sprintf("the server answered HTTP %d", e.Status)
	if e.ContentType != "" {
		s += " (" + e.ContentType + ")"
	}
	if e.Status == http.StatusOK {
		s += ", not text/event-stream"
	}
	if e.Body != "" {
		s += ": " + e.Body
	}
	return s
}

// ErrNoAnswer is wrapped when the server closed the connection without an
// HTTP answer: the biomeOS API socket does that to clients that did not send
// the riboCipher prefix.
var ErrNoAnswer = errors.New("the server closed the connection without answering")

// OpenUnix opens the event stream of an HTTP server on a Unix socket, after
// the riboCipher prefix unless opts.NoPrefix. The stream lives until ctx
// ends or Close. A socket served by a local user opts.Peer does not trust
// is refused (*ipc.ForeignPeerError) before anything is sent.
func OpenUnix(ctx context.Context, socketPath string, opts Options) (*Stream, error) {
	if opts.Path == "" {
		opts.Path = DefaultPath
	}
	if opts.ConnectTimeout <= 0 {
		opts.ConnectTimeout = 5 * time.Second
	}
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			pol := opts.Peer
			pol.Observe = false
			c, err := ipc.DialPeer(ctx, ipc.Endpoint{Transport: ipc.Unix, Path: socketPath},
				ipc.Options{ConnectTimeout: opts.ConnectTimeout, Endpoint: socketPath, Peer: pol})
			if err != nil {
				return nil, err
			}
			if !opts.NoPrefix {
				_ = c.SetWriteDeadline(time.Now().Add(opts.ConnectTimeout))
				if _, err := c.Write(HTTPPrefix); err != nil {
					c.Close()
					return nil, fmt.Errorf("write the riboCipher prefix: %w", err)
				}
				_ = c.SetWriteDeadline(time.Time{})
			}
			return c, nil
		},
		DisableKeepAlives:      true,
		ResponseHeaderTimeout:  opts.ConnectTimeout,
		MaxResponseHeaderBytes: 64 << 10,
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://biomeos-api"+opts.Path, nil)
	if err != nil {
		return nil, fmt.Errorf("event stream %s: %w", socketPath, err)
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Cache-Control", "no-cache")
	if opts.LastEventID != "" {
		req.Header.Set("Last-Event-ID", opts.LastEventID)
	}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		var ue interface{ Unwrap() error }
		if errors.As(err, &ue) {
			err = ue.Unwrap()
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
			hint := " (is it an HTTP server?)"
			if opts.NoPrefix {
				hint = " (does it want the riboCipher prefix EC 04?)"
			}
			return nil, fmt.Errorf("event stream %s: %w%s", socketPath, ErrNoAnswer, hint)
		}
		return nil, fmt.Errorf("event stream %s: %w", socketPath, err)
	}
	ct := resp.Header.Get("Content-Type")
	mt, _, _ := mime.ParseMediaType(ct)
	if resp.StatusCode != http.StatusOK || mt != "text/event-stream" {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
		resp.Body.Close()
		return nil, fmt.Errorf("event stream %s: %w", socketPath, &StatusError{Status: resp.StatusCode, ContentType: clean(ct), Body: clean(strings.TrimSpace(string(b)))})
	}
	return &Stream{Reader: NewReader(resp.Body, opts.MaxLine, opts.MaxEvent), body: resp.Body, Status: resp.StatusCode, ContentType: ct}, nil
}

// clean makes peer text safe to repeat in an error (textsafe's visible
// escapes) and bounds it to 200 bytes (human.Clip). It clips before it
// escapes too, so a long header is not copied whole.
func clean(s string) string {
	const n = 200
	return human.Clip(textsafe.Sanitize(human.Clip(s, n)), n)
}
