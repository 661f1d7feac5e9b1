package runbook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/ecoPrimals/primalscope/discovery/capability"
	"github.com/ecoPrimals/primalscope/history"
)

// Call is one call a step makes.
type Call struct {
	Target, Method string
	Params         json.RawMessage // nil: none
	Session, Pool  string
	// Serve answers a peer's requests during the call: method → result.
	Serve map[string]json.RawMessage
	// Timeout is the step's own bound on the call (0: the caller's default).
	Timeout time.Duration
}

// Answer is how a call ended.
type Answer struct {
	// Result is the result when the peer answered with one.
	Result json.RawMessage
	// Error is the peer's JSON-RPC error when it answered with one.
	Error *history.RPCError
	// Failure is why no answer came (connect, transport, timeout,
	// security); Outcome names it as history does.
	Failure error
	Outcome history.Outcome
	// Duration is from send to answer.
	Duration time.Duration
	// Warning is a protocol warning the client noted about the answer.
	Warning string
}

// Listener yields the events and notifications one target sends.
type Listener interface {
	// Next returns the next event as JSON, or an error when the stream ends
	// or ctx does.
	Next(ctx context.Context) (json.RawMessage, error)
	Close()
}

// Caller is how a run reaches targets: the command line gives it the one
// dialer (internal/dial) and history; tests give it the same.
type Caller interface {
	// Call makes one call. It sends the request at most once.
	Call(ctx context.Context, c Call) Answer
	// Capabilities returns a target's parsed capability list.
	Capabilities(ctx context.Context, target string) (*capability.Capabilities, error)
	// Listen starts listening to a target's events; it is started before
	// the call whose event a step expects.
	Listen(ctx context.Context, target string) (Listener, error)
}

// Status is how a step ended.
type Status string

// The statuses.
const (
	Pass Status = "pass"
	Fail Status = "fail"
	Skip Status = "skip"
)

// StepResult is one step's (or one for_each item's) outcome.
type StepResult struct {
	Book   string `json:"book"`
	Step   string `json:"step"`
	Index  int    `json:"index"`
	Pos    string `json:"pos"`
	Target string `json:"target,omitempty"`
	Method string `json:"method,omitempty"`
	Status Status `json:"status"`
	// Reason says why a step failed or was skipped.
	Reason string `json:"reason,omitempty"`
	// Outcome is the call's outcome as history names it.
	Outcome history.Outcome `json:"outcome,omitempty"`
	// Diff is a failed equals' structural difference (expected → got).
	Diff []history.Change `json:"diff,omitempty"`
	// Saw is the value a failed expression saw (the result), redacted.
	Saw      json.RawMessage `json:"saw,omitempty"`
	Ms       float64         `json:"ms"`
	Attempts int             `json:"attempts,omitempty"`
}

// Reporter is told of a run as it goes.
type Reporter interface {
	BookStarted(b *Book, steps int)
	StepStarted(b *Book, label string)
	StepDone(b *Book, r StepResult)
	BookDone(b *Book, results []StepResult, d time.Duration)
}

// Runner runs books.
type Runner struct {
	Caller   Caller
	Report   Reporter
	Env      map[string]string
	FailFast bool
	// Covered, when set, is told of every call a step made (its target as
	// the book spelled it, the bus pool the step named, the method).
	Covered func(target, pool, method string)
	// Secrets are values the user marked secret outside the environment
	// (the family seed files): hidden from every report, whatever they
	// look like, and never sent but under a secret key.
	Secrets []string

	secrets []string
	known   map[string]bool // secrets, as a set: true for our own (env, sent)
	caps    map[string]*capability.Capabilities
	// itemsBytes bounds the answers a for_each step keeps for later steps
	// (0: maxItemsBytes); tests set it small.
	itemsBytes int
}

// maxItemsBytes bounds the answers (results, errors' messages and data)
// one for_each step keeps in .steps.NAME.items, in all: as much as one
// answer may be (ipc.DefaultMaxFrame), not 10,000 of them.
const maxItemsBytes = 64 << 20

// errStepTimeout is why a step's context ends when its own timeout: does.
var errStepTimeout = errors.New("the step's timeout ran out")

// ErrFailFast is returned when a run stopped at its first failure.
var ErrFailFast = errors.New("stopped at the first failure (--fail-fast)")

