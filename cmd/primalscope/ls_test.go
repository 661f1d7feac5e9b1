package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"

	"github.com/ecoPrimals/primalscope/internal/demo"
)

type lsDocT struct {
	Targets []struct {
		ID      string   `json:"id"`
		Name    string   `json:"name"`
		Aliases []string `json:"aliases"`
		Address string   `json:"address"`
		Paths   []string `json:"paths"`
		State   string   `json:"state"`
		Level   int      `json:"level"`
		Sources []struct {
			Source string `json:"source"`
		} `json:"sources"`
	} `json:"targets"`
}

func TestLsDemo(t *testing.T) {
	eco := ecosystem(t)
	r := runCLI(t, nil, "", "ls", "--socket-dir", eco.Dir, "--json", "--stale", "3s", "--no-proc")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var doc lsDocT
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	seenPath := map[string]string{}
	byName := map[string][]string{}
	for _, tg := range doc.Targets {
		for _, p := range tg.Paths {
			if other, dup := seenPath[p]; dup {
				t.Errorf("%s listed by %s and %s", p, other, tg.ID)
			}
			seenPath[p] = tg.ID
		}
		var srcs []string
		for _, s := range tg.Sources {
			srcs = append(srcs, s.Source)
		}
		byName[tg.Name] = append(byName[tg.Name], tg.State+" "+strings.Join(tg.Aliases, ",")+" "+strings.Join(srcs, ","))
	}
	want := map[string]string{
		// Without a seed the family-scoped Neural API is not asked (nothing
		// in cleartext): it is no source.
		"rhizocrypt":    "live dag socket-dir,socket-registry,songbird,symlink",
		"squirrel":      "live ai socket-dir,socket-registry,songbird,symlink",
		"nestgate":      "live  manifest,socket-dir,songbird",
		"toadstool":     "live  songbird",
		"lostprimal":    "stale  socket-dir",
		"floatmail":     "live  lean",
		"beardog.tarpc": "unprobed  socket-dir",
		"songbird":      "live  socket-dir,songbird",
		"neural-api":    "btsp  socket-dir", // family-scoped by name: no cleartext probe without a seed
	}
	for n, w := range want {
		got := byName[n]
		if len(got) != 1 || got[0] != w {
			t.Errorf("%s: %q, want [%q]", n, got, w)
		}
	}
	if len(byName["beardog"]) != 2 { // beardog.sock and the family-scoped socket
		t.Errorf("beardog: %q", byName["beardog"])
	}
	// With the seed, the Neural API is probed and asked through BTSP.
	r = runCLI(t, map[string]string{"FAMILY_SEED": eco.Seed(), "FAMILY_ID": eco.Family, "HOME": t.TempDir(), "XDG_STATE_HOME": t.TempDir()}, "",
		"ls", "--socket-dir", eco.Dir, "--json", "--stale", "3s", "--no-proc")
	doc = lsDocT{}
	if err := json.Unmarshal([]byte(r.stdout), &doc); r.code != 0 || err != nil {
		t.Fatalf("ls with the seed: exit %d %v\n%s", r.code, err, r.stderr)
	}
	for _, tg := range doc.Targets {
		var srcs []string
		for _, s := range tg.Sources {
			srcs = append(srcs, s.Source)
		}
		if (tg.Name == "rhizocrypt" || tg.Name == "nestgate") && !slices.Contains(srcs, "neural-api") {
			t.Errorf("with the seed, %s: sources %q, want neural-api among them", tg.Name, srcs)
		}
		if tg.Name == "neural-api" && tg.State != "live" {
			t.Errorf("with the seed, neural-api is %s", tg.State)
		}
	}

	// The table fits the terminal.
	r = runCLI(t, map[string]string{"COLUMNS": "80"}, "", "ls", "--socket-dir", eco.Dir, "--stale", "3s", "--no-proc")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) < 12 || !strings.HasPrefix(lines[0], "NAME") {
		t.Fatalf("table:\n%s", r.stdout)
	}
	for _, l := range lines {
		if w := ansi.StringWidth(l); w > 80 {
			t.Errorf("line of width %d: %q", w, l)
		}
	}
}

