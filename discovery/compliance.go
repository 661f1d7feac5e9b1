package discovery

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ecoPrimals/primalscope/discovery/capability"
	"github.com/ecoPrimals/primalscope/internal/human"
	"github.com/ecoPrimals/primalscope/ipc"
)

// Result is the outcome of one audit point.
type Result string

// Audit point results.
const (
	Pass Result = "pass"
	Fail Result = "fail"
	// Skip: not verified (e.g. callability without --call-all); it does
	// not lower the level.
	Skip Result = "skip"
	// Warn: a SHOULD that is not met; it does not lower the level.
	Warn Result = "warn"
	// Info: a fact worth showing (no judgement).
	Info Result = "info"
)

// Point is one line of the Capability Wire Standard audit checklist, or of
// the extra checks (naming, transport security, signatures).
type Point struct {
	// Level is the compliance level the point belongs to (0 for extra checks).
	Level  int    `json:"level"`
	ID     string `json:"id"`
	Text   string `json:"text"`
	Result Result `json:"result"`
	Why    string `json:"why,omitempty"`
}

// Report is the audit of one target.
type Report struct {
	Target  string `json:"target"`
	Address string `json:"address,omitempty"`
	State   State  `json:"state"`
	// Level is the highest level whose points (and all lower levels')
	// pass; skipped points count as passed.
	Level  int     `json:"level"`
	Points []Point `json:"points"`
	// CalledAll is true when every advertised method was called.
	CalledAll bool `json:"called_all,omitempty"`
}

// AuditOptions tune Audit.
type AuditOptions struct {
	// Calls are the answers of calling every advertised method (from
	// CallAll); nil means callability is not verified.
	Calls map[string]CallResult
}

// The naming rules, compiled on first use rather than at every start of
// the binary (a one-shot call never audits).
var (
	methodNameRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$`)
	})
	primalNameRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*$`)
	})
)

// ValidMethodName reports whether name follows the Semantic Method Naming
// Standard: <domain>.<operation>, lowercase, dotted, underscores for words.
func ValidMethodName(name string) bool { return methodNameRE().MatchString(name) }

// ValidPrimalName reports whether name is a canonical primal name:
// lowercase, no spaces.
func ValidPrimalName(name string) bool { return primalNameRE().MatchString(name) }

