package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/ecoPrimals/primalscope/discovery"
	"github.com/ecoPrimals/primalscope/discovery/capability"
	"github.com/ecoPrimals/primalscope/history"
	"github.com/ecoPrimals/primalscope/internal/dial"
	"github.com/ecoPrimals/primalscope/internal/events"
	"github.com/ecoPrimals/primalscope/internal/render"
	"github.com/ecoPrimals/primalscope/internal/runbook"
	"github.com/ecoPrimals/primalscope/ipc"
)

// runDefaultTimeout bounds a whole run when --timeout is not given: a book
// is many calls, so the one-shot default (10 s) would cut ordinary books.
const runDefaultTimeout = 5 * time.Minute

// stepCallTimeout bounds one call of a book whose step names no timeout.
const stepCallTimeout = 10 * time.Second

type runFlags struct {
	junit    string
	tap      bool
	json     bool
	failFast bool
	coverage bool
}

func (a *app) runCmd() *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run BOOK...",
		Short: "Run runbooks: checked, repeatable JSON-RPC calls (for CI)",
		Long: `Run each BOOK (YAML): its steps call targets as primalscope call does, over
every wire, and check what comes back (expect: result, error, error_message,
equals with ignore paths, under_ms, event; equals on an expected error
compares only the fields it names: {code: -32601}). Templates {{ jq }} and if:
read {vars, env, steps: {NAME: {result, error, ms, outcome, status}}}
(a for_each step's adds items: every item's outcome, in item order);
expect.result, retry.until and an event's match are jq over the answer
and read the run as $vars, $env, $steps ('.id == $steps.create.result.id');
expect.result and retry.until read a JSON-RPC error answer as $error
({code, message, data}; null for a result), so a retry waits out an
error ('$error.code != -32001') or waits for one.
order: dependencies sorts the steps by the operation_dependencies the
targets declare. See README ("Runbooks") for the format.

Every name, template and reference is checked before anything is sent.
A call is sent at most once unless the book marks it idempotent or the
target's capability list marks it read-only (retry).

Exit codes: 0 every step passed; 1 a step failed (an expectation, or an
outcome: unreachable, timeout, closed); 2 a book does not parse or is
invalid (with line and column); 4 --timeout (the whole run, default 5m)
ran out; 5 a step was refused for security (BTSP required and no seed, a
handshake or session frame refused, a socket another user serves, a call
that would carry a secret, an event stream refused as it connects or
mid-way), whatever else failed.`,
		Example: `  primalscope run smoke.yaml
  primalscope run books/*.yaml --junit report.xml
  primalscope run smoke.yaml --tap --fail-fast
  primalscope run smoke.yaml --json --coverage`,
		Args: argsFor(cobra.MinimumNArgs(1)),
		PreRunE: func(cmd *cobra.Command, _ []string) error {
			if fl := cmd.Flags().Lookup("timeout"); fl != nil && !fl.Changed {
				a.timeout = runDefaultTimeout
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runBooks(cmd.Context(), args, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.junit, "junit", "", "write a JUnit XML report to FILE")
	fl.BoolVar(&f.tap, "tap", false, "print TAP version 14 instead of the text report")
	fl.BoolVar(&f.json, "json", false, "print one JSON object a step instead of the text report")
	fl.BoolVar(&f.failFast, "fail-fast", false, "stop at the first failed step")
	fl.BoolVar(&f.coverage, "coverage", false, "list, per target (however spelled), which of its provided methods the books called, in the report (and the --junit file)")
	return cmd
}

func (a *app) runBooks(ctx context.Context, paths []string, f runFlags) error {
	if f.tap && f.json {
		return usageErr(errors.New("--tap and --json both choose the report; give one"))
	}
	// Every book is read and checked before anything is sent: its names,
	// its expressions, and the environment variables it reads.
	env := environMap(a.environ)
	var books []*runbook.Book
	for _, p := range paths {
		b, err := runbook.Load(p)
		if err == nil {
			err = runbook.Check(b)
		}
		if err == nil {
			err = runbook.CheckEnv(b, env)
		}
		if err != nil {
			var be *runbook.BookError
			if errors.As(err, &be) {
				return usageErr(fmt.Errorf("%s", render.Sanitize(be.Error())))
			}
			return usageErr(err)
		}
		books = append(books, b)
	}
	caller := &runCaller{a: a, conns: map[string]*runConn{}}
	defer caller.close(ctx)
	caller.rec = a.startRecording(ctx)
	defer caller.rec.close()

	var reps runbook.Reporters
	var tap *runbook.TAP
	switch {
	case f.json:
		reps = append(reps, &runbook.JSON{W: a.io.out})
	case f.tap:
		tap = &runbook.TAP{W: a.io.out}
		reps = append(reps, tap)
	default:
		reps = append(reps, &runbook.Text{W: a.io.out, Terminal: a.terminal(a.io.out)})
	}
	var junit *runbook.JUnit
	if f.junit != "" {
		junit = &runbook.JUnit{}
		reps = append(reps, junit)
	}
	cov := newCoverage(caller)
	// The seeds this run knows of ($FAMILY_SEED, --family-seed-file, the
	// config's seed files) are hidden from every report, as history
	// scrubs them.
	r := &runbook.Runner{Caller: caller, Report: reps, Env: env, FailFast: f.failFast, Secrets: a.knownSecrets(),
		Covered: cov.called}
	r.LearnEnvSecrets()
	failed, refused := 0, 0
	var runErr error
	for _, b := range books {
		res, err := r.Run(ctx, b)
		_, nf, _ := runbook.Count(res)
		failed += nf
		for _, x := range res {
			// Refused for security: a BTSP demand with no seed, a failed
			// handshake or session frame, a socket another user serves,
			// a call that would carry a secret (exit 5, as call does).
			if x.Status == runbook.Fail && x.Outcome == history.OutcomeRefused {
				refused++
			}
		}
		if err != nil {
			runErr = err
			break
		}
	}
	if f.coverage {
		// In the report (JSON, text, TAP comments) and the JUnit file (a
		// testsuite "coverage"), where CI reads it.
		r.ReportCoverage(cov.report(ctx))
	}
	if tap != nil {
		tap.End()
	}
	if junit != nil {
		if err := writeJUnit(f.junit, junit); err != nil {
			return err
		}
	}
	var be *runbook.BookError
	switch {
	case errors.As(runErr, &be):
		return usageErr(fmt.Errorf("%s", render.Sanitize(be.Error())))
	case refused > 0:
		return &quietError{code: exitSecurity, err: fmt.Errorf("%d step(s) failed, %d refused for security", failed, refused)}
	case errors.Is(runErr, context.DeadlineExceeded), errors.Is(runErr, context.Canceled):
		return fmt.Errorf("run: %d step(s) failed before the end: %w", failed, context.DeadlineExceeded)
	case runErr != nil && !errors.Is(runErr, runbook.ErrFailFast):
		return runErr
	case failed > 0:
		return &quietError{code: exitPeer, err: fmt.Errorf("%d step(s) failed", failed)}
	}
	return nil
}

func writeJUnit(path string, j *runbook.JUnit) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("--junit: %w", err)
	}
	if err := j.Write(f); err != nil {
		f.Close()
		return fmt.Errorf("--junit %s: %w", path, err)
	}
	return f.Close()
}