// Run plans and runs one book. It returns the step results; a *BookError
// means the book is invalid (nothing was sent); a context error means the
// run's time ran out.
func (r *Runner) Run(ctx context.Context, b *Book) ([]StepResult, error) {
	start := time.Now()
	if r.caps == nil {
		r.caps = map[string]*capability.Capabilities{}
	}
	r.LearnEnvSecrets() // whether or not the caller did: no run without them
	if err := CheckEnv(b, r.Env); err != nil {
		return nil, err
	}
	steps, err := Plan(ctx, b, r.capsOf)
	if err != nil {
		return nil, err
	}
	comp, err := compileAll(b)
	if err != nil {
		return nil, err
	}
	r.Report.BookStarted(b, len(steps))
	sc := newScope(b, r.Env)
	var results []StepResult
	var runErr error
	for i, s := range steps {
		if err := expired(ctx); err != nil {
			runErr = err
			break
		}
		res := r.step(ctx, b, s, i, comp[s], sc)
		results = append(results, res...)
		if err := expired(ctx); err != nil {
			runErr = err
			break
		}
		if r.FailFast && anyFailed(res) {
			runErr = ErrFailFast
			break
		}
	}
	if runErr != nil {
		// The steps a cut run never reached are in every report, as not run.
		why := "not run: the run's --timeout ran out"
		if errors.Is(runErr, ErrFailFast) {
			why = "not run: --fail-fast stopped at the first failure"
		}
		for i, s := range steps {
			if i < len(steps) && !ranStep(results, s) {
				res := StepResult{Book: r.scrub(b.Name), Step: r.scrub(s.Label()), Index: i, Pos: s.Pos.String(),
					Target: r.scrub(s.Target), Method: r.scrub(s.Method), Status: Skip, Reason: why}
				results = append(results, res)
				r.Report.StepDone(b, res)
			}
		}
	}
	r.Report.BookDone(b, results, time.Since(start))
	return results, runErr
}

// ranStep reports whether a result of step s is among rs.
func ranStep(rs []StepResult, s *Step) bool {
	pos := s.Pos.String()
	for _, r := range rs {
		if r.Pos == pos {
			return true
		}
	}
	return false
}

// expired is the run's context error, also once its deadline has passed
// (a call may time out a moment before the context says so).
func expired(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
		return context.DeadlineExceeded
	}
	return nil
}

func anyFailed(rs []StepResult) bool {
	for _, x := range rs {
		if x.Status == Fail {
			return true
		}
	}
	return false
}

func (r *Runner) capsOf(ctx context.Context, target string) (*capability.Capabilities, error) {
	if c, ok := r.caps[target]; ok {
		return c, nil
	}
	c, err := r.Caller.Capabilities(ctx, target)
	if err != nil {
		return nil, err
	}
	r.caps[target] = c
	return c, nil
}

// scope is what expressions see.
type scope struct {
	env   map[string]any
	steps map[string]any
}

func newScope(b *Book, env map[string]string) *scope {
	e := make(map[string]any, len(env))
	for k, v := range env {
		e[k] = v
	}
	return &scope{env: e, steps: map[string]any{}}
}

func (sc *scope) value(s *Step, item any, index int, each bool) map[string]any {
	m := map[string]any{"vars": s.Vars, "env": sc.env, "steps": sc.steps}
	if each {
		m["item"] = item
		m["index"] = index
	}
	return m
}