// Audit judges a probed target against the Capability Wire Standard audit
// checklist, level 1 to 3, point by point, plus naming rules,
// transport_security and the signed announcement. It does no I/O.
func Audit(t *Target, opts AuditOptions) *Report {
	r := &Report{Target: t.Name, Address: t.Address, State: t.State()}
	p := t.Probe
	add := func(level int, id, text string, res Result, why string) {
		r.Points = append(r.Points, Point{Level: level, ID: id, Text: text, Result: res, Why: why})
	}
	owner := t.ForeignOwner()
	for _, w := range t.Warnings {
		if owner != nil && w == OwnerWarning(owner) {
			add(0, "security.owner", "Served by you, root or a user you trust", Warn, w)
			continue
		}
		add(0, "security.permissions", "Only its owner can reach the socket", Warn, w)
	}
	if p == nil || p.State != StateLive || p.Wire == WireHTTP {
		why := "not reachable"
		switch {
		case p != nil && p.State == StateLive:
			why = "an HTTP API (the biomeOS API: riboCipher prefix, then HTTP), not a JSON-RPC peer"
		case t.NoProbe:
			why = "not probed: " + strings.Join(t.Notes, "; ")
		case p != nil && p.State == StateLocked:
			why = "the peer demands a BTSP handshake before JSON-RPC"
		case p != nil && p.Err != "":
			why = string(p.State) + ": " + p.Err
		case p != nil:
			why = string(p.State)
		}
		add(1, "l1.reachable", "capabilities.list responds to JSON-RPC probe over UDS", Fail, why)
		if p != nil && p.State == StateLocked {
			auditBTSP(t, add)
		}
		return r
	}
	c := p.Capabilities
	calls := p.Calls

	// Level 1 (Routable)
	switch {
	case p.CapsMethod == "capabilities.list":
		add(1, "l1.caps_responds", "capabilities.list responds to JSON-RPC probe over UDS", Pass, "")
	case p.CapsMethod != "":
		add(1, "l1.caps_responds", "capabilities.list responds to JSON-RPC probe over UDS", Pass, "only the alias "+p.CapsMethod+" answered")
	default:
		add(1, "l1.caps_responds", "capabilities.list responds to JSON-RPC probe over UDS", Fail, callWhy(calls, "capabilities.list", "capability.list"))
	}
	switch {
	case c == nil:
		add(1, "l1.caps_parseable", "Response parseable by biomeOS (any format)", Fail, "no capabilities answer")
	case c.Format == capability.FormatUnknown:
		add(1, "l1.caps_parseable", "Response parseable by biomeOS (any format)", Fail, "no method list in any known format")
	default:
		add(1, "l1.caps_parseable", "Response parseable by biomeOS (any format)", Pass, "format "+string(c.Format))
	}
	if c != nil && len(c.Methods) > 0 {
		add(1, "l1.has_methods", "At least one callable method is advertised", Pass, fmt.Sprintf("%d methods", len(c.Methods)))
	} else {
		add(1, "l1.has_methods", "At least one callable method is advertised", Fail, "no methods advertised")
	}
	lv := calls["health.liveness"]
	switch {
	case lv.OK && p.Liveness != nil && p.Liveness.Alive:
		add(1, "l1.liveness", `health.liveness responds with {status: "alive"} or {alive: true}`, Pass, "")
	case lv.OK:
		add(1, "l1.liveness", `health.liveness responds with {status: "alive"} or {alive: true}`, Fail, "answered, but not alive")
	default:
		add(1, "l1.liveness", `health.liveness responds with {status: "alive"} or {alive: true}`, Fail, callWhy(calls, "health.liveness"))
	}

	// Level 2 (Standard)
	has := func(k string) bool { return contains(p.CapsKeys, k) }
	if c != nil && c.Primal != "" && has("primal") {
		add(2, "l2.primal", `result contains "primal" field (canonical name)`, Pass, c.Primal)
	} else {
		add(2, "l2.primal", `result contains "primal" field (canonical name)`, Fail, "missing")
	}
	if c != nil && c.Version != "" && has("version") {
		add(2, "l2.version", `result contains "version" field (SemVer)`, Pass, c.Version)
	} else {
		add(2, "l2.version", `result contains "version" field (SemVer)`, Fail, "missing")
	}
	if c != nil && c.Format == capability.FormatStandard && has("methods") {
		add(2, "l2.methods", `result contains "methods" flat string array`, Pass, "")
	} else {
		why := "missing"
		if c != nil {
			why = "format " + string(c.Format) + ", not the {primal, version, methods} envelope"
		}
		add(2, "l2.methods", `result contains "methods" flat string array`, Fail, why)
	}
	switch {
	case c == nil:
		add(2, "l2.callable", `Every entry in "methods" is callable`, Fail, "no methods")
	case opts.Calls == nil:
		add(2, "l2.callable", `Every entry in "methods" is callable`, Skip, "not verified: --call-all calls every method (may have side effects)")
	default:
		r.CalledAll = true
		var bad, unproven []string
		for _, m := range c.Methods {
			cr, ok := opts.Calls[m]
			if ok && cr.Refused() != "" {
				// The peer said it did not process the call: that proves
				// nothing about the method, either way.
				unproven = append(unproven, m+" ("+cr.Refused()+")")
				continue
			}
			if !ok || !cr.Implemented() {
				why := "not called"
				if ok {
					why = "method not found"
					if cr.Err != "" {
						why = cr.Err
					}
				}
				bad = append(bad, m+" ("+why+")")
			}
		}
		switch {
		case len(bad) == 0 && len(unproven) > 0:
			add(2, "l2.callable", `Every entry in "methods" is callable`, Skip,
				fmt.Sprintf("not proven: the peer refused %d call(s) unprocessed: %s", len(unproven), listWhy(unproven)))
		case len(bad) == 0:
			add(2, "l2.callable", `Every entry in "methods" is callable`, Pass, fmt.Sprintf("%d methods called", len(c.Methods)))
		default:
			add(2, "l2.callable", `Every entry in "methods" is callable`, Fail, listWhy(bad))
		}
	}
	if c != nil {
		var bad []string
		for _, m := range c.Methods {
			if !ValidMethodName(m) {
				bad = append(bad, m)
			}
		}
		if len(bad) == 0 {
			add(2, "l2.naming", "Method names follow domain.operation dotted convention", Pass, "")
		} else {
			add(2, "l2.naming", "Method names follow domain.operation dotted convention", Fail, listWhy(bad))
		}
	} else {
		add(2, "l2.naming", "Method names follow domain.operation dotted convention", Fail, "no methods")
	}
	id := p.Identity
	switch {
	case id != nil && id.Method == capability.MethodIdentityGet && id.Primal != "" && id.Version != "":
		add(2, "l2.identity", "identity.get implemented and returns {primal, version}", Pass, "")
	case id != nil && id.Method == capability.MethodIdentity:
		add(2, "l2.identity", "identity.get implemented and returns {primal, version}", Fail, "only the older identity method answers")
	case id != nil:
		add(2, "l2.identity", "identity.get implemented and returns {primal, version}", Fail, "answer lacks primal or version")
	default:
		add(2, "l2.identity", "identity.get implemented and returns {primal, version}", Fail, callWhy(calls, "identity.get", "identity"))
	}
	var missing []string
	for _, m := range []string{"health.liveness", "health.check", "health.readiness"} {
		if cr, ok := calls[m]; !ok || !cr.Implemented() {
			missing = append(missing, m)
		}
	}
	if len(missing) == 0 {
		add(2, "l2.health_triad", "health.liveness, health.check, health.readiness all implemented", Pass, "")
	} else {
		add(2, "l2.health_triad", "health.liveness, health.check, health.readiness all implemented", Fail, "missing: "+strings.Join(missing, ", "))
	}

	// Level 3 (Composable)
	groupsOK := c != nil && len(c.Provided) > 0
	if groupsOK {
		for _, g := range c.Provided {
			if g.Type == "" || len(g.Methods) == 0 {
				groupsOK = false
			}
		}
	}
	switch {
	case groupsOK:
		add(3, "l3.provided", "provided_capabilities grouping present with type + methods per group", Pass, fmt.Sprintf("%d groups", len(c.Provided)))
	case c != nil && len(c.Provided) > 0:
		add(3, "l3.provided", "provided_capabilities grouping present with type + methods per group", Fail, "a group lacks type or methods")
	default:
		add(3, "l3.provided", "provided_capabilities grouping present with type + methods per group", Fail, "absent")
	}
	if c != nil && (c.Consumed != nil || has("consumed_capabilities")) {
		add(3, "l3.consumed", "consumed_capabilities lists all cross-primal dependencies", Pass, fmt.Sprintf("%d declared", len(c.Consumed)))
	} else {
		add(3, "l3.consumed", "consumed_capabilities lists all cross-primal dependencies", Fail, "absent")
	}
	if c != nil && (c.CostEstimates != nil || has("cost_estimates")) {
		add(3, "l3.costs", "cost_estimates present for high-cost methods", Pass, fmt.Sprintf("%d estimates", len(c.CostEstimates)))
	} else {
		add(3, "l3.costs", "cost_estimates present for high-cost methods", Fail, "absent")
	}
	if c != nil && (c.OperationDependencies != nil || has("operation_dependencies")) {
		add(3, "l3.deps", "operation_dependencies present for methods with prerequisites", Pass, fmt.Sprintf("%d methods with prerequisites", len(c.OperationDependencies)))
	} else {
		add(3, "l3.deps", "operation_dependencies present for methods with prerequisites", Fail, "absent")
	}

	// Extra checks: naming of the primal, identity consistency, transport
	// security, signature.
	if c != nil && c.Primal != "" {
		if ValidPrimalName(c.Primal) {
			add(0, "primal_name", "Primal name is canonical (lowercase, no spaces)", Pass, "")
		} else {
			add(0, "primal_name", "Primal name is canonical (lowercase, no spaces)", Warn, fmt.Sprintf("%q", human.Clip(c.Primal, 60)))
		}
		if id != nil && id.Primal != "" && id.Primal != c.Primal {
			add(0, "identity_match", "identity.get and capabilities.list name the same primal", Warn,
				fmt.Sprintf("%q vs %q", human.Clip(id.Primal, 60), human.Clip(c.Primal, 60)))
		}
	}
	auditBTSP(t, add)
	if c != nil {
		switch c.Signature.State {
		case capability.Verified:
			add(0, "signature", "signed_announcement verifies", Pass, "key "+human.Clip(c.Signature.PublicKey, 16))
		case capability.Invalid:
			add(0, "signature", "signed_announcement verifies", Fail, c.Signature.Reason)
		default:
			add(0, "signature", "signed_announcement verifies", Info, "no signed_announcement (optional)")
		}
	}
	r.Level = levelOf(r.Points)
	return r
}

