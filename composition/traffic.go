package composition

import (
	"sort"
	"strings"
	"time"

	"github.com/ecoPrimals/primalscope/discovery/capability"
)

// SeriesLen is how many buckets a Traffic's Series has over its window.
const SeriesLen = 12

// Traffic is an edge's traffic over the sliding window.
type Traffic struct {
	// CallsPerS is the call rate over the window.
	CallsPerS float64 `json:"calls_per_s"`
	// ErrorRate is the share of calls that failed (0–1).
	ErrorRate float64 `json:"error_rate"`
	// P95ms is the 95th percentile latency in milliseconds; negative when
	// the source reported no latency.
	P95ms float64 `json:"p95_ms"`
	// Calls and Errors count the calls seen in the window (0 for figures
	// a source reported already summed up).
	Calls  int `json:"calls"`
	Errors int `json:"errors"`
	// Series splits the window into SeriesLen buckets, oldest first, for
	// sparklines (nil for figures reported already summed up).
	Series []Bucket `json:"series,omitempty"`
	// Reported is true when the figures came from a source, not counted
	// from calls.
	Reported bool `json:"reported,omitempty"`
}

// Bucket is one slice of a traffic window.
type Bucket struct {
	Calls  int     `json:"calls"`
	Errors int     `json:"errors"`
	P95ms  float64 `json:"p95_ms"`
}

// Rates returns the series as calls per second, error rates and p95
// latencies, for sparklines.
func (t *Traffic) Rates(window time.Duration) (calls, errs, p95 []float64) {
	if t == nil || len(t.Series) == 0 {
		return nil, nil, nil
	}
	w := window.Seconds() / float64(len(t.Series))
	for _, b := range t.Series {
		r, e := 0.0, 0.0
		if w > 0 {
			r = float64(b.Calls) / w
		}
		if b.Calls > 0 {
			e = float64(b.Errors) / float64(b.Calls)
		}
		calls, errs, p95 = append(calls, r), append(errs, e), append(p95, b.P95ms)
	}
	return calls, errs, p95
}

// MethodMatches reports whether a call to method m uses the consumed
// capability c (the method itself, a method under it, or its domain).
func MethodMatches(m, c string) bool {
	if m == c || strings.HasPrefix(m, c+".") {
		return true
	}
	d, _ := capability.SplitMethod(m)
	return d == c
}

// attach finds the edge between from and to that a call to method m
// belongs to: the declared capability it uses (the longest), else a new
// observed edge of its own (undeclared). A dependency without capability
// (the orchestrator's depends_on) takes only calls that name no method:
// a named method nobody declared must show as undeclared, not vanish into
// the dependency.
func (b *builder) attach(from, to, m string) *Edge {
	best, bestLen := -1, -1
	for _, i := range b.pairs[[2]string{from, to}] {
		e := &b.g.Edges[i]
		switch {
		case e.Capability == m:
			best, bestLen = i, 1<<30
		case e.Capability != "" && MethodMatches(m, e.Capability) && len(e.Capability) > bestLen:
			best, bestLen = i, len(e.Capability)
		case e.Capability == "" && m == "" && bestLen < 0:
			best, bestLen = i, 0
		}
	}
	if best < 0 {
		return b.edge(from, to, m, SrcObserved)
	}
	e := &b.g.Edges[best]
	if !e.Has(SrcObserved) {
		e.Sources = append(e.Sources, SrcObserved)
	}
	return e
}

func (b *builder) callEnds(from, to string, alt ...string) (string, string) {
	var f string
	if from == YouID {
		f = YouID
		if _, ok := b.g.index[YouID]; !ok {
			b.addNode(Node{ID: YouID, Name: "primalscope (you)", Kind: KindYou, Health: string("live")})
		}
	} else {
		f = b.resolveOrAdd(from, "")
	}
	if c, ok := strings.CutPrefix(to, "missing:"); ok && c != "" {
		// Calls into a gap: the missing capability's node.
		b.addNode(Node{ID: to, Name: c, Kind: KindMissing, Health: HealthMissing, Missing: true})
		return f, to
	}
	if b.resolve(to, f) == "" {
		for _, a := range alt {
			if id := b.resolve(a, f); id != "" {
				return f, id
			}
		}
	}
	return f, b.resolveOrAdd(to, f)
}

func (b *builder) observed() {
	start := b.in.Now.Add(-b.in.Window)
	bucket := max(b.in.Window/SeriesLen, 1)
	type acc struct {
		lat     []time.Duration
		calls   int
		errs    int
		buckets [SeriesLen]struct {
			calls, errs int
			lat         []time.Duration
		}
	}
	accs := map[int]*acc{}
	b.seen = map[int]bool{}
	b.callers = map[string]bool{}
	for _, c := range b.in.Calls {
		from, to := b.callEnds(c.From, c.To, c.Alt...)
		if from == "" || to == "" || from == to {
			continue
		}
		if from != YouID {
			b.trafficKnown = true
			b.callers[from] = true
		}
		e := b.attach(from, to, c.Method)
		i := b.edgeIndex(e)
		b.seen[i] = true
		if c.At.Before(start) || c.At.After(b.in.Now) {
			continue
		}
		a := accs[i]
		if a == nil {
			a = &acc{}
			accs[i] = a
		}
		a.calls++
		a.lat = append(a.lat, c.Latency)
		k := int(c.At.Sub(start) / bucket)
		if k >= SeriesLen {
			k = SeriesLen - 1
		}
		a.buckets[k].calls++
		a.buckets[k].lat = append(a.buckets[k].lat, c.Latency)
		if c.Failed {
			a.errs++
			a.buckets[k].errs++
		}
	}
	for i, a := range accs {
		t := &Traffic{Calls: a.calls, Errors: a.errs, CallsPerS: float64(a.calls) / b.in.Window.Seconds(),
			P95ms: p95(a.lat), Series: make([]Bucket, SeriesLen)}
		if a.calls > 0 {
			t.ErrorRate = float64(a.errs) / float64(a.calls)
		}
		for k, bk := range a.buckets {
			t.Series[k] = Bucket{Calls: bk.calls, Errors: bk.errs, P95ms: p95(bk.lat)}
		}
		b.g.Edges[i].Traffic = t
	}
	for _, r := range b.in.Routes {
		from, to := b.callEnds(r.From, r.To)
		if from == "" || to == "" || from == to {
			continue
		}
		b.trafficKnown = true
		b.callers[from] = true
		var e *Edge
		if r.Capability == "" {
			b.dependency(from, to, "", SrcObserved)
			e = &b.g.Edges[b.pairs[[2]string{from, to}][0]]
		} else {
			e = b.attach(from, to, r.Capability)
		}
		i := b.edgeIndex(e)
		if r.CallsPerS > 0 {
			b.seen[i] = true
		}
		if e.Traffic == nil {
			e.Traffic = &Traffic{CallsPerS: r.CallsPerS, ErrorRate: r.ErrorRate, P95ms: r.P95ms, Reported: true}
		}
	}
	if b.in.TrafficReported {
		b.trafficKnown = true
	}
}

func (b *builder) edgeIndex(e *Edge) int {
	for _, i := range b.pairs[[2]string{e.From, e.To}] {
		if b.g.Edges[i].Capability == e.Capability {
			return i
		}
	}
	return -1
}

// p95 returns the 95th percentile in milliseconds (0 for none).
func p95(l []time.Duration) float64 {
	if len(l) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), l...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	k := (len(s)*95 + 99) / 100
	if k < 1 {
		k = 1
	}
	return float64(s[k-1].Microseconds()) / 1000
}