func (r *Runner) step(ctx context.Context, b *Book, s *Step, i int, c *compiled, sc *scope) []StepResult {
	base := StepResult{Book: b.Name, Step: s.Label(), Index: i, Pos: s.Pos.String(), Target: s.Target, Method: s.Method}
	if s.Skip != "" {
		base.Status, base.Reason = Skip, "skip: "+s.Skip
		return []StepResult{r.finish(b, base)}
	}
	if name := unrun(s, sc); name != "" {
		// What it would send or expect reads a step that did not run
		// (skipped, an if: that was false, an empty for_each): null,
		// sent without a word. It does not run either. (An if: may read
		// a step that did not run: that is how a book branches.)
		base.Status, base.Reason = Skip, fmt.Sprintf("not run: it reads .steps.%s, which has no outcome (skipped, or it sent nothing)", name)
		return []StepResult{r.finish(b, base)}
	}
	if c.forEach == nil {
		res, _ := r.once(ctx, b, s, c, sc, base, nil, 0, false)
		return []StepResult{res}
	}
	list, err := c.forEach.render(ctx, sc.value(s, nil, 0, false))
	if err != nil {
		base.Status, base.Reason = Fail, fmt.Sprintf("for_each: %v", err)
		return []StepResult{r.finish(b, base)}
	}
	items, ok := list.([]any)
	if !ok {
		base.Status, base.Reason = Fail, fmt.Sprintf("for_each gave %s, not a list", kindOf(list))
		return []StepResult{r.finish(b, base)}
	}
	if len(items) > maxForEachItem {
		base.Status, base.Reason = Fail, fmt.Sprintf("for_each gave %d items, more than %d", len(items), maxForEachItem)
		return []StepResult{r.finish(b, base)}
	}
	var out []StepResult
	var entries []any       // every item's outcome, in item order
	var last map[string]any // the last item's whose call was made
	kept, limit := 0, r.itemsBytes
	if limit <= 0 {
		limit = maxItemsBytes
	}
	for k, it := range items {
		if ctx.Err() != nil {
			break
		}
		res := base
		res.Step = fmt.Sprintf("%s[%d]", s.Label(), k)
		res, got := r.once(ctx, b, s, c, sc, res, it, k, true)
		out = append(out, res)
		if s.Name != "" {
			entries = append(entries, itemEntry(k, it, res, got, &kept, limit))
			if got.rec != nil {
				last = got.rec
			}
		}
		if r.FailFast && res.Status == Fail {
			break
		}
	}
	if last != nil {
		// .steps.NAME: the last item's outcome, as it always was, and
		// every item's as items. A copy: the last entry holds the same
		// outcome, and a value holding itself would never end.
		top := make(map[string]any, len(last)+1)
		for k, v := range last {
			top[k] = v
		}
		top["items"] = entries
		sc.steps[s.Name] = top
	}
	return out
}

// itemEntry is one for_each item's outcome as .steps.NAME.items holds it:
// {index, item, status, outcome, ms, result, error}, outcome, ms, result
// and error null when its call was not made (an if: that was false, a
// refusal says its outcome). Once an item's answer would take the step's
// items past limit bytes of answers, its result and error, and every later
// item's, are null and truncated is true.
func itemEntry(index int, item any, res StepResult, got sent, kept *int, limit int) map[string]any {
	e := map[string]any{"index": index, "item": item, "status": string(res.Status),
		"outcome": nil, "ms": nil, "result": nil, "error": nil}
	if res.Outcome != "" {
		e["outcome"] = string(res.Outcome)
	}
	if got.rec == nil {
		return e
	}
	e["outcome"], e["ms"] = got.rec["outcome"], got.rec["ms"]
	if *kept+got.size > limit {
		*kept = limit + 1 // every later item too: the kept ones are a prefix
		e["truncated"] = true
		return e
	}
	*kept += got.size
	e["result"], e["error"] = got.rec["result"], got.rec["error"]
	return e
}

// sent is what once says of the call it made: the outcome it recorded for
// later steps (nil: no call was made, or the step has no name), and the
// answer's size in bytes.
type sent struct {
	rec  map[string]any
	size int
}

// unrun is the first step s reads (other than in its if:) that has no
// outcome in sc: one that did not run. "" when none.
func unrun(s *Step, sc *scope) string {
	for _, fr := range s.refs() {
		if fr.kind != "steps" || fr.field == "if" {
			continue
		}
		if _, ok := sc.steps[fr.name]; !ok {
			return fr.name
		}
	}
	return ""
}

func kindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "text"
	case map[string]any:
		return "an object"
	case bool:
		return "true/false"
	}
	return "a number"
}