// auditBTSP adds the transport_security points.
func auditBTSP(t *Target, add func(int, string, string, Result, string)) {
	p := t.Probe
	var ts *capability.TransportSecurity
	if p != nil && p.Capabilities != nil {
		ts = p.Capabilities.TransportSecurity
	}
	const text = "transport_security says whether BTSP is required"
	switch {
	case ts != nil:
		why := fmt.Sprintf("btsp_required=%v", ts.RequiresBTSP())
		if ts.BTSPVersion != "" {
			why += ", btsp_version " + ts.BTSPVersion
		}
		if ts.CleartextAvailable != nil {
			why += fmt.Sprintf(", cleartext_available=%v", *ts.CleartextAvailable)
		}
		add(0, "transport_security", text, Pass, why)
		if ts.RequiresBTSP() && p.State == StateLive && !p.Secured {
			add(0, "transport_security_honoured", "A socket that says BTSP is required refuses cleartext", Warn,
				"btsp_required is true, yet it answered JSON-RPC without a handshake")
		}
	case t.Family != "" || (p != nil && p.BTSPRequired):
		add(0, "transport_security", text, Warn, "family-scoped or BTSP socket without transport_security (SHOULD)")
	}
	if p != nil && p.State == StateLocked {
		if p.BTSPRejection != nil && (p.BTSPRejection.Code == -32600 || p.BTSPRejection.Code == -32000) {
			add(0, "btsp_rejection", "Non-BTSP connection answered with a JSON-RPC error before the drop", Pass,
				fmt.Sprintf("%d %s", p.BTSPRejection.Code, human.Clip(p.BTSPRejection.Message, 60)))
		} else {
			add(0, "btsp_rejection", "Non-BTSP connection answered with a JSON-RPC error before the drop", Warn, "no rejection error object")
		}
	}
}

