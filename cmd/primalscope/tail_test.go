package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/internal/demo"
)

// lineWatcher collects output lines and cancels when every wanted line has
// been seen.
type lineWatcher struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	lines  []string
	want   map[string]func(string) bool
	cancel context.CancelFunc
}

func (w *lineWatcher) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	for {
		line, err := w.buf.ReadString('\n')
		if err != nil {
			w.buf.Reset()
			w.buf.WriteString(line)
			break
		}
		w.lines = append(w.lines, line)
		for k, f := range w.want {
			if f(line) {
				delete(w.want, k)
			}
		}
	}
	if len(w.want) == 0 {
		w.cancel()
	}
	return len(p), nil
}

func fastEcosystem(t *testing.T) *demo.Ecosystem {
	t.Helper()
	eco, err := demo.Start(context.Background(), demo.Options{Tick: 30 * time.Millisecond, Churn: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eco.Close() })
	return eco
}

func TestTailJSONMergesEverySource(t *testing.T) {
	eco := fastEcosystem(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	type ev struct {
		Source, Kind, Name string
		Time               time.Time
		Payload            json.RawMessage
	}
	match := func(kind, name string) func(string) bool {
		return func(line string) bool {
			var e ev
			return json.Unmarshal([]byte(line), &e) == nil && e.Kind == kind && e.Name == name && !e.Time.IsZero() && len(e.Payload) > 0
		}
	}
	w := &lineWatcher{cancel: cancel, want: map[string]func(string) bool{
		"hello":        match("request", "client.v1.Client/Hello"),
		"holon beat":   match("request", "rpc.heartbeat"),
		"sse":          match("sse", "heartbeat"),
		"sse typed":    match("sse", "graph_started"),
		"notification": match("notification", "dag.event.appended"),
		"lean event":   match("event", "NewMail"),
		"liveness":     match("liveness", "alive"),
	}}
	var errb bytes.Buffer
	env := map[string]string{}
	code := run(ctx, []string{"tail", "--json", "--interval", "50ms", "--socket-dir", eco.Dir,
		eco.HolonURL(), eco.BiomeOSAPIPath(), "rhizocrypt", eco.Path("floatmail/floatmail.sock")},
		&stdio{in: strings.NewReader(""), out: w, err: &errb}, func(k string) string { return env[k] }, nil)
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.want) != 0 {
		missing := make([]string, 0, len(w.want))
		for k := range w.want {
			missing = append(missing, k)
		}
		t.Fatalf("never saw %v (exit %d, stderr %s)\n%s", missing, code, errb.String(), strings.Join(w.lines, ""))
	}
	if code != 0 {
		t.Errorf("exit %d after Ctrl-C, stderr %s", code, errb.String())
	}
	for _, l := range w.lines {
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("not one JSON object a line: %q", l)
		}
		for _, k := range []string{"source", "time", "kind", "payload"} {
			if _, ok := m[k]; !ok {
				t.Fatalf("%q lacks %s", l, k)
			}
		}
	}
}

func TestTailDiscoversTargetsAndPrintsText(t *testing.T) {
	eco := fastEcosystem(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	w := &lineWatcher{cancel: cancel, want: map[string]func(string) bool{
		"holon":    func(l string) bool { return strings.Contains(l, "holon-greeter request client.v1.Client/Hello") },
		"registry": func(l string) bool { return strings.Contains(l, "songbird ♥ alive") },
		"sse":      func(l string) bool { return strings.Contains(l, "biomeos-api sse heartbeat") },
	}}
	var errb bytes.Buffer
	code := run(ctx, []string{"tail", "--no-proc", "--interval", "50ms", "--socket-dir", eco.Dir},
		&stdio{in: strings.NewReader(""), out: w, err: &errb}, func(string) string { return "" }, nil)
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.want) != 0 {
		t.Fatalf("missing %v (exit %d, stderr %s)\n%s", w.want, code, errb.String(), strings.Join(w.lines, ""))
	}
	for _, l := range w.lines {
		if strings.Contains(l, "\x1b") {
			t.Fatalf("colour in piped output: %q", l)
		}
	}
}

func TestTailNothingToTail(t *testing.T) {
	dir := t.TempDir()
	r := runCLI(t, nil, "", "tail", "--no-proc", "--socket-dir", dir)
	if r.code != exitConnect || !strings.Contains(r.stderr, "no targets found") {
		t.Fatalf("exit %d, stderr %s", r.code, r.stderr)
	}
	r = runCLI(t, nil, "", "tail", "--interval", "0s", "ws://127.0.0.1:1/rpc")
	if r.code != exitUsage {
		t.Fatalf("exit %d, stderr %s", r.code, r.stderr)
	}
}

func TestCallHolon(t *testing.T) {
	eco := fastEcosystem(t)
	url := eco.HolonURL()
	r := runCLI(t, nil, "", "call", url, "greeting.v1.Greeting/SayHello", `{"name":"ada"}`)
	if r.code != 0 || !strings.Contains(r.stdout, "hello, ada") {
		t.Fatalf("exit %d, out %s, err %s", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, nil, "", "call", url, "nope")
	if r.code != exitPeer || !strings.Contains(r.stderr, "method not registered") {
		t.Fatalf("exit %d, err %s", r.code, r.stderr)
	}
	r = runCLI(t, nil, "", "call", strings.TrimSuffix(url, "/rpc")+"/wrong", "x")
	if r.code != exitConnect || !strings.Contains(r.stderr, "404") || !strings.Contains(r.stderr, "/rpc") {
		t.Fatalf("exit %d, err %s", r.code, r.stderr)
	}
	r = runCLI(t, nil, "", "--insecure", "call", "wss://127.0.0.1:1/rpc", "x", "--timeout", "2s")
	if r.code != exitConnect || !strings.Contains(r.stderr, "WARNING: --insecure") {
		t.Fatalf("exit %d, err %s", r.code, r.stderr)
	}
}
