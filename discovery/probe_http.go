package discovery

// The probe of an HTTP target (the biomeOS API socket): connect, the
// riboCipher prefix, one GET of the event stream's headers, within the
// same connect and stale time as a JSON-RPC probe.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"syscall"
	"time"

	"github.com/ecoPrimals/primalscope/internal/human"
	"github.com/ecoPrimals/primalscope/ipc"
	"github.com/ecoPrimals/primalscope/ipc/sse"
)

// WireHTTP is the wire of a target that speaks HTTP after the riboCipher
// prefix (the biomeOS API), not JSON-RPC: its probe asks for the event
// stream's headers.
const WireHTTP = "http"

// probeHTTP judges an HTTP target by the answer to GET of its event
// stream (sse.DefaultPath): live when it serves text/event-stream, error
// when it answers something else or closes without answering, stale when
// it accepts and says nothing before the deadline, dead when nothing
// listens. ctx carries the probe's own deadline; the stream is closed as
// soon as its headers are read.
func (p *Prober) probeHTTP(ctx context.Context, ep ipc.Endpoint, res Probe, release func()) Probe {
	switch ep.Transport {
	case ipc.Unix, ipc.Abstract, ipc.TCP:
	default:
		release()
		res.State, res.Err = StateError, fmt.Sprintf("an HTTP target over %s cannot be probed", ep.Transport)
		return res
	}
	connectTimeout := connectTimeoutFor(ep, p.opts)
	start := time.Now()
	cctx, cancel := context.WithTimeout(ctx, connectTimeout)
	// Through the owner check every Unix dial has: a probe reaches a
	// socket whoever serves it and marks it with its owner, as the
	// JSON-RPC probe does (ipc.PeerPolicy.Observe).
	c, err := ipc.DialPeer(cctx, ep, ipc.Options{ConnectTimeout: connectTimeout, Endpoint: ep.String(), Security: p.opts.Security,
		Peer: ipc.PeerPolicy{Observe: true, Seen: func(id ipc.PeerIdentity) {
			if id.Foreign {
				res.Owner = &id
			}
		}}})
	cancel()
	res.Connect = time.Since(start)
	release()
	if err != nil {
		res.State, res.Err = classifyDialErr(err), err.Error()
		if res.State == StateStale {
			res.Err = fmt.Sprintf("connect did not finish within %s", connectTimeout)
		}
		return res
	}
	defer c.Close()
	deadline := start.Add(res.Connect + p.opts.StaleTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	_ = c.SetDeadline(deadline)
	// The caller's ctx ending cuts the wait short.
	stop := context.AfterFunc(ctx, func() { _ = c.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	req := "GET " + sse.DefaultPath + " HTTP/1.1\r\nHost: biomeos-api\r\nAccept: text/event-stream\r\nConnection: close\r\n\r\n"
	asked := time.Now()
	if _, err := c.Write(append(append([]byte(nil), sse.HTTPPrefix...), req...)); err != nil {
		res.State, res.Err = StateError, "could not send the request: "+err.Error()
		return res
	}
	resp, err := http.ReadResponse(bufio.NewReaderSize(io.LimitReader(c, 64<<10), 4<<10), nil)
	if err != nil {
		var ne net.Error
		switch {
		case errors.As(err, &ne) && ne.Timeout():
			res.State = StateStale
			res.Err = fmt.Sprintf("no HTTP answer to GET %s within %s", sse.DefaultPath, p.opts.StaleTimeout)
		case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET):
			res.State = StateError
			res.Err = "the server closed the connection without an HTTP answer (it drops clients without the riboCipher prefix EC 04; is it an HTTP server?)"
		default:
			res.State, res.Err = StateError, "not an HTTP answer: "+err.Error()
		}
		return res
	}
	// The answer's headers are the verdict. The body is not read (closing
	// it would read the endless stream until the deadline): closing the
	// connection ends it.
	res.Latency = time.Since(asked)
	res.Wire = WireHTTP
	ct := resp.Header.Get("Content-Type")
	mt, _, _ := mime.ParseMediaType(ct)
	if resp.StatusCode != http.StatusOK || mt != "text/event-stream" {
		res.State = StateError
		res.Err = fmt.Sprintf("GET %s: %s", sse.DefaultPath, (&sse.StatusError{Status: resp.StatusCode, ContentType: human.Clip(ct, 100)}).Error())
		return res
	}
	p.noteAnswer(time.Since(res.At))
	res.State = StateLive
	return res
}
