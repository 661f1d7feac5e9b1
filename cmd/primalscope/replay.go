// replay: a recorded call made again, to the name or the endpoint it was
// made at, with a diff of the answers.

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/ecoPrimals/primalscope/history"
	"github.com/ecoPrimals/primalscope/internal/dial"
	"github.com/ecoPrimals/primalscope/internal/human"
	"github.com/ecoPrimals/primalscope/internal/render"
	"github.com/ecoPrimals/primalscope/ipc"
)

type replayFlags struct {
	target string
	params string
	asJSON bool
	jq     jqFlag
	// The global flags the user gave, which the recorded call's own do not
	// override.
	wireSet, familySet, prefixSet bool
}

func (a *app) replayCmd() *cobra.Command {
	var f replayFlags
	cmd := &cobra.Command{
		Use:   "replay ID|NAME",
		Short: "Send a past call again and show what changed in the answer",
		Long: `Send the call ID (or the call saved as NAME) again, to the same target or
to --target, and show how the answer differs from the stored one: one line a
change, "+" added, "-" removed, "~" changed, with jq-style paths (.a.b[3]);
arrays are aligned by element, so an inserted element is one "+". The new
call is recorded too.

The call goes to the name it was made to when that still resolves, else to
the endpoint it was made at (said on stderr), with the family, wire and
riboCipher prefix it was made with (the flags override them). A call made
over BTSP is replayed only over BTSP, wherever the name leads now: it needs
the family seed as call does ($FAMILY_SEED or --family-seed-file), and a
target that cannot complete the handshake gets nothing (exit 5).

Params stored as "[redacted]" are not sent: give the real ones with --params.

Exit codes as for call: 0 the peer answered (changed or not), 1 it answered
with an error, 2 unknown call or bad input, 3 cannot connect, 4 timed out,
5 refused for security.`,
		Example: `  primalscope replay 42
  primalscope replay daily-sign --target tcp://10.0.0.5:9200
  primalscope replay 42 --json`,
		Args: argsFor(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			changed := func(name string) bool {
				fl := cmd.Flag(name)
				return fl != nil && fl.Changed
			}
			f.wireSet, f.familySet, f.prefixSet = changed("wire"), changed("family"), changed("prefix")
			return a.replay(cmd.Context(), args[0], f)
		},
	}
	cmd.Flags().StringVar(&f.target, "target", "", "send to this TARGET instead of the original one")
	cmd.Flags().StringVar(&f.params, "params", "", "send these params instead (JSON, @file or -)")
	cmd.Flags().BoolVar(&f.asJSON, "json", false, "print the changes as JSON")
	f.jq.add(cmd)
	return cmd
}

// replayTarget resolves where a replayed call goes: --target when given;
// else the name it was made to, when that still resolves (a note on stderr
// when it now leads elsewhere); else the endpoint it was made at (history
// records it absolute), said on stderr and recorded under the name. A call
// made to an address (a bus pool too: its endpoint is the bus) goes to its
// recorded endpoint. The target is returned as resolved, with what the name
// said about it (the family it carries), so that it is dialled as call
// would dial the name: resolving its endpoint's string again would lose
// that. A lookup cut by the deadline is an error (exit 4), not "does not
// resolve now".
func (a *app) replayTarget(ctx context.Context, old history.Entry, f replayFlags) (target, error) {
	if f.target != "" {
		return a.resolve(ctx, f.target)
	}
	name := old.Target
	switch {
	case name == "":
		return a.resolve(ctx, old.Endpoint)
	case old.Endpoint == "":
		return a.resolve(ctx, name)
	}
	if _, err := ipc.ParseEndpoint(name); err == nil {
		return a.resolve(ctx, old.Endpoint) // an address typed relative resolves only where it was typed
	}
	t, err := a.resolve(ctx, name)
	var lt *dial.LookupTimeoutError
	switch {
	case errors.As(err, &lt) || err != nil && ctx.Err() != nil:
		return t, err // not known whether it resolves: nothing is sent
	case err != nil:
		fmt.Fprintf(a.io.err, "primalscope: %s does not resolve now (%s); replaying to the endpoint the call was made at: %s\n",
			render.Sanitize(name), render.Sanitize(err.Error()), render.Sanitize(old.Endpoint))
		t, err = a.resolve(ctx, old.Endpoint)
		if err == nil {
			t.Arg, t.Name = name, name // the name it was called by, reached at its endpoint
		}
		return t, err
	}
	was := old.Endpoint
	if ep, err := ipc.ParseEndpoint(was); err == nil {
		was = absEndpoint(ep).String()
	}
	if now := absEndpoint(t.Endpoint).String(); now != was {
		fmt.Fprintf(a.io.err, "primalscope: note: %s now resolves to %s (the call was made at %s)\n",
			render.Sanitize(name), render.Sanitize(now), render.Sanitize(old.Endpoint))
	}
	return t, nil
}

