package composition

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/ecoPrimals/primalscope/internal/textsafe"
)

// ContractNode is one node of the map's JSON contract (`map --json`).
type ContractNode struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	Family  string `json:"family"`
	Node    string `json:"node"`
	Kind    string `json:"kind"`
	Health  string `json:"health"`
	Level   int    `json:"level"`
	Missing bool   `json:"missing"`
}

// ContractEdge is one edge of the map's JSON contract. The traffic
// figures are null when no source reports traffic on the edge.
type ContractEdge struct {
	From       string   `json:"from"`
	To         string   `json:"to"`
	Capability string   `json:"capability"`
	Sources    []Source `json:"sources"`
	State      State    `json:"state"`
	CallsPerS  *float64 `json:"calls_per_s"`
	ErrorRate  *float64 `json:"error_rate"`
	P95ms      *float64 `json:"p95_ms"`
}

// Contract is the map's JSON contract: {nodes, edges, cycles}, from the
// consumer (from) to the provider (to).
type Contract struct {
	Nodes  []ContractNode `json:"nodes"`
	Edges  []ContractEdge `json:"edges"`
	Cycles [][]string     `json:"cycles"`
	// OperationCycles are cycles in operation_dependencies, as method
	// paths (the node ids of those methods' primals are in Cycles too).
	OperationCycles [][]string `json:"operation_cycles"`
}

// Contract returns the graph in the shape of the JSON contract.
func (g *Graph) Contract() Contract {
	c := Contract{Nodes: make([]ContractNode, 0, len(g.Nodes)), Edges: make([]ContractEdge, 0, len(g.Edges)), Cycles: g.Cycles}
	for _, n := range g.Nodes {
		c.Nodes = append(c.Nodes, ContractNode{ID: n.ID, Name: n.Name, Family: n.Family, Node: n.Node, Kind: n.Kind,
			Health: n.Health, Level: n.Level, Missing: n.Missing})
	}
	for _, e := range g.Edges {
		ce := ContractEdge{From: e.From, To: e.To, Capability: e.Capability, Sources: e.Sources, State: e.State}
		if ce.Sources == nil {
			ce.Sources = []Source{}
		}
		if t := e.Traffic; t != nil {
			r, er := t.CallsPerS, t.ErrorRate
			ce.CallsPerS, ce.ErrorRate = &r, &er
			if t.P95ms >= 0 {
				p := t.P95ms
				ce.P95ms = &p
			}
		}
		c.Edges = append(c.Edges, ce)
	}
	if c.Cycles == nil {
		c.Cycles = [][]string{}
	}
	c.OperationCycles = g.MethodCycles
	if c.OperationCycles == nil {
		c.OperationCycles = [][]string{}
	}
	return c
}

// Need is one capability a consumer needs, with the edges to its
// providers (one edge to the missing node for a gap).
type Need struct {
	// Capability is "" for dependencies that name none.
	Capability string
	Edges      []*Edge
}

// Consumer is one consumer in the tree view, with what it needs.
type Consumer struct {
	Node  *Node
	Needs []Need
}

// Tree returns the map as the narrow view shows it: each consumer (in the
// graph's node order), each capability it needs, and the providers.
// Nodes that consume nothing are left out (see Alone).
func Tree(g *Graph) []Consumer {
	var out []Consumer
	for i := range g.Nodes {
		n := &g.Nodes[i]
		es := g.Out(n.ID)
		if len(es) == 0 {
			continue
		}
		c := Consumer{Node: n}
		for _, e := range es { // edges are sorted by from, capability, to
			if k := len(c.Needs); k == 0 || c.Needs[k-1].Capability != e.Capability {
				c.Needs = append(c.Needs, Need{Capability: e.Capability})
			}
			c.Needs[len(c.Needs)-1].Edges = append(c.Needs[len(c.Needs)-1].Edges, e)
		}
		out = append(out, c)
	}
	return out
}

// Alone returns the nodes with no edge at all.
func Alone(g *Graph) []*Node {
	var out []*Node
	for i := range g.Nodes {
		n := &g.Nodes[i]
		if len(g.out[n.ID]) == 0 && len(g.in[n.ID]) == 0 {
			out = append(out, n)
		}
	}
	return out
}

// Glyph is a state's mark, so the map reads without colour.
func Glyph(s State) string {
	switch s {
	case StateGap:
		return "✗"
	case StateDegraded:
		return "!"
	case StateUnused:
		return "∅"
	case StateUndeclared:
		return "?"
	}
	return "✓"
}

// CapabilityLabel is how an edge's capability is shown: "(depends on)"
// for edges that name none.
func CapabilityLabel(c string) string {
	if c == "" {
		return "(depends on)"
	}
	return c
}

// TrafficText is an edge's traffic in words: "1.5/s err 2% p95 12ms", or
// "no traffic reported" when no source reports any.
func TrafficText(g *Graph, e *Edge) string {
	t := e.Traffic
	if t == nil {
		if g.TrafficKnown && e.seen {
			return "no calls in the last " + g.Window.String()
		}
		return "no traffic reported"
	}
	s := fmt.Sprintf("%s/s err %.0f%%", strconv.FormatFloat(t.CallsPerS, 'f', -1, 64), 100*t.ErrorRate)
	if t.CallsPerS >= 0.01 {
		s = fmt.Sprintf("%.3g/s err %.0f%%", t.CallsPerS, 100*t.ErrorRate)
	}
	if t.P95ms >= 0 {
		s += " p95 " + Millis(t.P95ms)
	}
	return s
}

