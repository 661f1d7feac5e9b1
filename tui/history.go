package tui

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/ecoPrimals/primalscope/history"
	"github.com/ecoPrimals/primalscope/internal/render"
	"github.com/ecoPrimals/primalscope/ipc"
)

// Outcomes of a call, as history records them.
const (
	OutcomeOK        = "ok"
	OutcomeError     = "error"
	OutcomeTimeout   = "timeout"
	OutcomeClosed    = "closed"
	OutcomeRefused   = "refused"
	OutcomeCancelled = "cancelled"
)

// CallRecord is one call as the TUI records and lists it.
type CallRecord struct {
	ID        int64
	Time      time.Time
	Duration  time.Duration
	Target    string
	Endpoint  string
	Wire      string
	Transport string
	Method    string
	Params    json.RawMessage
	Result    json.RawMessage // nil unless the call succeeded (and was asked for)
	// Err is the peer's error object, or for a failure without one a
	// description with Code 0.
	Err             *ipc.RPCError
	Outcome         string
	Session, Pool   string
	ResponseSize    int64
	Truncated       bool // the stored result was cut
	ParamsTruncated bool // the stored params were cut: not replayable
}

// History is what the TUI needs of the call history. Every method may do
// I/O and is called only from commands.
type History interface {
	// Record keeps a finished call; it must not block for long.
	Record(e CallRecord)
	// Search returns calls matching text (all when empty), newest first.
	Search(ctx context.Context, text string, limit int) ([]CallRecord, error)
	// Get returns one call with its result.
	Get(ctx context.Context, id int64) (CallRecord, error)
	// LastParams returns the params of the newest call of method (on
	// target when it is not empty).
	LastParams(ctx context.Context, target, method string) (json.RawMessage, bool, error)
	// Save names a call.
	Save(ctx context.Context, id int64, name string) error
	// Diff describes how a replayed answer differs from the stored one,
	// one line a change, ready to print (peer text escaped).
	Diff(old, new []byte) ([]string, error)
}

// ErrNotFound is returned by MemHistory.Get for an unknown id.
var ErrNotFound = errors.New("no such call in history")

// MemHistory keeps calls in memory for this run only (with --no-history
// semantics it is not used; it serves tests and a history store that failed
// to open).
type MemHistory struct {
	mu      sync.Mutex
	entries []CallRecord
	names   map[string]int64
	max     int
}

// NewMemHistory keeps up to max calls (1000 when max <= 0).
func NewMemHistory(max int) *MemHistory {
	if max <= 0 {
		max = 1000
	}
	return &MemHistory{names: map[string]int64{}, max: max}
}

// Record keeps e, assigning it the next id.
func (h *MemHistory) Record(e CallRecord) {
	h.mu.Lock()
	defer h.mu.Unlock()
	e.ID = 1
	if n := len(h.entries); n > 0 {
		e.ID = h.entries[n-1].ID + 1
	}
	h.entries = append(h.entries, e)
	if len(h.entries) > h.max {
		h.entries = h.entries[len(h.entries)-h.max:]
	}
}

// Search matches text against target, method, params and error text.
func (h *MemHistory) Search(_ context.Context, text string, limit int) ([]CallRecord, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	words := strings.Fields(strings.ToLower(text))
	var out []CallRecord
	for i := len(h.entries) - 1; i >= 0 && (limit <= 0 || len(out) < limit); i-- {
		e := h.entries[i]
		hay := strings.ToLower(e.Target + " " + e.Endpoint + " " + e.Method + " " + string(e.Params))
		if e.Err != nil {
			hay += " " + strings.ToLower(e.Err.Message)
		}
		ok := true
		for _, w := range words {
			if !strings.Contains(hay, w) {
				ok = false
				break
			}
		}
		if ok {
			out = append(out, e)
		}
	}
	return out, nil
}

// Get returns the call with id.
func (h *MemHistory) Get(_ context.Context, id int64) (CallRecord, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, e := range h.entries {
		if e.ID == id {
			return e, nil
		}
	}
	return CallRecord{}, ErrNotFound
}