// coverage counts the methods a run called per target: per resolved
// target (discovery.EndpointKey of what the spelling resolved to, as the
// call was dialled), so an alias and the name it links to, or a socket
// path and its name, count as one, with every spelling kept.
type coverage struct {
	c         *runCaller
	spellings map[string][]string        // key → spellings, in the order first used
	methods   map[string]map[string]bool // key → methods
	endpoint  map[string]string          // key → endpoint
	pool      map[string]string          // key → the pool the calls went to
}

func newCoverage(c *runCaller) *coverage {
	return &coverage{c: c, spellings: map[string][]string{}, methods: map[string]map[string]bool{}, endpoint: map[string]string{}, pool: map[string]string{}}
}

// called is told of each method a step called on a target as the book
// spelled it, and the pool the step named: the call went to that pool,
// else the one the spelling names (stdiobus/echo), as Call sends it.
func (v *coverage) called(spelling, pool, method string) {
	key, ep := "spelling:"+spelling, ""
	if t, ok := v.c.resolvedTarget(spelling); ok {
		if pool == "" {
			pool = t.Pool
		}
		if k := discovery.EndpointKey(t.Endpoint, pool); k != "" {
			key, ep = k, k // where the spellings lead: the socket a symlink names
		}
	}
	if v.methods[key] == nil {
		v.methods[key] = map[string]bool{}
	}
	if !slices.Contains(v.spellings[key], spelling) {
		v.spellings[key] = append(v.spellings[key], spelling)
	}
	v.methods[key][method] = true
	v.endpoint[key] = ep
	v.pool[key] = pool
}

