package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/ecoPrimals/primalscope/history"
	"github.com/ecoPrimals/primalscope/internal/render"
	"github.com/ecoPrimals/primalscope/internal/textsafe"
	"github.com/ecoPrimals/primalscope/ipc"
	"github.com/ecoPrimals/primalscope/ipc/ipctest"
)

// charClass is one class of characters a hostile peer puts in its text.
type charClass struct {
	name  string
	text  string // as the peer means it
	runes []rune // none of which may reach a terminal raw
}

var charClasses = []charClass{
	{"C0 ESC", "\x1b]0;owned\x07\x1b[2J", []rune{0x1b, 0x07}},
	{"C1", "\u009b31m\u009d0;t\u009c", []rune{0x9b, 0x9d, 0x9c}},
	{"bidi", "\u202eexe.txt\u2066x", []rune{0x202e, 0x2066}},
	{"zero-width space", "ad\u200bmin", []rune{0x200b}},
	{"word joiner", "ad\u2060min", []rune{0x2060}},
	{"Hangul filler", "\u3164", []rune{0x3164}},
	{"Hangul choseong filler", "x\u115f", []rune{0x115f}},
	{"BOM", "\ufeffid", []rune{0xfeff}},
}

// jsonText is s as a JSON string the way a peer writes it: only what JSON
// requires is escaped (C0 controls); every other character is raw.
func jsonText(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

// hostileRawResult is test.echo's answer, byte for byte: odd spacing, the
// class in a key and in values.
func hostileRawResult(c charClass) string {
	lit := jsonText(c.text)
	return `{ "text" : ` + jsonText("plain "+c.text) + ` , ` + jsonText("k"+c.text) + `: [1, ` + lit + `] }`
}

// hostileTerminalPeer is a primal whose every text carries the class: its
// identity, capabilities, results, error messages and data, and the events
// it pushes.
func hostileTerminalPeer(c charClass) ipctest.Config {
	p := &ipctest.Primal{Name: "hostile", Version: "1.0" + c.text, Domain: "test" + c.text, License: "MIT" + c.text,
		Groups: []ipctest.Group{{Type: "test", Methods: []string{"echo", "fail", "odd" + c.text}, Description: "group " + c.text}},
		Handlers: map[string]ipctest.HandlerFunc{
			"test.echo": func(context.Context, json.RawMessage) (any, error) {
				return json.RawMessage(hostileRawResult(c)), nil
			},
			"test.fail": func(context.Context, json.RawMessage) (any, error) {
				return nil, &ipc.RPCError{Code: -32000, Message: "boom " + c.text, Data: json.RawMessage(`{"why":` + jsonText(c.text) + `}`)}
			},
		},
		Liveness: map[string]any{"status": "alive", "note": c.text},
	}
	cfg := p.Config()
	ev, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "hostile.event" + c.text, "params": map[string]any{"msg": c.text}})
	cfg.Behavior.OnConnect = append(ev, '\n')
	return cfg
}

// runStdio runs one command line in-process under ctx with a stand-in
// terminal (or pipe) for stdout and stderr.
func runStdio(ctx context.Context, env map[string]string, terminal bool, out, errw io.Writer, args ...string) int {
	getenv := func(k string) string { return env[k] }
	var environ []string
	for k, v := range env {
		environ = append(environ, k+"="+v)
	}
	s := &stdio{in: strings.NewReader(""), out: out, err: errw, terminal: func(io.Writer) bool { return terminal }}
	return run(ctx, args, s, getenv, environ)
}

// unsafeAt returns the offset of the first rune in s that a terminal must
// not get raw (textsafe.Classify; newlines and tabs allowed), or -1.
func unsafeAt(s string) int {
	var prev rune
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size == 1) || (r != '\n' && r != '\t' && textsafe.Classify(prev, r) != textsafe.Safe) {
			return i
		}
		prev = r
		i += size
	}
	return -1
}

// holds reports whether a decoded JSON value has a string (or member name)
// containing sub.
func holds(v any, sub string) bool {
	switch v := v.(type) {
	case string:
		return strings.Contains(v, sub)
	case []any:
		for _, e := range v {
			if holds(e, sub) {
				return true
			}
		}
	case map[string]any:
		for k, e := range v {
			if strings.Contains(k, sub) || holds(e, sub) {
				return true
			}
		}
	}
	return false
}