func levelOf(points []Point) int {
	for l := 1; l <= 3; l++ {
		for _, p := range points {
			if p.Level == l && p.Result == Fail {
				return l - 1
			}
		}
	}
	return 3
}

func callWhy(calls map[string]CallResult, methods ...string) string {
	var parts []string
	for _, m := range methods {
		cr, ok := calls[m]
		switch {
		case !ok:
			parts = append(parts, m+": not asked")
		case cr.Err != "":
			parts = append(parts, m+": "+cr.Err)
		case isMethodNotFound(cr.Code, cr.Message):
			parts = append(parts, m+": method not found")
		case !cr.OK:
			parts = append(parts, fmt.Sprintf("%s: error %d %s", m, cr.Code, cr.Message))
		}
	}
	return strings.Join(parts, "; ")
}

func listWhy(items []string) string {
	if len(items) > 5 {
		return strings.Join(items[:5], ", ") + fmt.Sprintf(" and %d more", len(items)-5)
	}
	return strings.Join(items, ", ")
}

// CallAll calls every method t advertises with empty params, to prove each
// is callable (see CallMethods), over a connection of its own made with
// sec as the prober makes them: a family-scoped target (see FamilyScoped)
// gets nothing in cleartext whatever it says. Methods can have side
// effects: only do this when the user asked for it. The CLI dials through
// its one dialer (internal/dial) and calls CallMethods itself.
func CallAll(ctx context.Context, t *Target, timeout time.Duration, sec ipc.Security) (map[string]CallResult, error) {
	if t.Probe == nil || t.Probe.Capabilities == nil {
		return nil, fmt.Errorf("%s: no capabilities to call", t.Name)
	}
	wire := ipc.WireJSONRPC
	if t.Wire() == "lean" {
		wire = ipc.WireLean
	}
	c, err := ipc.Dial(ctx, t.Endpoint, ipc.Options{Wire: wire, ConnectTimeout: connectTimeoutFor(t.Endpoint, ProbeOptions{}) * 4, Endpoint: t.Address, IncomingBuffer: 16,
		Security: targetSecurity(sec, t)})
	if err != nil {
		return nil, fmt.Errorf("call-all %s: %w", t.Name, err)
	}
	defer c.Close()
	return CallMethods(ctx, c, t.Probe.Capabilities.Methods, t.Pool, timeout), nil
}