func TestCheckDemo(t *testing.T) {
	eco := ecosystem(t)
	r := runCLI(t, nil, "", "check", "--socket-dir", eco.Dir, "--level", "2", "--stale", "3s", "--no-proc")
	if r.code != 1 {
		t.Fatalf("exit %d, want 1: %s\n%s", r.code, r.stderr, r.stdout)
	}
	for _, want := range []string{"toadstool (level 1; fails l2.identity)", "only the older identity method answers",
		"ledger.append", "composition gap", "lostprimal", "not judged"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("no %q in:\n%s", want, r.stdout)
		}
	}

	r = runCLI(t, nil, "", "check", "toadstool", "--socket-dir", eco.Dir, "--json", "--call-all", "--stale", "3s", "--no-proc")
	if r.code != 0 || !strings.Contains(r.stderr, "side effects") {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var doc struct {
		CalledAll bool `json:"called_all"`
		Targets   []struct {
			Target string `json:"target"`
			Level  int    `json:"level"`
			Points []struct {
				ID     string `json:"id"`
				Result string `json:"result"`
				Why    string `json:"why"`
			} `json:"points"`
		} `json:"targets"`
		Composition struct {
			Gaps []struct {
				Capability string `json:"capability"`
			} `json:"gaps"`
		} `json:"composition"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatal(err)
	}
	if !doc.CalledAll || len(doc.Targets) != 1 || doc.Targets[0].Target != "toadstool" {
		t.Fatalf("%+v", doc)
	}
	callable := false
	for _, p := range doc.Targets[0].Points {
		if p.ID == "l2.callable" && p.Result == "fail" && strings.Contains(p.Why, "compute.cancel") {
			callable = true
		}
	}
	if !callable {
		t.Errorf("--call-all did not find compute.cancel missing: %+v", doc.Targets[0].Points)
	}
	if len(doc.Composition.Gaps) != 1 || doc.Composition.Gaps[0].Capability != "ledger.append" {
		t.Errorf("gaps %+v", doc.Composition.Gaps)
	}

	r = runCLI(t, nil, "", "check", "rhizocrypt", "--socket-dir", eco.Dir, "--level", "2", "--stale", "3s", "--no-proc")
	if r.code != 0 {
		t.Errorf("rhizocrypt below 2? exit %d\n%s", r.code, r.stdout)
	}
	r = runCLI(t, nil, "", "check", "nosuchprimal", "--socket-dir", eco.Dir, "--stale", "3s", "--no-proc")
	if r.code != exitConnect {
		t.Errorf("unknown target: exit %d", r.code)
	}
	r = runCLI(t, nil, "", "check", "--level", "7")
	if r.code != exitUsage {
		t.Errorf("--level 7: exit %d", r.code)
	}
}

func TestLsWatchDemo(t *testing.T) {
	eco, err := demo.Start(context.Background(), demo.Options{Tick: time.Hour, Churn: 700 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer eco.Close()
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	env := map[string]string{}
	code := run(ctx, []string{"ls", "--watch", "--json", "--every", "500ms", "--socket-dir", eco.Dir, "--stale", "2s", "--no-proc"},
		&stdio{in: strings.NewReader(""), out: &out, err: &errb}, func(k string) string { return env[k] }, nil)
	if code != 0 && code != 130 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	perTarget := map[string][]string{}
	sc := bufio.NewScanner(&out)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var ev struct {
			Event  string `json:"event"`
			Target struct {
				Name string `json:"name"`
			} `json:"target"`
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("not one JSON object a line: %v: %q", err, sc.Text())
		}
		if ev.Target.Name == "sweetgrass" || ev.Target.Name == "petaltongue" {
			perTarget[ev.Target.Name] = append(perTarget[ev.Target.Name], ev.Event)
		}
	}
	// Each primal that comes and goes is seen to appear and later to leave.
	for _, name := range []string{"sweetgrass", "petaltongue"} {
		seq := strings.Join(perTarget[name], " ")
		if !strings.Contains(seq, "added") || !strings.Contains(seq[strings.Index(seq, "added"):], "removed") {
			t.Errorf("%s: want added then removed, got %q", name, seq)
		}
	}
}
