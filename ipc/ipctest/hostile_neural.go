package ipctest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
)

// NeuralHostility is a way a Neural API answers badly.
type NeuralHostility string

// The hostile Neural APIs.
const (
	// NeuralGarbage answers every method with a result of the wrong shape:
	// strings for lists, objects for strings, nulls and numbers in lists.
	NeuralGarbage NeuralHostility = "garbage"
	// NeuralFlood answers with more than any client should keep:
	// FloodEntries primals, edges, routes, dependencies and graph nodes
	// (each answer built when first asked for, some megabytes).
	NeuralFlood NeuralHostility = "flood"
	// NeuralEscapes answers well-shaped results whose names, capabilities
	// and errors carry terminal control sequences (clear screen, colour,
	// an OSC 52 clipboard write, bidi overrides, NUL, newlines).
	NeuralEscapes NeuralHostility = "escapes"
	// NeuralNumbers answers well-shaped results with impossible figures:
	// negative counts, an error rate of 7, rates of 1e308, latencies as
	// strings, fractional call counts.
	NeuralNumbers NeuralHostility = "numbers"
	// NeuralLies answers well-shaped results that contradict themselves:
	// edges and dependencies naming primals it does not report, a primal
	// that depends on itself, a route whose callee is its caller, duplicate
	// names, a graph node that depends on itself.
	NeuralLies NeuralHostility = "lies"
)

// FloodEntries is how many of everything NeuralFlood answers with: more
// than discovery keeps of one answer (discovery.MaxEntries, 100,000).
const FloodEntries = 120_000

// EscapeText is the control-laden text NeuralEscapes puts in its names.
const EscapeText = "evil\x1b[2J\x1b[31mred\x1b]52;c;cm0gLXJmIH4=\x07\u202egnp.exe\x00\nnext"

// HostileNeural returns the server config of a Neural API that answers
// lifecycle.status, topology.primals, topology.get, lifecycle.get,
// graph.list, capability.discover and capability.call the hostile way h
// (health.liveness answers alive, so it is probed and asked).
func HostileNeural(h NeuralHostility) Config {
	var answers map[string]any
	switch h {
	case NeuralGarbage:
		answers = map[string]any{
			"lifecycle.status":    map[string]any{"primals": "all of them", "count": "many", "healthy": nil},
			"topology.primals":    map[string]any{"primals": 42},
			"topology.get":        map[string]any{"nodes": "x", "edges": []any{1, nil, "y", map[string]any{"from": 5, "to": []int{1}}}},
			"lifecycle.get":       map[string]any{"name": 7, "state": map[string]any{}, "depends_on": map[string]any{"a": 1}, "metrics": "lots"},
			"graph.list":          map[string]any{"graphs": []any{nil, 3, map[string]any{"id": []int{}, "nodes": map[string]any{}, "last_run": "yesterday"}}},
			"capability.discover": map[string]any{"providers": "beardog"},
			"capability.call":     []any{"not", "a", "result"},
		}
	case NeuralFlood:
		return floodNeural(FloodEntries)
	case NeuralEscapes:
		answers = wellShaped(EscapeText, EscapeText+".sign", map[string]any{
			"calls": 3, "errors": 1, "calls_per_s": 1, "error_rate": 0.3, "latency_ms": map[string]any{"p50": 1, "p95": 2, "max": 3},
			"last_error": "-32000 " + EscapeText})
	case NeuralNumbers:
		answers = wellShaped("beardog", "crypto.sign", map[string]any{
			"calls": -5, "errors": 1.5, "calls_per_s": 1e308, "error_rate": 7, "latency_ms": map[string]any{"p50": "fast", "p95": -1, "max": nil},
			"last_call": "not a time"})
	case NeuralLies:
		answers = wellShaped("beardog", "crypto.sign", map[string]any{"calls": 1, "errors": 0})
		answers["topology.get"] = map[string]any{
			"nodes": []any{map[string]any{"id": "beardog", "name": "beardog", "state": "running"}, map[string]any{"id": "beardog", "name": "beardog", "state": "stopped"}},
			"edges": []any{
				map[string]any{"from": "ghost", "to": "beardog", "kind": "depends_on"},
				map[string]any{"from": "beardog", "to": "beardog", "kind": "depends_on"},
				map[string]any{"from": "beardog", "to": "beardog", "kind": "route", "capability": "crypto.sign", "calls": 1},
				map[string]any{"from": "beardog", "to": "nobody", "kind": "route", "capability": "crypto.sign", "calls": 1}},
		}
		answers["lifecycle.get"] = map[string]any{"name": "someone-else", "state": "running", "depends_on": []any{"beardog", "ghost", "beardog"},
			"metrics": map[string]any{"outbound": []any{map[string]any{"callee": "beardog", "capability": "crypto.sign", "calls": 1, "errors": 5}}}}
		answers["graph.list"] = map[string]any{"graphs": []any{map[string]any{"id": "g", "status": "running",
			"nodes": []any{map[string]any{"id": "n", "primal": "ghost", "depends_on": []any{"n"}, "status": "exploded"}}}}}
	default:
		panic(fmt.Sprintf("ipctest: unknown Neural hostility %q", h))
	}
	methods := map[string]HandlerFunc{
		"health.liveness": func(context.Context, json.RawMessage) (any, error) {
			return map[string]any{"alive": true, "primal": "neural-api"}, nil
		},
	}
	for m, a := range answers {
		raw, err := json.Marshal(a)
		if err != nil {
			panic(err)
		}
		methods[m] = func(context.Context, json.RawMessage) (any, error) { return json.RawMessage(raw), nil }
	}
	return Config{Methods: methods, Concurrent: true}
}