// report is the coverage of each target, with the methods its capability
// list provides.
func (v *coverage) report(ctx context.Context) []runbook.TargetCoverage {
	out := make([]runbook.TargetCoverage, 0, len(v.spellings))
	for key := range v.spellings {
		tc := runbook.TargetCoverage{Spellings: v.spellings[key], Called: sortedKeys(v.methods[key]), Endpoint: v.endpoint[key], Provided: -1}
		tc.Target = tc.Spellings[0]
		if caps, err := v.c.capabilitiesIn(ctx, tc.Target, v.pool[key]); err == nil && caps != nil {
			tc.Provided = len(caps.Methods)
			provided := map[string]bool{}
			for _, m := range caps.Methods {
				provided[m] = true
				if v.methods[key][m] {
					tc.ProvidedCalled++
				} else {
					tc.NotCalled = append(tc.NotCalled, m)
				}
			}
			for _, m := range tc.Called {
				if !provided[m] {
					tc.NotListed = append(tc.NotListed, m)
				}
			}
		}
		out = append(out, tc)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Target < out[j].Target })
	return out
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// runCaller reaches a book's targets through the one dialer, holding one
// connection per target for the run, and records every call in history as
// primalscope call does.
type runCaller struct {
	a     *app
	rec   *callRecorder
	mu    sync.Mutex
	conns map[string]*runConn
	// resolved is what each spelling of a target resolved to.
	resolved map[string]target
	caps     map[string]*capability.Capabilities
	// serve is what the step under way answers a peer's requests with.
	serve map[string]json.RawMessage
}

type runConn struct {
	conn *ipc.Conn
	t    target
}

func (c *runCaller) handler(_ context.Context, m *ipc.Message) (json.RawMessage, *ipc.RPCError, bool) {
	c.mu.Lock()
	res, ok := c.serve[m.Method]
	c.mu.Unlock()
	if ok {
		return res, nil, true
	}
	if m.Method == "client.v1.Client/Hello" {
		r, rerr := events.DefaultAnswer(m)
		return r, rerr, true
	}
	return nil, &ipc.RPCError{Code: -32601, Message: "method not found: primalscope run answers only what the step's serve: block names"}, true
}

func (c *runCaller) conn(ctx context.Context, arg string) (*runConn, error) {
	c.mu.Lock()
	rc, ok := c.conns[arg]
	c.mu.Unlock()
	if ok && rc.conn != nil {
		select {
		case <-rc.conn.Done():
		default:
			return rc, nil
		}
	}
	t, err := c.a.resolve(ctx, arg)
	if err != nil {
		return &runConn{t: t}, err
	}
	c.mu.Lock()
	if c.resolved == nil {
		c.resolved = map[string]target{}
	}
	c.resolved[arg] = t
	c.mu.Unlock()
	d, err := c.a.dialer()
	if err != nil {
		return &runConn{t: t}, err
	}
	conn, err := d.Dial(ctx, t, dial.Options{Handler: c.handler})
	if err != nil {
		return &runConn{t: t}, err
	}
	rc = &runConn{conn: conn, t: t}
	c.mu.Lock()
	c.conns[arg] = rc
	c.mu.Unlock()
	return rc, nil
}

