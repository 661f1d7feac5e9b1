package tui

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/ecoPrimals/primalscope/discovery"
	"github.com/ecoPrimals/primalscope/internal/render"
	"github.com/ecoPrimals/primalscope/ipc"
)

// Messages that open something in the response viewer.
type (
	// callDoneMsg is a finished call (or a replay, an inspected event or
	// frame) formatted for the viewer.
	callDoneMsg struct {
		ans *answer
		doc *doc
		// partial: doc is a preview of a large answer; the full document
		// follows in a fullDocMsg.
		partial bool
	}
	fullDocMsg struct {
		ans *answer
		doc *doc
	}
	envDoneMsg struct {
		ans *answer
		doc *doc
	}
)

// previewAbove is the answer size above which a preview of the first
// previewBytes is shown while the whole answer is formatted.
const (
	previewAbove = 1 << 20
	previewBytes = 128 << 10
)

// answerMsg formats an answer for the viewer: whole when small, else a
// preview of its beginning (the rest follows in a fullDocMsg).
func answerMsg(a *answer) callDoneMsg {
	if len(a.result) > previewAbove {
		out, _ := render.Format(a.result[:previewBytes], render.Options{Indent: render.DefaultIndent})
		if i := bytes.LastIndexByte(out, '\n'); i > 0 {
			out = out[:i]
		}
		return callDoneMsg{ans: a, doc: newDoc(string(out), true), partial: true}
	}
	return callDoneMsg{ans: a, doc: prettyDoc(a.result)}
}

// answerOf turns a finished call into what the response viewer shows.
func answerOf(seq int, t *discovery.Target, req ipc.Request, start time.Time, resp *ipc.Response, err error) *answer {
	a := &answer{seq: seq, target: t, req: req, outcome: "ok"}
	if resp != nil {
		a.elapsed, a.size, a.raw, a.sent = resp.Elapsed, len(resp.Raw), resp.Raw, resp.Sent
		a.result = resp.Result
		if resp.Error != nil {
			a.rpcErr = resp.Error
			a.outcome = "error"
			a.result, _ = json.Marshal(resp.Error)
		}
	} else {
		a.elapsed = time.Since(start)
	}
	if err != nil && a.rpcErr == nil {
		var re *ipc.RPCError
		var te *ipc.TimeoutError
		switch {
		case ipc.SecurityFailure(err):
			// A BTSP demand without a seed, a failed handshake, a session
			// frame refused at any point: what the CLI exits 5 for (and
			// history.OutcomeOf calls refused), first as there.
			a.outcome = "refused"
		case errors.As(err, &re):
			a.rpcErr, a.outcome = re, "error"
		case errors.As(err, &te), errors.Is(err, context.DeadlineExceeded):
			a.outcome = "timeout"
		case errors.Is(err, context.Canceled):
			a.outcome = "cancelled"
		default:
			a.outcome = "failed"
		}
		a.errText = err.Error()
		a.noResult = a.result == nil
	}
	return a
}