// learnFirst are methods without side effects, one of which CallMethods
// sends alone first when the target advertises it.
var learnFirst = []string{"health.liveness", "identity.get", "capabilities.list", "health.check", "health.readiness"}

// CallMethods calls each method with empty params over c (routed to pool
// on a stdio Bus), each bounded by timeout, and says how each answered.
// One call goes alone first (a harmless one when advertised): its answer
// settles how the connection speaks (the riboCipher prefix learned from a
// -32002, or a BTSP demand, the peer proving it processed nothing), so the
// rest, sent a few at a time, go out the way the peer wants. A call the
// peer refuses unprocessed is marked so (CallResult.Refused): it proves
// neither that the method exists nor that it does not. No request is
// sent twice except by the connection itself, on such proof.
func CallMethods(ctx context.Context, c *ipc.Conn, methods []string, pool string, timeout time.Duration) map[string]CallResult {
	if timeout <= 0 {
		timeout = DefaultStaleTimeout
	}
	out := map[string]CallResult{}
	var mu sync.Mutex
	call := func(m string) {
		cctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		start := time.Now()
		resp, err := c.Send(cctx, ipc.Request{Method: m, Params: json.RawMessage("{}"), Pool: pool})
		cr := CallResult{Latency: time.Since(start)}
		switch {
		case resp != nil && resp.Error != nil:
			cr.Code, cr.Message = resp.Error.Code, human.Clip(resp.Error.Message, 256)
		case err != nil:
			cr.Err = describeCallErr(err)
		default:
			cr.OK = true
		}
		mu.Lock()
		out[m] = cr
		mu.Unlock()
	}
	first := -1
	for _, l := range learnFirst {
		if i := slices.Index(methods, l); i >= 0 {
			first = i
			break
		}
	}
	if first < 0 && len(methods) > 0 {
		first = 0
	}
	if first >= 0 {
		call(methods[first])
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	asked := map[string]bool{}
	if first >= 0 {
		asked[methods[first]] = true
	}
	for _, m := range methods {
		if asked[m] {
			continue // listed twice: called once
		}
		asked[m] = true
		wg.Add(1)
		sem <- struct{}{}
		go func(m string) {
			defer func() { <-sem; wg.Done() }()
			call(m)
		}(m)
	}
	wg.Wait()
	return out
}

// Need is one consumed capability and who provides it.
type Need struct {
	Capability string   `json:"capability"`
	Consumers  []string `json:"consumers"`
	Providers  []string `json:"providers,omitempty"`
	// Registered names primals a registry says provide it (ipc.discover)
	// though no reachable target advertises it; filled by callers that
	// ask (see AskProviders).
	Registered []string `json:"registered,omitempty"`
}

// Composition is the composition check across targets: every consumed
// capability provided by someone, the surface, and dependency cycles.
type Composition struct {
	// Needs lists every consumed capability with its consumers and providers.
	Needs []Need `json:"needs"`
	// Gaps are the needs nobody provides.
	Gaps []Need `json:"gaps"`
	// Surface is the union of all methods minus all consumed capabilities.
	Surface []string `json:"surface"`
	// Cycles are cycles in operation_dependencies, each as a method path
	// ending where it started.
	Cycles [][]string `json:"cycles"`
	// Complete is true when there are no gaps and no cycles.
	Complete bool `json:"complete"`
}

// Compose runs the composition check over the targets that answered with
// capabilities (and, for providers, what registries say unprobed targets
// offer). A consumed entry is provided by a target that advertises that
// exact method, a method under it ("storage.artifact" by
// "storage.artifact.store"), or a domain or capability of that name.
func Compose(targets []*Target) Composition {
	type prov struct {
		name    string
		methods map[string]bool
		domains map[string]bool
	}
	var provs []prov
	consumers := map[string][]string{}
	deps := map[string][]string{}
	surface := map[string]bool{}
	for _, t := range targets {
		pv := prov{name: t.Name, methods: map[string]bool{}, domains: map[string]bool{}}
		for _, c := range t.Capabilities {
			pv.domains[c] = true
		}
		if t.Probe != nil && t.Probe.Capabilities != nil && t.State() == StateLive {
			c := t.Probe.Capabilities
			for _, m := range c.Methods {
				pv.methods[m] = true
				d, _ := capability.SplitMethod(m)
				pv.domains[d] = true
				surface[m] = true
			}
			for _, g := range c.Provided {
				pv.domains[g.Type] = true
			}
			for _, n := range c.Consumed {
				if !contains(consumers[n], t.Name) {
					consumers[n] = append(consumers[n], t.Name)
				}
			}
			for m, pre := range c.OperationDependencies {
				deps[m] = append(deps[m], pre...)
			}
		}
		provs = append(provs, pv)
	}
	var comp Composition
	for n, cs := range consumers {
		need := Need{Capability: n, Consumers: cs}
		sort.Strings(need.Consumers)
		for _, pv := range provs {
			ok := pv.methods[n] || pv.domains[n]
			if !ok && len(pv.methods) == 0 {
				// Known only from a registry's capability list: a
				// provider of the domain is taken to provide its methods.
				d, _ := capability.SplitMethod(n)
				ok = pv.domains[d]
			}
			if !ok {
				for m := range pv.methods {
					if strings.HasPrefix(m, n+".") {
						ok = true
						break
					}
				}
			}
			if ok && !contains(need.Providers, pv.name) {
				need.Providers = append(need.Providers, pv.name)
			}
		}
		sort.Strings(need.Providers)
		comp.Needs = append(comp.Needs, need)
		if len(need.Providers) == 0 {
			comp.Gaps = append(comp.Gaps, need)
		}
		delete(surface, n)
	}
	sort.Slice(comp.Needs, func(i, j int) bool { return comp.Needs[i].Capability < comp.Needs[j].Capability })
	sort.Slice(comp.Gaps, func(i, j int) bool { return comp.Gaps[i].Capability < comp.Gaps[j].Capability })
	for m := range surface {
		comp.Surface = append(comp.Surface, m)
	}
	sort.Strings(comp.Surface)
	comp.Cycles = FindCycles(deps)
	comp.Needs = nonNilNeeds(comp.Needs)
	comp.Gaps = nonNilNeeds(comp.Gaps)
	if comp.Surface == nil {
		comp.Surface = []string{}
	}
	if comp.Cycles == nil {
		comp.Cycles = [][]string{}
	}
	comp.Complete = len(comp.Gaps) == 0 && len(comp.Cycles) == 0
	return comp
}

func nonNilNeeds(n []Need) []Need {
	if n == nil {
		return []Need{}
	}
	return n
}

// FindCycles returns the cycles of a dependency graph (method →
// prerequisites), each once, as a path that ends where it starts, rotated
// to begin at its smallest method. At most 100 are returned.
func FindCycles(deps map[string][]string) [][]string {
	const (
		white = 0
		grey  = 1
		black = 2
	)
	color := map[string]int{}
	var stack []string
	at := map[string]int{} // a grey node's place in stack
	var out [][]string
	seen := map[string]bool{}
	nodes := slices.Sorted(maps.Keys(deps))
	var visit func(n string, depth int)
	visit = func(n string, depth int) {
		if depth > 10000 || len(out) >= 100 {
			return
		}
		color[n] = grey
		at[n] = len(stack)
		stack = append(stack, n)
		pre := append([]string(nil), deps[n]...)
		sort.Strings(pre)
		for _, m := range pre {
			switch color[m] {
			case white:
				visit(m, depth+1)
			case grey:
				if len(out) >= 100 {
					continue // enough named: the walk only finishes colouring
				}
				i, ok := at[m] // found in O(1): a long stack and many back edges made this quadratic
				if !ok {
					continue
				}
				cyc := append([]string(nil), stack[i:]...)
				// rotate to the smallest element for a canonical form
				min := 0
				for j := range cyc {
					if cyc[j] < cyc[min] {
						min = j
					}
				}
				cyc = append(cyc[min:], cyc[:min]...)
				key := strings.Join(cyc, "\x00")
				if !seen[key] {
					seen[key] = true
					out = append(out, append(cyc, cyc[0]))
				}
			}
		}
		stack = stack[:len(stack)-1]
		delete(at, n)
		color[n] = black
	}
	for _, n := range nodes {
		if color[n] == white {
			visit(n, 0)
		}
	}
	return out
}
