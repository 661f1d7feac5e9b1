package composition

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/ecoPrimals/primalscope/discovery"
)

// hostileGraph has peer text that would break DOT or Mermaid, or reach
// the terminal, if it were copied as is.
func hostileGraph() *Graph {
	evil := "ev\"il\\\n\x1b[31m}];x->y;{|`<b>"
	a := tgt(evil, discovery.StateLive, []string{"a.m"}, []string{"b.m", "gone." + evil})
	a.Family = "fam\"\n"
	b := tgt("b", discovery.StateStale, []string{"b.m"}, nil)
	return Build(Inputs{Targets: []*discovery.Target{a, b}})
}

func TestDOTAndMermaidEscapeHostileText(t *testing.T) {
	g := hostileGraph()
	var dot, mer bytes.Buffer
	if err := WriteDOT(&dot, g); err != nil {
		t.Fatal(err)
	}
	if err := WriteMermaid(&mer, g); err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{"dot": dot.String(), "mermaid": mer.String()} {
		if strings.ContainsRune(out, 0x1b) {
			t.Errorf("%s output carries an escape sequence", name)
		}
	}
	if strings.Contains(dot.String(), "x->y") && !strings.Contains(dot.String(), `ev\"il`) {
		t.Errorf("DOT not escaped:\n%s", dot.String())
	}
	for _, line := range strings.Split(strings.TrimSpace(mer.String()), "\n")[1:] {
		if strings.Count(line, `"`)%2 != 0 {
			t.Errorf("mermaid line with an unbalanced quote: %q", line)
		}
	}
	if bin, err := exec.LookPath("dot"); err == nil {
		cmd := exec.Command(bin, "-Tsvg")
		cmd.Stdin = &dot
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil || errb.Len() > 0 {
			t.Fatalf("dot -Tsvg: %v %s\n%s", err, errb.String(), dot.String())
		}
		// Three nodes (a, b, the missing capability), two edges: nothing injected.
		if n := strings.Count(out.String(), `class="node"`); n != 3 {
			t.Errorf("%d nodes in the SVG, want 3", n)
		}
		if n := strings.Count(out.String(), `class="edge"`); n != 2 {
			t.Errorf("%d edges in the SVG, want 2", n)
		}
	}
}

func TestContractNullsTrafficNotZeros(t *testing.T) {
	g := hostileGraph()
	b, err := json.Marshal(g.Contract())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"calls_per_s":null,"error_rate":null,"p95_ms":null`) || strings.Contains(string(b), `"calls_per_s":0`) {
		t.Fatalf("contract: %s", b)
	}
}

func TestTrafficText(t *testing.T) {
	g := &Graph{TrafficKnown: true, Window: DefaultWindow}
	for _, c := range []struct {
		tr   *Traffic
		want string
	}{
		{&Traffic{CallsPerS: 2.25, ErrorRate: 0.1, P95ms: 2013}, "2.25/s err 10% p95 2.0s"},
		{&Traffic{CallsPerS: 0.5, P95ms: 12.34}, "0.5/s err 0% p95 12.3ms"},
		{&Traffic{CallsPerS: 1, P95ms: -1}, "1/s err 0%"},
		{&Traffic{CallsPerS: 0.004, P95ms: 0.42}, "0.004/s err 0% p95 0.42ms"},
	} {
		if got := TrafficText(g, &Edge{Traffic: c.tr}); got != c.want {
			t.Errorf("%+v: %q, want %q", c.tr, got, c.want)
		}
	}
	if got := TrafficText(&Graph{}, &Edge{}); got != "no traffic reported" {
		t.Errorf("no traffic: %q", got)
	}
}