// resolvedTarget is what a spelling of a target resolved to, when a call
// resolved it.
func (c *runCaller) resolvedTarget(arg string) (target, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.resolved[arg]
	return t, ok
}

func (c *runCaller) close(ctx context.Context) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, rc := range c.conns {
		if rc.conn != nil {
			closeConn(ctx, rc.conn)
		}
	}
}

func (c *runCaller) Call(ctx context.Context, call runbook.Call) runbook.Answer {
	limit := stepCallTimeout
	if call.Timeout > 0 {
		limit = call.Timeout // the step's own timeout, longer or shorter
	}
	cctx, cancel := context.WithTimeout(ctx, limit)
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < limit {
		cancel()
		cctx, cancel = context.WithDeadline(ctx, dl)
	}
	defer cancel()
	c.mu.Lock()
	c.serve = call.Serve
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.serve = nil
		c.mu.Unlock()
	}()
	start := time.Now()
	req := ipc.Request{Method: call.Method, Params: call.Params, SessionID: call.Session, Pool: call.Pool}
	rc, err := c.conn(cctx, call.Target)
	if err != nil {
		if rc.t.Arg != "" {
			c.rec.record(ctx, c.a.callEntry(rc.t, nil, req, nil, err, start))
		}
		return runbook.Answer{Failure: err, Outcome: outcomeOf(err), Duration: time.Since(start)}
	}
	if req.Pool == "" {
		req.Pool = rc.t.Pool
	}
	resp, err := rc.conn.Send(cctx, req)
	c.rec.record(ctx, c.a.callEntry(rc.t, rc.conn, req, resp, err, start))
	ans := runbook.Answer{Duration: time.Since(start), Outcome: outcomeOf(err)}
	if resp != nil {
		ans.Duration = resp.Elapsed
		ans.Warning = resp.Warning
	}
	var re *ipc.RPCError
	switch {
	case err == nil:
		ans.Result = resp.Result
	case errors.As(err, &re) && resp != nil:
		ans.Error = &history.RPCError{Code: re.Code, Message: re.Message, Data: re.Data}
	default:
		ans.Failure = err
	}
	return ans
}

func (c *runCaller) Capabilities(ctx context.Context, target string) (*capability.Capabilities, error) {
	return c.capabilitiesIn(ctx, target, "")
}

// capabilitiesIn is a target's capability list from a bus pool ("": the
// pool the target names, if any).
func (c *runCaller) capabilitiesIn(ctx context.Context, target, pool string) (*capability.Capabilities, error) {
	key := target + "\x00" + pool
	c.mu.Lock()
	if caps, ok := c.caps[key]; ok {
		c.mu.Unlock()
		return caps, nil
	}
	c.mu.Unlock()
	cctx, cancel := context.WithTimeout(ctx, stepCallTimeout)
	defer cancel()
	rc, err := c.conn(cctx, target)
	if err != nil {
		return nil, err
	}
	if pool == "" {
		pool = rc.t.Pool
	}
	resp, err := rc.conn.Send(cctx, ipc.Request{Method: "capabilities.list", Pool: pool})
	if err != nil {
		return nil, err
	}
	caps, err := capability.Parse(resp.Result)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.caps == nil {
		c.caps = map[string]*capability.Capabilities{}
	}
	c.caps[key] = caps
	c.mu.Unlock()
	return caps, nil
}