// Millis is a latency in milliseconds for people: "0.42ms", "12.3ms",
// "420ms", "2.1s".
func Millis(ms float64) string {
	switch {
	case ms < 1:
		return fmt.Sprintf("%.2fms", ms)
	case ms < 100:
		return fmt.Sprintf("%.1fms", ms)
	case ms < 1000:
		return fmt.Sprintf("%.0fms", ms)
	}
	return fmt.Sprintf("%.1fs", ms/1000)
}

var dotColor = map[State]string{StateOK: "black", StateGap: "red", StateDegraded: "orange", StateUnused: "gray", StateUndeclared: "blue"}
var dotStyle = map[State]string{StateOK: "solid", StateGap: "dashed", StateDegraded: "bold", StateUnused: "dotted", StateUndeclared: "dashed"}

// dotQuote quotes lines as one DOT string: peer text with control
// characters escaped, quotes and backslashes escaped, lines joined by
// DOT's own line break.
func dotQuote(lines ...string) string {
	for i, s := range lines {
		s = textsafe.Sanitize(s)
		s = strings.ReplaceAll(s, `\`, `\\`)
		lines[i] = strings.ReplaceAll(s, `"`, `\"`)
	}
	return `"` + strings.Join(lines, `\n`) + `"`
}

// WriteDOT writes the graph in Graphviz's DOT language: one cluster per
// group (node, family), missing capabilities as dashed red boxes, each
// edge labelled with its capability and state.
func WriteDOT(w io.Writer, g *Graph) error {
	var b strings.Builder
	b.WriteString("digraph composition {\n  rankdir=TB;\n  node [shape=box, style=rounded];\n")
	groups, order := groupNodes(g)
	for gi, key := range order {
		indent := "  "
		if key != "" {
			fmt.Fprintf(&b, "  subgraph cluster_%d {\n    label=%s;\n", gi, dotQuote(key))
			indent = "    "
		}
		for _, n := range groups[key] {
			label := []string{n.Label(), n.Health}
			attrs := ""
			switch {
			case n.Missing:
				label = []string{n.Name, "missing"}
				attrs = `, color=red, style="dashed"`
			case n.Gone:
				attrs = `, color=gray, style="dashed,rounded"`
			case n.Kind == KindYou:
				attrs = `, shape=ellipse`
			}
			if n.Step != "" {
				label = append(label, n.Step)
			}
			fmt.Fprintf(&b, "%s%s [label=%s%s];\n", indent, dotQuote(n.ID), dotQuote(label...), attrs)
		}
		if key != "" {
			b.WriteString("  }\n")
		}
	}
	for _, e := range g.Edges {
		label := []string{CapabilityLabel(e.Capability)}
		if e.State != StateOK {
			label = append(label, Glyph(e.State)+" "+string(e.State))
		}
		fmt.Fprintf(&b, "  %s -> %s [label=%s, color=%s, style=%s];\n", dotQuote(e.From), dotQuote(e.To), dotQuote(label...),
			dotColor[e.State], dotStyle[e.State])
	}
	b.WriteString("}\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// groupNodes splits the nodes by Group, in the order groups first appear.
func groupNodes(g *Graph) (map[string][]*Node, []string) {
	groups := map[string][]*Node{}
	var order []string
	for i := range g.Nodes {
		n := &g.Nodes[i]
		k := n.Group()
		if n.Missing || n.Kind == KindYou {
			k = ""
		}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], n)
	}
	return groups, order
}

// mermaidText makes s safe inside a quoted Mermaid label.
func mermaidText(s string) string {
	s = textsafe.Sanitize(s)
	r := strings.NewReplacer(`"`, "#quot;", "<", "#lt;", ">", "#gt;", "\n", " ", "`", "#96;", "|", "#124;")
	return r.Replace(s)
}

// WriteMermaid writes the graph as a Mermaid flowchart: one subgraph per
// group, consumers above providers, gaps dashed.
func WriteMermaid(w io.Writer, g *Graph) error {
	var b strings.Builder
	b.WriteString("flowchart TD\n")
	id := make(map[string]string, len(g.Nodes))
	for i := range g.Nodes {
		id[g.Nodes[i].ID] = fmt.Sprintf("n%d", i)
	}
	groups, order := groupNodes(g)
	for gi, key := range order {
		indent := "  "
		if key != "" {
			fmt.Fprintf(&b, "  subgraph g%d[\"%s\"]\n", gi, mermaidText(key))
			indent = "    "
		}
		for _, n := range groups[key] {
			label := n.Label() + " · " + n.Health
			if n.Missing {
				label = n.Name + " · missing"
			}
			if n.Step != "" {
				label += " · " + n.Step
			}
			fmt.Fprintf(&b, "%s%s[\"%s\"]\n", indent, id[n.ID], mermaidText(label))
		}
		if key != "" {
			b.WriteString("  end\n")
		}
	}
	var styles []string
	for i, e := range g.Edges {
		label := CapabilityLabel(e.Capability)
		if e.State != StateOK {
			label += " · " + string(e.State)
		}
		arrow := "-->"
		if e.State == StateGap || e.State == StateUnused {
			arrow = "-.->"
		}
		fmt.Fprintf(&b, "  %s %s|\"%s\"| %s\n", id[e.From], arrow, mermaidText(label), id[e.To])
		if c := dotColor[e.State]; e.State != StateOK {
			styles = append(styles, fmt.Sprintf("  linkStyle %d stroke:%s", i, c))
		}
	}
	for _, s := range styles {
		b.WriteString(s + "\n")
	}
	var missing []string
	for i := range g.Nodes {
		if g.Nodes[i].Missing {
			missing = append(missing, id[g.Nodes[i].ID])
		}
	}
	if len(missing) > 0 {
		b.WriteString("  classDef missing stroke:red,stroke-dasharray:4\n")
		fmt.Fprintf(&b, "  class %s missing\n", strings.Join(missing, ","))
	}
	_, err := io.WriteString(w, b.String())
	return err
}