// once runs one call of a step (one for_each item) and judges it.
func (r *Runner) once(ctx context.Context, b *Book, s *Step, c *compiled, sc *scope, res StepResult, item any, index int, each bool) (StepResult, sent) {
	var got sent // got.rec: the outcome later steps read, once the call was made
	done := func(st Status, reason string) (StepResult, sent) {
		res.Status, res.Reason = st, reason
		res = r.finish(b, res)
		if got.rec != nil {
			got.rec["status"] = string(st)
		}
		return res, got
	}
	in := sc.value(s, item, index, each)
	if c.ifExpr != nil {
		ok, _, err := c.ifExpr.truthy(ctx, in, in)
		if err != nil {
			return done(Fail, fmt.Sprintf("if: %v", err))
		}
		if !ok {
			return done(Skip, "if: "+s.If+" is false")
		}
	}
	call, err := r.render(ctx, s, in)
	if err != nil {
		return done(Fail, err.Error())
	}
	res.Target, res.Method = call.Target, call.Method
	call.Timeout = s.Timeout
	if field := r.secretIn(call); field != "" {
		// A book (or a recorded name in it) that would carry a secret
		// to the peer: nothing is sent.
		res.Outcome = history.OutcomeRefused
		return done(Fail, fmt.Sprintf("refused: the call's %s would carry a secret (an environment secret such as FAMILY_SEED, or a value seen under a secret key); nothing was sent", field))
	}
	r.Report.StepStarted(b, r.scrub(res.Step))

	sctx := ctx
	if s.Timeout > 0 {
		var cancel context.CancelFunc
		sctx, cancel = context.WithTimeoutCause(ctx, s.Timeout, errStepTimeout)
		defer cancel()
	}
	var lis Listener
	if ev := s.Expect.Event; ev != nil {
		from, err := renderString(sctx, ev.From, in, ev.Pos)
		if err == nil && r.holdsSecret(from) {
			res.Outcome = history.OutcomeRefused
			return done(Fail, fmt.Sprintf("refused: expect.event's from (%s) would carry a secret; nothing was sent", ev.From))
		}
		if err == nil {
			lis, err = r.Caller.Listen(sctx, from)
		}
		if err != nil {
			if history.OutcomeOf(err) == history.OutcomeRefused {
				res.Outcome = history.OutcomeRefused // refused for security, as a call would be
			}
			return done(Fail, fmt.Sprintf("expect.event: listen to %s: %v", ev.From, err))
		}
		defer lis.Close()
	}

	ans, attempts, note := r.send(sctx, s, c, call, in)
	res.Attempts = attempts
	res.Ms = float64(ans.Duration.Microseconds()) / 1000
	res.Outcome = ans.Outcome
	// What the peer answered under a secret key is a secret too: no
	// report shows it, whatever quotes it (a jq error, a later call).
	r.learnSecrets(jqValue(ans.Result), "", false)
	if ans.Error != nil {
		r.learnSecrets(jqValue(ans.Error.Data), "", false)
	}
	if r.Covered != nil && ans.Outcome != history.OutcomeUnreachable && ans.Outcome != history.OutcomeRefused {
		r.Covered(call.Target, call.Pool, call.Method)
	}
	// Record the step's outcome for later steps, whatever the verdict.
	if s.Name != "" {
		// outcome says how the call ended (a transport failure has no
		// result and no error either), status the step's verdict.
		got.rec = map[string]any{"result": jqValue(ans.Result), "error": errValue(ans.Error), "ms": res.Ms, "outcome": string(ans.Outcome)}
		got.size = len(ans.Result)
		if ans.Error != nil {
			got.size += len(ans.Error.Message) + len(ans.Error.Data)
		}
		sc.steps[s.Name] = got.rec
	}
	if note != "" { // retry.until never held: the step fails, whatever else holds
		res.Saw = r.redact(ans.Result)
		return done(Fail, note)
	}
	if reason, diff, saw := r.judge(sctx, s, c, ans, in); reason != "" {
		res.Diff = diff
		res.Saw = r.redact(saw)
		return done(Fail, reason)
	}
	if lis != nil {
		if reason, refused := r.await(sctx, s, c, lis, in); reason != "" {
			if refused {
				res.Outcome = history.OutcomeRefused // a stream refused for security mid-way, as a call would be
			}
			return done(Fail, reason)
		}
	}
	return done(Pass, "")
}

// errValue is a JSON-RPC error as expressions read it ($error,
// .steps.NAME.error): {code, message, data}, every key present; nil for
// none. As jq reads JSON (a code is a number jq compares, not a Go int64
// it does not know): through its JSON form.
func errValue(re *history.RPCError) any {
	if re == nil {
		return nil
	}
	e := map[string]any{"code": nil, "message": nil, "data": nil}
	if raw, err := json.Marshal(re); err == nil {
		if m, ok := jqValue(raw).(map[string]any); ok {
			for k, v := range m {
				e[k] = v
			}
		}
	}
	return e
}

// answerScope is in with $error bound to ans's error: what expect.result
// and retry.until read beside the result.
func answerScope(in map[string]any, ans Answer) map[string]any {
	out := make(map[string]any, len(in)+1)
	for k, v := range in {
		out[k] = v
	}
	out["error"] = errValue(ans.Error)
	return out
}