// Listen watches a target's events as primalscope tail does (the same
// sources, the same {source,time,kind,name,payload} objects).
func (c *runCaller) Listen(ctx context.Context, target string) (runbook.Listener, error) {
	t, err := c.a.resolve(ctx, target)
	if err != nil {
		return nil, err
	}
	d, err := c.a.dialer()
	if err != nil {
		return nil, err
	}
	spec := events.SpecForEndpoint(t.Name, t.Endpoint)
	spec.Pool, spec.Wire = t.Pool, t.Wire
	trusted, err := c.a.trustedUIDs() // an event stream's socket: owner checked as calls' are
	if err != nil {
		return nil, err
	}
	connected := make(chan struct{})
	var once sync.Once
	cfg := events.Config{
		TrustUIDs: trusted,
		Interval:  time.Hour, // no liveness polling: only what the target sends
		Insecure:  c.a.insecure,
		MaxFrame:  c.a.maxFrame,
		Dial: func(ctx context.Context, s events.Spec, trace func(ipc.TraceEvent)) (*ipc.Conn, error) {
			tt := t
			tt.Name = s.Name
			conn, err := d.Dial(ctx, tt, dial.Options{Trace: trace, IncomingBuffer: 256})
			if err == nil {
				once.Do(func() { close(connected) })
			}
			return conn, err
		},
		LivenessMethod: "-",
	}
	lctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	src := &endedSource{Source: cfg.Source(spec)}
	stream := events.Merge(lctx, []events.Source{src}, events.Options{Buffer: 1024})
	l := &runListener{stream: stream, cancel: cancel, src: src}
	// Listening starts before the call, as README says: wait for the
	// stream's connection (a socket's; WebSocket and the biomeOS API's
	// streams connect on their own), at most a second, so an event the
	// call sets off at once is not missed. A stream refused for security
	// as it connects (BTSP, a socket another user serves) is the
	// listener's error: the call is not sent.
	if !spec.BiomeOSAPI && spec.Endpoint.Transport != ipc.WS && spec.Endpoint.Transport != ipc.WSS {
		wait := time.NewTimer(time.Second)
		select {
		case <-connected:
		case <-stream.Done():
		case <-wait.C:
		case <-ctx.Done():
		}
		wait.Stop()
	}
	if err := src.refused(); err != nil {
		l.Close()
		return nil, err
	}
	return l, nil
}

// endedSource keeps the error its source ended with: a stream refused for
// security (a BTSP session frame that does not authenticate, a failed
// handshake) ends with it, and the step waiting on the stream is refused
// with it, as a call would be (exit 5).
type endedSource struct {
	events.Source
	mu  sync.Mutex
	err error
}

func (s *endedSource) Run(ctx context.Context, emit events.Emit) error {
	err := s.Source.Run(ctx, emit)
	s.mu.Lock()
	s.err = err
	s.mu.Unlock()
	return err
}

// refused is the security failure the source ended with, or nil.
func (s *endedSource) refused() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ipc.SecurityFailure(s.err) {
		return s.err
	}
	return nil
}

type runListener struct {
	stream *events.Stream
	cancel context.CancelFunc
	src    *endedSource
}

func (l *runListener) Next(ctx context.Context) (json.RawMessage, error) {
	for {
		ev, err := l.stream.Next(ctx)
		if err != nil {
			if rerr := l.src.refused(); rerr != nil && ctx.Err() == nil {
				return nil, rerr
			}
			return nil, err
		}
		if ev.Kind == events.KindLiveness && ev.Name == events.StateRefused {
			// The source ends right after saying so: its error is the
			// refusal (a security failure, exit 5), not the stream's end.
			select {
			case <-l.stream.Done():
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			if rerr := l.src.refused(); rerr != nil {
				return nil, rerr
			}
			return nil, fmt.Errorf("the event stream was refused for security: %s", ev.Payload)
		}
		if ev.Kind == events.KindNote || ev.Kind == events.KindLiveness || ev.Kind == events.KindDropped {
			continue // the listener's own notes, not the target's words
		}
		return json.Marshal(ev)
	}
}

func (l *runListener) Close() {
	l.cancel()
	l.stream.Wait()
}