// wellShaped is a Neural API's answers in the documented shapes (see
// internal/peer), around one primal name and one capability, with route
// fields route.
func wellShaped(name, capability string, route map[string]any) map[string]any {
	r := map[string]any{"capability": capability, "callee": name}
	for k, v := range route {
		r[k] = v
	}
	in := map[string]any{"caller": name}
	for k, v := range r {
		if k != "callee" {
			in[k] = v
		}
	}
	node := map[string]any{"id": name, "name": name, "state": "running", "capabilities": []string{capability}}
	return map[string]any{
		"lifecycle.status": map[string]any{"primals": []any{map[string]any{"name": name, "state": name, "details": map[string]any{"pid": 1}}}, "count": 1, "healthy": 1},
		"topology.primals": []any{map[string]any{"name": name, "state": "running", "capabilities": []string{capability}, "depends_on": []string{name}}},
		"topology.get": map[string]any{"nodes": []any{node}, "edges": []any{
			map[string]any{"from": name, "to": name, "kind": "route", "capability": capability, "calls": route["calls"], "errors": route["errors"]}}},
		"lifecycle.get": map[string]any{"name": name, "state": "running", "depends_on": []string{name}, "capabilities": []string{capability},
			"metrics": map[string]any{"window_s": 60, "calls": route["calls"], "errors": route["errors"], "outbound": []any{r}, "inbound": []any{in}}},
		"graph.list": map[string]any{"graphs": []any{map[string]any{"id": name, "name": name, "status": "failed", "runs": 1,
			"nodes": []any{map[string]any{"id": name, "primal": name, "depends_on": []string{}, "status": "failed", "error": fmt.Sprint(route["last_error"])}}}}},
		"capability.discover": map[string]any{"capability": capability, "providers": []any{map[string]any{"name": name, "state": "running"}}},
		"capability.call":     map[string]any{"echo": name},
	}
}

// floodNeural answers with n of everything, each answer built once, when
// first asked for (written directly: encoding 120,000 maps took seconds).
func floodNeural(n int) Config {
	methods := map[string]HandlerFunc{
		"health.liveness": func(context.Context, json.RawMessage) (any, error) {
			return map[string]any{"alive": true, "primal": "neural-api"}, nil
		},
	}
	list := func(b *strings.Builder, item func(b *strings.Builder, i int)) {
		b.WriteByte('[')
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			item(b, i)
		}
		b.WriteByte(']')
	}
	primal := func(b *strings.Builder, i int) {
		fmt.Fprintf(b, `{"name":"p%06d","state":"running","details":{"pid":%d}}`, i, i)
	}
	build := map[string]func(b *strings.Builder){
		"lifecycle.status": func(b *strings.Builder) {
			b.WriteString(`{"primals":`)
			list(b, primal)
			fmt.Fprintf(b, `,"count":%d,"healthy":%d}`, n, n)
		},
		"topology.primals": func(b *strings.Builder) { list(b, primal) },
		"topology.get": func(b *strings.Builder) {
			b.WriteString(`{"nodes":`)
			list(b, func(b *strings.Builder, i int) {
				fmt.Fprintf(b, `{"id":"p%06d","name":"p%06d","state":"running","capabilities":["c%06d"]}`, i, i, i)
			})
			b.WriteString(`,"edges":`)
			list(b, func(b *strings.Builder, i int) {
				fmt.Fprintf(b, `{"from":"p%06d","to":"p%06d","kind":"route","capability":"c%06d","calls":%d}`, i, (i+1)%n, i, i)
			})
			b.WriteByte('}')
		},
		"lifecycle.get": func(b *strings.Builder) {
			b.WriteString(`{"name":"p000000","state":"running","depends_on":`)
			list(b, func(b *strings.Builder, i int) { fmt.Fprintf(b, `"p%06d"`, i) })
			b.WriteString(`,"metrics":{"window_s":60,"inbound":[],"outbound":`)
			list(b, func(b *strings.Builder, i int) {
				fmt.Fprintf(b, `{"callee":"p%06d","capability":"c%06d","calls":%d,"errors":0,"calls_per_s":1,"error_rate":0}`, i, i, i)
			})
			b.WriteString(`}}`)
		},
		"graph.list": func(b *strings.Builder) {
			b.WriteString(`{"graphs":[{"id":"flood","status":"running","nodes":`)
			list(b, func(b *strings.Builder, i int) {
				fmt.Fprintf(b, `{"id":"p%06d","primal":"p%06d","depends_on":[],"status":"completed"}`, i, i)
			})
			b.WriteString(`}]}`)
		},
		"capability.discover": func(b *strings.Builder) {
			b.WriteString(`{"providers":`)
			list(b, primal)
			b.WriteByte('}')
		},
		"capability.call": func(b *strings.Builder) { fmt.Fprintf(b, `{"blob":"%s"}`, strings.Repeat("x", n)) },
	}
	for m, f := range build {
		var once sync.Once
		var raw json.RawMessage
		methods[m] = func(context.Context, json.RawMessage) (any, error) {
			once.Do(func() {
				var b strings.Builder
				f(&b)
				raw = json.RawMessage(b.String())
			})
			return raw, nil
		}
	}
	return Config{Methods: methods, Concurrent: true}
}