// render expands the step's templates into the call to make.
func (r *Runner) render(ctx context.Context, s *Step, in map[string]any) (Call, error) {
	var call Call
	var err error
	if call.Target, err = renderString(ctx, s.Target, in, s.at("call")); err != nil {
		return call, fmt.Errorf("call: %v", err)
	}
	if call.Method, err = renderString(ctx, s.Method, in, s.at("call")); err != nil {
		return call, fmt.Errorf("call: %v", err)
	}
	if call.Session, err = renderString(ctx, s.Session, in, s.at("session")); err != nil {
		return call, fmt.Errorf("session: %v", err)
	}
	if call.Pool, err = renderString(ctx, s.Pool, in, s.at("pool")); err != nil {
		return call, fmt.Errorf("pool: %v", err)
	}
	if s.Params != nil {
		v, err := renderValue(ctx, s.Params, in, s.at("params"))
		if err != nil {
			return call, fmt.Errorf("params: %v", err)
		}
		b, err := json.Marshal(v)
		if err != nil {
			return call, fmt.Errorf("params: %v", err)
		}
		call.Params = b
		r.learnSecrets(v, "", true)
	}
	if len(s.Serve) > 0 {
		call.Serve = map[string]json.RawMessage{}
		for m, v := range s.Serve {
			rv, err := renderValue(ctx, v, in, s.at("serve"))
			if err != nil {
				return call, fmt.Errorf("serve %s: %v", m, err)
			}
			b, err := json.Marshal(rv)
			if err != nil {
				return call, fmt.Errorf("serve %s: %v", m, err)
			}
			call.Serve[m] = b
		}
	}
	return call, nil
}

// send makes the call, and again while retry.until does not hold, only if
// the call is safe to repeat: marked idempotent in the book, or read-only
// by the target's capability list. Never twice otherwise. until judges
// every answer, a result (.) or a JSON-RPC error ($error): a peer that
// answers "busy" until it is ready is waited out as one that answers
// {"ready": false}. A call with no answer (unreachable, a timeout) is not
// judged; a refusal ends the retry.
func (r *Runner) send(ctx context.Context, s *Step, c *compiled, call Call, in map[string]any) (Answer, int, string) {
	ans := r.Caller.Call(ctx, call)
	if s.Retry == nil {
		return ans, 1, ""
	}
	attempts := 1
	for {
		if ans.Outcome == history.OutcomeRefused {
			// Refused for security (a BTSP handshake or frame, a socket
			// another user serves): another try cannot help and would
			// give an impostor one more; judged as refused (exit 5).
			return ans, attempts, ""
		}
		said := lastAnswer(ans)
		if ans.Failure == nil {
			ok, _, err := c.until.truthy(ctx, jqValue(ans.Result), answerScope(in, ans))
			if err == nil && ok {
				return ans, attempts, ""
			}
			if err != nil {
				said = fmt.Sprintf(" (retry.until: %v)", err) // a typo's error, not a slow peer
			}
		}
		if attempts >= s.Retry.Times {
			return ans, attempts, fmt.Sprintf("retry.until %s not met after %d calls%s", s.Retry.Until, attempts, said)
		}
		if safe, why := r.safe(ctx, s, call); !safe {
			return ans, attempts, fmt.Sprintf("retry.until %s not met%s; not sent again: %s", s.Retry.Until, said, why)
		}
		t := time.NewTimer(s.Retry.Every)
		select {
		case <-ctx.Done():
			t.Stop()
			if errors.Is(context.Cause(ctx), errStepTimeout) {
				return ans, attempts, fmt.Sprintf("the step's timeout (%s) ran out while waiting to retry", s.Timeout)
			}
			return ans, attempts, "the run's time ran out while waiting to retry"
		case <-t.C:
		}
		attempts++
		ans = r.Caller.Call(ctx, call)
	}
}

// lastAnswer says how the last call of a retry ended when it was no result
// (a retry that never met its until because the target was unreachable,
// or answered an error, says so).
func lastAnswer(a Answer) string {
	switch {
	case a.Failure != nil:
		return fmt.Sprintf(" (the last call: %s: %v)", a.Outcome, a.Failure)
	case a.Error != nil:
		return fmt.Sprintf(" (the last call answered error %d: %s)", a.Error.Code, a.Error.Message)
	}
	return ""
}

// readOnlyMethods are the methods the standards define as reads.
var readOnlyMethods = map[string]bool{
	"health.liveness": true, "health.readiness": true, "health.check": true, "health": true,
	"capabilities.list": true, "capability.list": true, "identity.get": true, "rpc.discover": true,
	"ipc.list": true, "ipc.discover": true, "discovery.peers": true, "lifecycle.status": true,
	"lifecycle.get": true, "topology.get": true, "topology.primals": true, "graph.list": true,
}