// decodeLines decodes out as one JSON value per line (ndjson) or one
// document.
func decodeLines(out string, ndjson bool) ([]any, error) {
	var vs []any
	docs := []string{out}
	if ndjson {
		docs = strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	}
	for _, d := range docs {
		var v any
		dec := json.NewDecoder(strings.NewReader(d))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		if dec.More() {
			var extra any
			if err := dec.Decode(&extra); err != nil {
				return nil, err
			}
		}
		vs = append(vs, v)
	}
	return vs, nil
}

var rawEnvelope = regexp.MustCompile(`^\{"jsonrpc":"2\.0","id":[0-9]+,"result":`)

// TestEveryCommandIsTerminalSafe puts each class of dangerous character in
// everything a hostile peer says and runs every command that prints peer
// data, on a (stand-in) terminal and on a pipe. On the terminal no raw
// such character reaches stdout or stderr, and JSON output is still valid
// JSON that decodes to the peer's text; on a pipe, call --raw prints
// exactly the bytes the peer sent and --json output decodes to the peer's
// text.
func TestEveryCommandIsTerminalSafe(t *testing.T) {
	if testing.Short() {
		t.Skip("every command × every class: not in -short")
	}
	for _, c := range charClasses {
		t.Run(c.name, func(t *testing.T) { terminalSafeRun(t, c) })
	}
}