// overBTSP reports whether a recorded call went over a BTSP session
// (history's Transport: "unix+btsp(chacha20_poly1305)"...).
func overBTSP(e history.Entry) bool { return strings.Contains(e.Transport, "+btsp") }

// replayDoc is replay's --json output.
type replayDoc struct {
	Replayed   int64             `json:"replayed"`
	ID         int64             `json:"id,omitempty"` // the new call's id, when recorded
	Target     string            `json:"target"`
	Method     string            `json:"method"`
	OldOutcome history.Outcome   `json:"old_outcome"`
	Outcome    history.Outcome   `json:"outcome"`
	Comparable bool              `json:"comparable"` // false when the stored answer was cut
	Changes    []history.Change  `json:"changes"`
	Error      *history.RPCError `json:"error,omitempty"`
}

func (a *app) replay(ctx context.Context, ref string, f replayFlags) error {
	s, err := a.openHistory(ctx)
	if err != nil {
		return err
	}
	old, err := lookupCall(ctx, s, ref)
	s.Close()
	if err != nil {
		return err
	}
	if old.ParamsTruncated {
		return usageErr(fmt.Errorf("call %d: %w, so it cannot be sent again", old.ID, history.ErrParamsCut))
	}
	params := old.Params
	if f.params != "" {
		if params, err = a.readParams(f.params); err != nil {
			return err
		}
	} else if history.HasRedacted(params) {
		return usageErr(fmt.Errorf(`call %d had secret params, stored as "[redacted]"; give them with --params`, old.ID))
	}
	// The call is made as it was: its wire, family and prefix, unless the
	// user says otherwise (the seed is the user's to give, as for call).
	if !f.wireSet && old.Wire != "" {
		a.wire = old.Wire
	}
	if !f.familySet && old.Family != "" {
		a.family = old.Family
	}
	if !f.prefixSet && old.Prefix {
		a.prefix = "on"
	}
	t, err := a.replayTarget(ctx, old, f)
	if err != nil {
		return err
	}
	if overBTSP(old) {
		// What was sent under a session is sent under one again, wherever
		// the name leads now: no seed is exit 5, a peer that cannot
		// complete the handshake is exit 5, nothing goes in cleartext
		// (unless --btsp-cipher null names it, loudly).
		t.BTSPRequired = true
		fmt.Fprintf(a.io.err, "primalscope: call %d was made over BTSP (%s): it is replayed only over BTSP\n",
			old.ID, render.Sanitize(old.Transport))
	}

	rec := a.startRecording(ctx)
	defer rec.close()
	req := ipc.Request{Method: old.Method, Params: params, SessionID: old.Session, Pool: old.Pool}
	cctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	start := time.Now()
	conn, err := a.dialTarget(cctx, t, nil)
	if err != nil {
		rec.record(ctx, a.callEntry(t, nil, req, nil, err, start))
		return err
	}
	defer closeConn(ctx, conn) // within the command's deadline (deadline.go)
	resp, err := conn.Send(cctx, req)
	newID := rec.folded(ctx, rec.record(ctx, a.callEntry(t, conn, req, resp, err, start)))
	var re *ipc.RPCError
	answered := err == nil || (errors.As(err, &re) && resp != nil)
	if !answered {
		return fmt.Errorf("%s: %w", t.Name, err)
	}

	doc := replayDoc{Replayed: old.ID, ID: newID, Target: t.Name, Method: old.Method,
		OldOutcome: old.Outcome, Outcome: outcomeOf(err), Comparable: !old.Truncated}
	if resp.Error != nil {
		doc.Error = &history.RPCError{Code: resp.Error.Code, Message: resp.Error.Message, Data: resp.Error.Data}
	}
	if doc.Comparable {
		oldDoc, newDoc := answers(old.Result, old.Error, old.Outcome, resp.Result, doc.Error)
		changes, derr := history.Diff(oldDoc, newDoc)
		if derr != nil {
			doc.Comparable = false
			fmt.Fprintln(a.io.err, "primalscope: warning: cannot compare the answers: "+render.Sanitize(derr.Error()))
		}
		doc.Changes = changes
	}
	if doc.Changes == nil {
		doc.Changes = []history.Change{}
	}

	if f.jq.set() {
		if err := a.emitDoc(ctx, f.jq, doc); err != nil {
			return err
		}
	} else if f.asJSON {
		if err := a.encodeJSON(a.io.out, doc, false); err != nil {
			return err
		}
	} else {
		idNote := ""
		if newID != 0 {
			idNote = fmt.Sprintf(" (call %d)", newID)
		}
		fmt.Fprintf(a.io.err, "primalscope: replayed call %d, %s %s from %s: %s → %s in %s%s\n",
			old.ID, render.Sanitize(t.Name), render.Sanitize(old.Method), old.Time.Local().Format("2006-01-02 15:04:05"),
			old.Outcome, doc.Outcome, human.Duration(resp.Elapsed), idNote)
		if !doc.Comparable {
			fmt.Fprintf(a.io.err, "primalscope: the stored answer was cut (%s of it kept): no diff; the new answer follows\n",
				human.Bytes(old.ResponseSize))
			if err := a.printJSON(a.io.out, resp.Result, false, resp.ResultCuts); err != nil {
				return err
			}
		} else {
			st := a.styler(a.io.out)
			if err := history.FormatDiff(a.io.out, doc.Changes, history.DiffFormat{Color: st.on}); err != nil {
				return err
			}
		}
	}
	if re != nil {
		return &quietError{code: exitPeer, err: err}
	}
	return nil
}

