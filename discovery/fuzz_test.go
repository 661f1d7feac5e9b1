package discovery

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ecoPrimals/primalscope/internal/textsafe"
)

// TestCleanNameRefusesLookAlikes: a name with a control, a bidi control or
// an invisible character (one that makes it pass for another name) is
// refused; names in other scripts and emoji with joiners are kept.
func TestCleanNameRefusesLookAlikes(t *testing.T) {
	for _, n := range []string{"bear\x1bdog", "bear\u009bdog", "bear\u202edog", "bear\u200bdog", "ad\u200dmin", "\ufeffbeardog", "a/b", `a\b`, "\xffx"} {
		if got := cleanName(n); got != "" {
			t.Errorf("cleanName(%q) = %q, want it refused", n, got)
		}
	}
	for _, n := range []string{"beardog", "ours-1.2", "熊犬", "👩\u200d💻", " songbird "} {
		if got := cleanName(n); got != strings.TrimSpace(n) {
			t.Errorf("cleanName(%q) = %q, want it kept", n, got)
		}
	}
}

// Every parser of peer or file data must never panic and must keep only
// bounded, clean names. The seed corpora live in testdata/fuzz.

func checkName(t *testing.T, n string) {
	t.Helper()
	if len(n) > maxNameLen || !utf8.ValidString(n) || strings.ContainsAny(n, "\x00\x1b\n/") || !textsafe.IsSafe(n, false) {
		t.Fatalf("unclean name %q", n)
	}
}

func FuzzParseIPCList(f *testing.F) {
	f.Add([]byte(`{"services":[{"primal_id":"a","virtual_endpoint":"v","capabilities":["x"]}]}`))
	f.Add([]byte(`{"services":[{"name":"b","endpoint":"/run/b.sock","available":true}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		regs, _ := ParseIPCList(b)
		for _, r := range regs {
			checkName(t, r.PrimalID)
			if r.Endpoint.Transport == "stdio" {
				t.Fatal("a registry named a command")
			}
		}
		ParseDiscover(b)
		ParseResolve(b)
	})
}

func FuzzParseWatch(f *testing.F) {
	f.Add([]byte(`{"revision":3,"events":[{"revision":3,"kind":"registered","primal":"p","capabilities":["c"],"endpoint":"tcp://127.0.0.1:1"}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		w, err := ParseWatch(b)
		if err == nil {
			for _, e := range w.Events {
				checkName(t, e.Primal)
			}
		}
		ParsePeers(b)
		ParseNeuralPrimals(b)
	})
}

func FuzzParseManifest(f *testing.F) {
	f.Add([]byte(`{"socket_path":"/run/x.sock","primal":"x","capabilities":["a"]}`), "x")
	f.Fuzz(func(t *testing.T, b []byte, name string) {
		fd, err := ParseManifest(b, name)
		if err == nil {
			checkName(t, fd.Name)
			if fd.Endpoint.Transport == "stdio" {
				t.Fatal("a manifest named a command")
			}
		}
	})
}

func FuzzParseSocketRegistry(f *testing.F) {
	f.Add([]byte(`{"version":"1.0","entries":[{"primal":"p","socket":"/run/p.sock","capabilities":["x"]}]}`))
	f.Add([]byte(`{"ai":"/run/squirrel.sock","security":{"socket_path":"/run/b.sock"}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		fs, _ := ParseSocketRegistry(b)
		if len(fs) > MaxEntries {
			t.Fatalf("%d entries", len(fs))
		}
		for _, fd := range fs {
			checkName(t, fd.Name)
		}
	})
}

func FuzzParseBusCmdline(f *testing.F) {
	f.Add([]byte("stdio_bus\x00--config\x00bus.json\x00--unix\x00/run/bus.sock\x00"))
	f.Add([]byte("/usr/bin/stdio_bus\x00--tcp=127.0.0.1:9800"))
	f.Fuzz(func(t *testing.T, b []byte) {
		ParseBusCmdline(b)
		ps, err := ParseBusConfig(b)
		if err == nil {
			for _, p := range ps {
				checkName(t, p.ID)
			}
		}
	})
}

func FuzzFamilySplit(f *testing.F) {
	f.Add("neural-api-westgate-tower-155f", "westgate-tower-155f")
	f.Add("beardog", "")
	f.Fuzz(func(t *testing.T, base, fam string) {
		m := NewFamilyMatcher([]string{"my-primal"}, fam)
		n, fm := m.Split(base)
		if fm != "" && n+"-"+fm != base {
			t.Fatalf("Split(%q) = %q, %q does not rebuild the name", base, n, fm)
		}
		if fm == "" && n != base {
			t.Fatalf("Split(%q) = %q with no family", base, n)
		}
		ParseEnvVar(base + "=" + fam)
	})
}

func FuzzEndpointFrom(f *testing.F) {
	f.Add([]byte(`{"transport":"tcp","host":"h","port":1}`))
	f.Add([]byte(`"unix:///run/x.sock"`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var v any
		if json.Unmarshal(b, &v) != nil {
			return
		}
		ep, err := endpointFrom(v)
		if err == nil && ep.Transport == "stdio" {
			t.Fatal("command accepted")
		}
	})
}