func terminalSafeRun(t *testing.T, c charClass) {
	dir, err := ipctest.TempDir()
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	s, err := ipctest.Listen(filepath.Join(dir, "hostile.sock"), hostileTerminalPeer(c))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// A second one whose socket name carries the class: ls shows names.
	s2, err := ipctest.Listen(filepath.Join(dir, "evil"+c.text+".sock"), hostileTerminalPeer(c))
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	hpath := filepath.Join(dir, "h", "history.db")
	seedHistory(t, hpath, history.Entry{Time: time.Now(), Target: "hostile" + c.text, Endpoint: "unix://" + s.Path, Wire: "jsonrpc",
		Transport: "unix", Method: "test.echo" + c.text, Params: json.RawMessage(`{"q":` + jsonText(c.text) + `}`),
		Result: json.RawMessage(hostileRawResult(c)), Outcome: history.OutcomeOK, ResponseSize: 10},
		history.Entry{Time: time.Now(), Target: "hostile", Endpoint: "unix://" + s.Path, Wire: "jsonrpc", Transport: "unix",
			Method: "test.fail", Error: &history.RPCError{Code: -32000, Message: "boom " + c.text, Data: json.RawMessage(`[` + jsonText(c.text) + `]`)},
			Outcome: history.OutcomeError})
	env := map[string]string{"HOME": dir, "XDG_CONFIG_HOME": dir, "XDG_STATE_HOME": dir, "PRIMALSCOPE_HISTORY": hpath}
	disc := []string{"--socket-dir", dir, "--stale", "2s", "--no-proc"}
	type command struct {
		name   string
		args   []string
		json   bool // stdout is JSON
		ndjson bool // one JSON value a line
		code   int
		tail   bool   // runs until it has printed an event
		holds  string // the JSON output (piped and on a terminal) decodes to a text holding this
	}
	cmds := []command{
		{name: "call", args: []string{"call", "--no-history", s.Path, "test.echo"}, json: true, holds: c.text},
		{name: "call colour", args: []string{"call", "--no-history", "--color=always", s.Path, "test.echo"}, json: true, holds: c.text},
		{name: "call --raw", args: []string{"call", "--no-history", "--raw", s.Path, "test.echo"}, json: true, holds: c.text},
		{name: "call error", args: []string{"call", "--no-history", s.Path, "test.fail"}, code: exitPeer},
		{name: "call --raw error", args: []string{"call", "--no-history", "--raw", s.Path, "test.fail"}, json: true, code: exitPeer, holds: "boom " + c.text},
		{name: "caps", args: []string{"caps", s.Path}},
		{name: "caps --json", args: []string{"caps", "--json", s.Path}, json: true, holds: "1.0" + c.text},
		{name: "ls", args: append([]string{"ls"}, disc...)},
		{name: "ls --json", args: append([]string{"ls", "--json"}, disc...), json: true, holds: "1.0" + c.text},
		{name: "check", args: append([]string{"check"}, disc...)},
		{name: "check --json", args: append([]string{"check", "--json"}, disc...), json: true, holds: c.text},
		{name: "tail --json", args: []string{"tail", "--json", "--interval", "100ms", s.Path}, json: true, ndjson: true, tail: true, holds: "hostile.event" + c.text},
		{name: "tail", args: []string{"tail", "--interval", "100ms", s.Path}, tail: true},
		{name: "history", args: []string{"history"}},
		{name: "history --json", args: []string{"history", "--json"}, json: true, holds: "boom " + c.text},
	}
	for _, cmd := range cmds {
		var piped []any
		for _, terminal := range []bool{false, true} {
			where := "pipe"
			if terminal {
				where = "terminal"
			}
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			var errb syncBuffer
			var out io.Writer
			var outb syncBuffer
			out = &outb
			if cmd.tail {
				w := &lineWatcher{cancel: cancel, want: map[string]func(string) bool{
					"event": func(l string) bool { return strings.Contains(l, "hostile.event") },
				}}
				out = w
				code := runStdio(ctx, env, terminal, out, &errb, cmd.args...)
				w.mu.Lock()
				outb.Write([]byte(strings.Join(w.lines, "")))
				w.mu.Unlock()
				if code != 0 {
					t.Errorf("%s (%s): exit %d, stderr %q", cmd.name, where, code, errb.String())
				}
			} else if code := runStdio(ctx, env, terminal, out, &errb, cmd.args...); code != cmd.code {
				t.Errorf("%s (%s): exit %d, want %d\nstdout %q\nstderr %q", cmd.name, where, code, cmd.code, outb.String(), errb.String())
			}
			cancel()
			stdout, stderr := outb.String(), errb.String()
			// Text for people is safe wherever it goes; JSON on a terminal.
			if terminal || !cmd.json {
				if i := unsafeAt(stripSGR(stdout)); i >= 0 {
					t.Errorf("%s (%s): stdout carries a raw %q at byte %d: %q", cmd.name, where, []rune(stripSGR(stdout)[i:])[0], i, stdout)
				}
			}
			if i := unsafeAt(stripSGR(stderr)); i >= 0 {
				t.Errorf("%s (%s): stderr carries a raw %q at byte %d: %q", cmd.name, where, []rune(stripSGR(stderr)[i:])[0], i, stderr)
			}
			for _, r := range c.runes {
				if terminal && strings.ContainsRune(stripSGR(stdout)+stripSGR(stderr), r) {
					t.Errorf("%s (terminal): %U reached the terminal", cmd.name, r)
				}
			}
			if !cmd.json {
				// The peer's text is shown, escaped visibly.
				if esc := render.Sanitize(string(c.runes[0])); !strings.Contains(stdout+stderr, esc) {
					t.Errorf("%s (%s): the peer's text is not shown as %s:\nstdout %q\nstderr %q", cmd.name, where, esc, stdout, stderr)
				}
				continue
			}
			vs, err := decodeLines(stripSGR(stdout), cmd.ndjson)
			if err != nil {
				t.Errorf("%s (%s): not JSON: %v\n%q", cmd.name, where, err, stdout)
				continue
			}
			found := false
			for _, v := range vs {
				found = found || holds(v, cmd.holds)
			}
			if !found {
				t.Errorf("%s (%s): the JSON does not decode to the peer's %q: %q", cmd.name, where, cmd.holds, stdout)
			}
			if !terminal {
				piped = vs
				if cmd.name == "call --raw" {
					// Byte for byte what the peer sent.
					if !rawEnvelope.MatchString(stdout) || !strings.HasSuffix(stdout, `,"result":`+hostileRawResult(c)+"}\n") {
						t.Errorf("call --raw (pipe): not the peer's bytes:\n%q\nwant the result %q", stdout, hostileRawResult(c))
					}
				}
			} else if strings.HasPrefix(cmd.name, "call") || strings.HasPrefix(cmd.name, "history") {
				// Deterministic answers: the same values as piped.
				if !equalJSONValues(piped, vs) {
					t.Errorf("%s: the terminal's JSON means something else than the pipe's:\n%#v\n%#v", cmd.name, vs, piped)
				}
			}
		}
	}
}

func equalJSONValues(a, b []any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}