// safe says whether a call may be sent again, and if not, why.
func (r *Runner) safe(ctx context.Context, s *Step, call Call) (bool, string) {
	if s.Idempotent {
		return true, ""
	}
	if readOnlyMethods[call.Method] {
		return true, ""
	}
	caps, err := r.capsOf(ctx, call.Target)
	if err == nil && caps != nil {
		if info, ok := caps.MethodInfo[call.Method]; ok {
			for _, k := range []string{"read_only", "readonly", "idempotent"} {
				if string(info.Extra[k]) == "true" {
					return true, ""
				}
			}
		}
	}
	return false, fmt.Sprintf("%s is neither marked idempotent: true in the book nor read-only in %s's capability list", call.Method, call.Target)
}

// judge checks the answer against the step's expectations; "" means it
// holds. It returns the reason, a failed equals' diff, and what a failed
// expression saw.
func (r *Runner) judge(ctx context.Context, s *Step, c *compiled, ans Answer, in map[string]any) (string, []history.Change, json.RawMessage) {
	e := s.Expect
	if ans.Failure != nil {
		return fmt.Sprintf("%s: %v", ans.Outcome, ans.Failure), nil, nil
	}
	wantErr := e.Error != nil || e.ErrorMessage != nil
	switch {
	case wantErr && ans.Error == nil:
		want := "an error"
		if e.Error != nil {
			want = fmt.Sprintf("error %d", *e.Error)
		}
		return fmt.Sprintf("expected %s, got a result", want), nil, ans.Result
	case !wantErr && ans.Error != nil:
		return fmt.Sprintf("the peer answered error %d: %s", ans.Error.Code, ans.Error.Message), nil, nil
	}
	if ans.Error != nil {
		if e.Error != nil && ans.Error.Code != *e.Error {
			return fmt.Sprintf("expected error %d, got %d: %s", *e.Error, ans.Error.Code, ans.Error.Message), nil, nil
		}
		if e.ErrorMessage != nil && !e.ErrorMessage.MatchString(ans.Error.Message) {
			return fmt.Sprintf("error message %q does not match /%s/", ans.Error.Message, e.ErrorMessage), nil, nil
		}
	}
	if c.result != nil {
		v := jqValue(ans.Result)
		ok, got, err := c.result.truthy(ctx, v, answerScope(in, ans))
		if err != nil {
			return fmt.Sprintf("expect.result: %v", err), nil, ans.Result
		}
		if !ok {
			return fmt.Sprintf("expect.result %s is %s", e.Result, short(got)), nil, ans.Result
		}
	}
	if e.HasEquals {
		wantV, err := renderValue(ctx, e.Equals, in, s.at("expect")) // its strings are templates too
		if err != nil {
			return fmt.Sprintf("expect.equals: %v", err), nil, nil
		}
		want, err := json.Marshal(wantV)
		if err != nil {
			return fmt.Sprintf("expect.equals: %v", err), nil, nil
		}
		got := ans.Result
		if ans.Error != nil {
			got, _ = json.Marshal(ans.Error)
			if named, ok := wantV.(map[string]any); ok {
				got = namedFields(got, named)
			}
		}
		diff, err := history.Match(want, got, e.Ignore)
		if err != nil {
			return fmt.Sprintf("expect.equals: %v", err), nil, got
		}
		if len(diff) > 0 {
			return fmt.Sprintf("expect.equals: %d difference(s)", len(diff)), r.redactDiff(diff), nil
		}
	}
	if e.UnderMS > 0 && ans.Duration > time.Duration(e.UnderMS*float64(time.Millisecond)) {
		return fmt.Sprintf("took %s, over under_ms %g", ans.Duration.Round(time.Microsecond), e.UnderMS), nil, nil
	}
	_ = in
	return "", nil, nil
}

// namedFields is the error object errJSON with only the keys named in
// want: equals on an error compares the fields it names (code, message,
// data), each whole as equals compares (ignore paths aside), so
// {code: -32601} holds whatever a peer says in its message or adds as data.
// A named key the error lacks stays a difference.
func namedFields(errJSON json.RawMessage, want map[string]any) json.RawMessage {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(errJSON, &m); err != nil {
		return errJSON
	}
	for k := range m {
		if _, ok := want[k]; !ok {
			delete(m, k)
		}
	}
	out, err := json.Marshal(m)
	if err != nil {
		return errJSON
	}
	return out
}

func short(v any) string {
	b, err := json.Marshal(v)
	if err != nil || v == nil {
		return "null"
	}
	s := string(b)
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return s
}