// answers builds the two documents replay compares. When both calls
// succeeded they are the results themselves (paths like .a.b); otherwise
// each is {"result": ...} or {"error": ...} so a switch between result and
// error shows. A call that got no answer is absent. The new answer is
// redacted as the stored one was.
func answers(oldRes json.RawMessage, oldErr *history.RPCError, oldOutcome history.Outcome,
	newRes json.RawMessage, newErr *history.RPCError) (json.RawMessage, json.RawMessage) {
	redact := func(b json.RawMessage) json.RawMessage {
		if len(b) == 0 {
			return b
		}
		r, _, err := history.Redact(b)
		if err != nil {
			return b
		}
		return r
	}
	newRes = redact(newRes)
	if newErr != nil {
		ne := *newErr
		ne.Data = redact(ne.Data)
		newErr = &ne
	}
	if oldOutcome == history.OutcomeOK && newErr == nil {
		if len(oldRes) == 0 {
			oldRes = json.RawMessage("null")
		}
		if len(newRes) == 0 {
			newRes = json.RawMessage("null")
		}
		return oldRes, newRes
	}
	wrap := func(res json.RawMessage, e *history.RPCError, answered bool) json.RawMessage {
		if !answered {
			return nil
		}
		var m map[string]any
		if e != nil {
			m = map[string]any{"error": e}
		} else {
			if len(res) == 0 {
				res = json.RawMessage("null")
			}
			m = map[string]any{"result": res}
		}
		b, _ := json.Marshal(m)
		return b
	}
	oldAnswered := oldOutcome == history.OutcomeOK || (oldOutcome == history.OutcomeError && oldErr != nil)
	return wrap(oldRes, oldErr, oldAnswered), wrap(newRes, newErr, true)
}

// storeHistory is the persistent history behind the TUI (tui.History).
