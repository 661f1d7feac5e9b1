package tui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/ecoPrimals/primalscope/discovery"
	"github.com/ecoPrimals/primalscope/history"
	"github.com/ecoPrimals/primalscope/ipc"
)

// History is what the TUI needs of the call history, in history's own
// entries. Every method may do I/O and is called only from commands.
type History interface {
	// Record keeps a finished call; it must not block for long.
	Record(e history.Entry)
	// Search returns calls matching text (all when empty), newest first.
	Search(ctx context.Context, text string, limit int) ([]history.Entry, error)
	// Get returns one call with its result (history.ErrNotFound when
	// there is none).
	Get(ctx context.Context, id int64) (history.Entry, error)
	// LastParams returns the params of the newest call of method (on
	// target when it is not empty).
	LastParams(ctx context.Context, target, method string) (json.RawMessage, bool, error)
	// Save names a call.
	Save(ctx context.Context, id int64, name string) error
}

// MemHistory keeps calls in memory for this run only (it serves tests and
// a history store that failed to open).
type MemHistory struct {
	mu      sync.Mutex
	entries []history.Entry
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
func (h *MemHistory) Record(e history.Entry) {
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
func (h *MemHistory) Search(_ context.Context, text string, limit int) ([]history.Entry, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	words := strings.Fields(strings.ToLower(text))
	var out []history.Entry
	for i := len(h.entries) - 1; i >= 0 && (limit <= 0 || len(out) < limit); i-- {
		e := h.entries[i]
		hay := strings.ToLower(e.Target + " " + e.Endpoint + " " + e.Method + " " + string(e.Params))
		if e.Error != nil {
			hay += " " + strings.ToLower(e.Error.Message)
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
func (h *MemHistory) Get(_ context.Context, id int64) (history.Entry, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, e := range h.entries {
		if e.ID == id {
			return e, nil
		}
	}
	return history.Entry{}, fmt.Errorf("call %d: %w", id, history.ErrNotFound)
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

// diffLines describes how a replayed answer differs from the stored one,
// one line a change (history's structural diff; peer text escaped).
func diffLines(old, new []byte) ([]string, error) {
	changes, err := history.Diff(old, new)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	if err := history.FormatDiff(&b, changes, history.DiffFormat{}); err != nil {
		return nil, err
	}
	return strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n"), nil
}

// recordFor builds the history entry of a finished call.
func recordFor(t *discovery.Target, req ipc.Request, start time.Time, resp *ipc.Response, err error) history.Entry {
	e := history.Entry{
		Time: start, Target: t.Name, Endpoint: t.Address, Family: t.Family, Wire: t.Wire(), Transport: transportOf(t),
		Method: req.Method, Params: append(json.RawMessage(nil), req.Params...),
		Session: req.SessionID, Pool: req.Pool, Source: history.SourceTUI,
	}
	if resp != nil {
		e.Duration = resp.Elapsed
		e.ResponseSize = int64(len(resp.Raw))
		if resp.Error == nil {
			e.Result = resp.Result
		}
	}
	// The outcome as the CLI records it (one classifier); the error text
	// beside it.
	e.Outcome = history.OutcomeOf(err)
	if fp := (*ipc.ForeignPeerError)(nil); errors.As(err, &fp) {
		e.Params = nil // refused before a byte was sent: nothing went anywhere
	}
	var rpcErr *ipc.RPCError
	switch {
	case err == nil:
	case errors.As(err, &rpcErr):
		e.Error = &history.RPCError{Code: rpcErr.Code, Message: rpcErr.Message, Data: rpcErr.Data}
	case e.Outcome == history.OutcomeCancelled:
		e.Error = &history.RPCError{Message: "cancelled"}
	default:
		e.Error = &history.RPCError{Message: err.Error()}
	}
	if e.Duration == 0 {
		e.Duration = time.Since(start)
	}
	return e
}

func transportOf(t *discovery.Target) string {
	s := string(t.Endpoint.Transport)
	if t.BTSP() {
		s += "+btsp"
	}
	return s
}