// await waits for the event a step expects; "" when it came. refused says
// the stream was refused for security while the step waited.
func (r *Runner) await(ctx context.Context, s *Step, c *compiled, lis Listener, in map[string]any) (reason string, refused bool) {
	ev := s.Expect.Event
	wctx, cancel := context.WithTimeout(ctx, ev.Within)
	defer cancel()
	start := time.Now()
	seen := 0
	var matchErr error // the last event the match failed on as jq (a typo, not an absent event)
	said := func() string {
		if matchErr != nil {
			return fmt.Sprintf("; the match failed as jq: %v", matchErr)
		}
		return ""
	}
	for {
		raw, err := lis.Next(wctx)
		if err != nil {
			if ctx.Err() != nil || expired(ctx) != nil {
				left := "the run had left"
				if errors.Is(context.Cause(ctx), errStepTimeout) {
					left = fmt.Sprintf("the step's timeout (%s) left", s.Timeout)
				}
				return fmt.Sprintf("expect.event: nothing from %s matched %s in the %s %s (within: %s; %d seen%s)",
					ev.From, ev.Match, time.Since(start).Round(time.Millisecond), left, ev.Within, seen, said()), false
			}
			if wctx.Err() != nil {
				return fmt.Sprintf("expect.event: nothing from %s matched %s within %s (%d seen%s)", ev.From, ev.Match, ev.Within, seen, said()), false
			}
			if history.OutcomeOf(err) == history.OutcomeRefused {
				return fmt.Sprintf("expect.event: %s: refused for security after %d event(s): %v", ev.From, seen, err), true
			}
			return fmt.Sprintf("expect.event: %s: %v", ev.From, err), false
		}
		seen++
		ok, _, err := c.eventM.truthy(wctx, jqValue(raw), in)
		if err == nil && ok {
			return "", false
		}
		if err != nil && wctx.Err() == nil {
			matchErr = err
		}
	}
}

// learnSecrets keeps every value sent (own) or answered under a secret key,
// so no report shows it wherever it turns up and no later step sends it to
// another target: MinValueLen bytes or more and no JSON literal
// (history.SentSecret), whoever said it: a PIN, an OTP or a short numeric
// token a peer answers with is a secret as much as one the user sends,
// while a peer's {"auth":"true"} does not hide every "true" of the report.
func (r *Runner) learnSecrets(v any, key string, own bool) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			r.learnSecrets(e, k, own)
		}
	case []any:
		for _, e := range x {
			r.learnSecrets(e, key, own)
		}
	case string:
		if key != "" && history.IsSecretKey(key) {
			if own {
				r.learn(x, learnOwn)
			} else {
				r.learn(x, learnAnswered)
			}
		}
	}
}

// How a secret was learnt: a marked one is hidden whatever it is, the
// others from MinValueLen bytes and never a JSON literal.
type learnt int

const (
	// learnMarked: a value the user marked secret (FAMILY_SEED, a seed
	// file): always hidden.
	learnMarked learnt = iota
	// learnOwn: a secret-looking environment variable's value, or one the
	// book sends under a secret key: MinValueLen bytes or more, no JSON
	// literal.
	learnOwn
	// learnAnswered: a value a peer answered under a secret key: as
	// learnOwn (history.SentSecret).
	learnAnswered
)

// learn marks one value as a secret: our own (marked, from the
// environment, or sent by the book) or one a peer answered with, when it
// is long enough for how it was learnt.
func (r *Runner) learn(v string, how learnt) {
	switch how {
	case learnMarked:
		if v == "" {
			return
		}
	default:
		if !history.SentSecret(v) {
			return
		}
	}
	own := how != learnAnswered
	if r.known == nil {
		r.known = map[string]bool{}
	}
	was, seen := r.known[v]
	r.known[v] = was || own
	if seen {
		return
	}
	r.secrets = append(r.secrets, v)
	// Longest first, so a secret holding another is hidden whole.
	sort.SliceStable(r.secrets, func(i, j int) bool { return len(r.secrets[i]) > len(r.secrets[j]) })
}

// holdsSecret reports whether s contains a known secret.
func (r *Runner) holdsSecret(s string) bool {
	for _, sec := range r.secrets {
		if strings.Contains(s, sec) {
			return true
		}
	}
	return false
}

// holdsOwnSecret reports whether s contains a secret of ours (not one a
// peer answered with).
func (r *Runner) holdsOwnSecret(s string) bool {
	for _, sec := range r.secrets {
		if r.known[sec] && strings.Contains(s, sec) {
			return true
		}
	}
	return false
}