// LastParams returns the params of the newest call of method.
func (h *MemHistory) LastParams(_ context.Context, target, method string) (json.RawMessage, bool, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for pass := 0; pass < 2; pass++ {
		for i := len(h.entries) - 1; i >= 0; i-- {
			e := h.entries[i]
			if e.Method == method && (pass == 1 || target == "" || e.Target == target) {
				return e.Params, true, nil
			}
		}
	}
	return nil, false, nil
}

// Save names a call.
func (h *MemHistory) Save(_ context.Context, id int64, name string) error {
	if name == "" || strings.ContainsAny(name, " \t\n") || strings.HasPrefix(name, "@") {
		return fmt.Errorf("bad name %q: no spaces, not starting with @", name)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.names[name] = id
	return nil
}

// Diff compares two answers line by line after pretty-printing them (the
// store-backed history diffs structurally).
func (h *MemHistory) Diff(old, new []byte) ([]string, error) {
	po, err := render.Format(old, render.Options{Indent: 2})
	if err != nil && len(old) > 0 {
		return nil, fmt.Errorf("stored answer: %w", err)
	}
	pn, err := render.Format(new, render.Options{Indent: 2})
	if err != nil && len(new) > 0 {
		return nil, fmt.Errorf("new answer: %w", err)
	}
	if bytes.Equal(po, pn) {
		return []string{"no changes"}, nil
	}
	ol := strings.Split(strings.TrimRight(string(po), "\n"), "\n")
	nl := strings.Split(strings.TrimRight(string(pn), "\n"), "\n")
	var out []string
	i := 0
	for i < len(ol) && i < len(nl) && ol[i] == nl[i] {
		i++
	}
	for j := i; j < len(ol); j++ {
		out = append(out, "- "+render.Sanitize(ol[j]))
	}
	for j := i; j < len(nl); j++ {
		out = append(out, "+ "+render.Sanitize(nl[j]))
	}
	return out, nil
}

// entryFor builds the history entry of a finished call.
func recordFor(t Target, req ipc.Request, start time.Time, resp *ipc.Response, err error) CallRecord {
	e := CallRecord{
		Time: start, Target: t.Name, Endpoint: t.Endpoint, Wire: t.Wire, Transport: transportOf(t),
		Method: req.Method, Params: append(json.RawMessage(nil), req.Params...),
		Session: req.SessionID, Pool: req.Pool,
	}
	if resp != nil {
		e.Duration = resp.Elapsed
		e.ResponseSize = int64(len(resp.Raw))
		if resp.Error == nil {
			e.Result = resp.Result
		}
	}
	var rpcErr *ipc.RPCError
	var te *ipc.TimeoutError
	var be *ipc.BTSPRequiredError
	switch {
	case err == nil:
		e.Outcome = OutcomeOK
	case errors.As(err, &rpcErr):
		e.Outcome = OutcomeError
		e.Err = rpcErr
	case errors.As(err, &te):
		e.Outcome = OutcomeTimeout
		e.Err = &ipc.RPCError{Message: err.Error()}
	case errors.As(err, &be):
		e.Outcome = OutcomeRefused
		e.Err = &ipc.RPCError{Message: err.Error()}
	case errors.Is(err, context.Canceled):
		e.Outcome = OutcomeCancelled
		e.Err = &ipc.RPCError{Message: "cancelled"}
	default:
		e.Outcome = string(history.OutcomeOf(err)) // unreachable, refused (handshake), closed...
		e.Err = &ipc.RPCError{Message: err.Error()}
	}
	if e.Duration == 0 {
		e.Duration = time.Since(start)
	}
	return e
}

func transportOf(t Target) string {
	ep, err := ipc.ParseEndpoint(t.Endpoint)
	if err != nil {
		return ""
	}
	s := string(ep.Transport)
	if t.BTSP {
		s += "+btsp"
	}
	return s
}

// callCommand renders a call as the primalscope command line that makes it
// again from any directory (history.CommandFor: the CLI's export), with the
// notes to show beside it.
func callCommand(c CallRecord, family string) (history.Command, error) {
	return history.CommandFor(history.Entry{Target: c.Target, Endpoint: c.Endpoint, Family: family, Wire: c.Wire,
		Transport: c.Transport, Method: c.Method, Params: c.Params, Session: c.Session, Pool: c.Pool,
		Outcome: history.Outcome(c.Outcome), ParamsTruncated: c.ParamsTruncated})
}