// secretIn names the field of a rendered call that would carry a known
// secret to the peer ("" when none does). A value under a secret key of
// the params (password, token) is where a secret belongs; anywhere else
// (the method, the target, a key, a value under another key) it is not.
// A bus session may carry a session id a peer answered with (sessionId is
// a secret-looking key), never one of our own secrets.
func (r *Runner) secretIn(c Call) string {
	if r.holdsOwnSecret(c.Session) {
		return "session"
	}
	for _, f := range []struct{ name, v string }{{"target", c.Target}, {"method", c.Method}, {"pool", c.Pool}} {
		if r.holdsSecret(f.v) {
			return f.name
		}
	}
	if len(c.Params) > 0 && r.secretOutOfPlace(jqValue(c.Params), "") {
		return "params"
	}
	for m, v := range c.Serve {
		if r.holdsSecret(m) || r.secretOutOfPlace(jqValue(v), "") {
			return "serve"
		}
	}
	return ""
}

func (r *Runner) secretOutOfPlace(v any, key string) bool {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if r.holdsSecret(k) || r.secretOutOfPlace(e, k) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if r.secretOutOfPlace(e, key) {
				return true
			}
		}
	case string:
		return !(key != "" && history.IsSecretKey(key)) && r.holdsSecret(x)
	}
	return false
}

// finish scrubs every text of a step's result that may quote a secret (a
// rendered target or method, a label, a reason quoting the peer or the
// book) and reports it.
func (r *Runner) finish(b *Book, res StepResult) StepResult {
	res.Step = r.scrub(res.Step)
	res.Target = r.scrub(res.Target)
	res.Method = r.scrub(res.Method)
	res.Reason = r.scrub(res.Reason)
	r.Report.StepDone(b, res)
	return res
}

// LearnEnvSecrets marks the user's secrets: the seeds (FAMILY_SEED, any
// *_SEED variable, Secrets) whatever they look like, and the values of
// other secret-looking environment variables (*_TOKEN, *_PASSWORD, ...)
// of MinValueLen bytes or more (XDG_SESSION_ID=2 would hide every 2), as
// history.IsSecretEnv names them (PWD is no password).
func (r *Runner) LearnEnvSecrets() {
	for k, v := range r.Env {
		switch {
		case !history.IsSecretEnv(k):
		case k == "FAMILY_SEED" || strings.HasSuffix(k, "_SEED"):
			r.learn(strings.TrimSpace(v), learnMarked)
			r.learn(v, learnMarked)
		default:
			r.learn(v, learnOwn)
		}
	}
	for _, v := range r.Secrets {
		r.learn(strings.TrimSpace(v), learnMarked)
		r.learn(v, learnMarked)
	}
}

// scrub hides every known secret in a text of a report, as it is and as
// it looks inside a JSON string (history's scrubber).
func (r *Runner) scrub(s string) string {
	return history.ScrubText(s, r.secrets)
}

// redact is raw (JSON a peer answered) as a report may show it: compact,
// every value under a secret-looking key redacted, every known secret
// replaced, and still JSON (a secret number becomes "[redacted]").
func (r *Runner) redact(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return nil
	}
	if out, _, err := history.Redact(raw); err == nil {
		raw = out
	}
	return json.RawMessage(history.ScrubJSON(raw, r.secrets))
}

// redactDiff hides the values of a diff under a secret-looking key (the
// diff shows bare values, which Redact cannot judge without their key).
func (r *Runner) redactDiff(d []history.Change) []history.Change {
	for i := range d {
		if history.SecretPath(d[i].Path) {
			if d[i].Old != nil {
				d[i].Old = json.RawMessage(`"` + history.Redacted + `"`)
			}
			if d[i].New != nil {
				d[i].New = json.RawMessage(`"` + history.Redacted + `"`)
			}
			continue
		}
		d[i].Old = r.redact(d[i].Old)
		d[i].New = r.redact(d[i].New)
	}
	return d
}

// ReportCoverage gives the reporters that report it (CoverageReporter) the
// run's coverage, its text scrubbed of known secrets as every report's is.
func (r *Runner) ReportCoverage(cov []TargetCoverage) {
	c, ok := r.Report.(CoverageReporter)
	if !ok {
		return
	}
	all := func(ss []string) []string {
		out := make([]string, len(ss))
		for i, s := range ss {
			out[i] = r.scrub(s)
		}
		return out
	}
	out := make([]TargetCoverage, len(cov))
	for i, t := range cov {
		t.Target, t.Endpoint = r.scrub(t.Target), r.scrub(t.Endpoint)
		t.Spellings, t.Called, t.NotCalled, t.NotListed = all(t.Spellings), all(t.Called), all(t.NotCalled), all(t.NotListed)
		out[i] = t
	}
	c.Coverage(out)
}
