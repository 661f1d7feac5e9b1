package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/history"
	"github.com/ecoPrimals/primalscope/ipc/ipctest"
)

// lastCallID returns the id of the newest call in the history at path.
func lastCallID(t *testing.T, env map[string]string) string {
	t.Helper()
	r := runCLI(t, env, "", "history", "--json", "--limit", "1")
	var es []history.Entry
	if err := json.Unmarshal([]byte(r.stdout), &es); err != nil || len(es) != 1 {
		t.Fatalf("history --json: %v %+v", err, r)
	}
	return strconv.FormatInt(es[0].ID, 10)
}

// TestReplayWithoutSocketDir: a call made with --socket-dir is replayed
// without it: the name no longer resolves, so the recorded endpoint is
// used (said on stderr), with the prefix and family the call was made
// with; the seed comes from the environment, as for call.
func TestReplayWithoutSocketDir(t *testing.T) {
	eco := ecosystem(t)
	home := t.TempDir()
	env := map[string]string{"HOME": home, "XDG_STATE_HOME": home, "PRIMALSCOPE_HISTORY": filepath.Join(home, "history.db")}
	sd := "--socket-dir=" + eco.Dir

	// rhizoCrypt wants the riboCipher prefix; beardog-<family> BTSP.
	if r := runCLI(t, env, "", "call", sd, "rhizocrypt", "health.liveness"); r.code != 0 {
		t.Fatalf("call rhizocrypt: %+v", r)
	}
	rhizo := lastCallID(t, env)
	if r := runCLI(t, env, "", "call", sd, "--family", eco.Family, "--family-seed-file", eco.SeedFile, "beardog-"+eco.Family, "health.liveness"); r.code != 0 {
		t.Fatalf("call beardog-%s: %+v", eco.Family, r)
	}
	btspID := lastCallID(t, env)

	r := runCLI(t, env, "", "replay", rhizo)
	if r.code != 0 || !strings.Contains(r.stdout, "no changes") ||
		!strings.Contains(r.stderr, "rhizocrypt does not resolve now") || !strings.Contains(r.stderr, filepath.Join(eco.Dir, "rhizocrypt.sock")) {
		t.Fatalf("replay without --socket-dir: %+v", r)
	}
	r = runCLI(t, env, "", "replay", "--family-seed-file", eco.SeedFile, btspID)
	if r.code != 0 || !strings.Contains(r.stdout, "no changes") || !strings.Contains(r.stderr, "does not resolve now") {
		t.Fatalf("replay of a BTSP call without --socket-dir: %+v", r)
	}
	// Without the seed it is refused, as call is (exit 5), not sent in cleartext.
	if r := runCLI(t, env, "", "replay", btspID); r.code != exitSecurity {
		t.Fatalf("replay of a BTSP call without a seed: %+v", r)
	}
	// The replayed calls are recorded under the name they were made to.
	r = runCLI(t, env, "", "history", "--json", "--limit", "3")
	var es []history.Entry
	if err := json.Unmarshal([]byte(r.stdout), &es); err != nil || len(es) != 3 {
		t.Fatalf("history: %v %+v", err, r)
	}
	if es[1].Target != "beardog-"+eco.Family || es[1].Family != eco.Family || !strings.Contains(es[1].Transport, "btsp") ||
		es[2].Target != "rhizocrypt" || !es[2].Prefix || es[0].Outcome != history.OutcomeRefused {
		t.Errorf("the replays as recorded: %+v", es)
	}
	// With --socket-dir the name resolves again, to the same socket: no note.
	if r := runCLI(t, env, "", "replay", sd, rhizo); r.code != 0 || strings.Contains(r.stderr, "resolve") {
		t.Errorf("replay with --socket-dir: %+v", r)
	}
}

// TestExportedCommandsRun: a plain call, a BTSP family-scoped one, a bus
// pool's and one with hostile params are exported as commands; each,
// pasted into sh in another directory with another HOME, makes the same
// call and prints the same answer. The seed is never in the line; the note
// on stderr says FAMILY_SEED must be set, and with it set the line works.
func TestExportedCommandsRun(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	eco := ecosystem(t)
	home := t.TempDir()
	env := map[string]string{"HOME": home, "XDG_STATE_HOME": home, "PRIMALSCOPE_HISTORY": filepath.Join(home, "history.db")}
	sd := "--socket-dir=" + eco.Dir
	seed, err := os.ReadFile(eco.SeedFile)
	if err != nil {
		t.Fatal(err)
	}

	echo := echoPeer(t, 0)
	busDir, err := ipctest.TempDir()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(busDir) })
	bus, err := ipctest.StartStdioBus(filepath.Join(busDir, "bus.sock"), ipctest.BusConfig{Pools: []ipctest.BusPool{busPool(t, "echo", 1)}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bus.Close() })

	hostile := `{"s":"it's \"quoted\" $(touch pwned) ` + "`touch pwned2`" + ` ; | & \n line"}`
	cases := []struct {
		name     string
		args     []string
		needSeed bool
	}{
		{"plain", []string{"call", sd, "beardog", "health.liveness"}, false},
		{"prefix", []string{"call", sd, "rhizocrypt", "health.liveness"}, false},
		{"btsp family-scoped", []string{"call", sd, "--family", eco.Family, "--family-seed-file", eco.SeedFile, "beardog-" + eco.Family, "health.liveness"}, true},
		{"bus pool", []string{"call", "--pool", "echo", "--session", "S1", bus.Path, "x.y", `{"a":1}`}, false},
		{"hostile params", []string{"call", echo, "echo", hostile}, false},
	}

	exe, runEnv := psBinary(t, t.TempDir())
	binDir := t.TempDir()
	if err := os.Symlink(exe, filepath.Join(binDir, "primalscope")); err != nil {
		t.Fatal(err)
	}
	elsewhere := t.TempDir()
	other := t.TempDir() // another HOME: no endpoint memory, another history
	var base []string
	for _, kv := range runEnv {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "PATH", "HOME", "XDG_STATE_HOME", "XDG_CONFIG_HOME", "XDG_RUNTIME_DIR", "PRIMALSCOPE_HISTORY",
			"BIOMEOS_SOCKET_DIR", "FAMILY_ID", "BIOMEOS_FAMILY_ID", "FAMILY_SEED":
			continue
		}
		base = append(base, kv)
	}
	base = append(base, "PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"), "HOME="+other, "XDG_STATE_HOME="+other,
		"XDG_CONFIG_HOME="+other, "PRIMALSCOPE_HISTORY="+filepath.Join(other, "history.db"))

	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want := runCLI(t, env, "", tc.args...)
			if want.code != 0 {
				t.Fatalf("the call: %+v", want)
			}
			id := lastCallID(t, env)
			ex := runCLI(t, env, "", "history", "export", id)
			line := strings.TrimSpace(ex.stdout)
			if ex.code != 0 || !strings.HasPrefix(line, "primalscope call ") || strings.Contains(line, "--socket-dir") {
				t.Fatalf("export: %+v", ex)
			}
			if strings.Contains(line, strings.TrimSpace(string(seed))) || strings.Contains(ex.stderr, strings.TrimSpace(string(seed))) {
				t.Fatal("the family seed was exported")
			}
			if saysSeed := strings.Contains(ex.stderr, "FAMILY_SEED"); saysSeed != tc.needSeed {
				t.Errorf("the FAMILY_SEED note: %v, want %v (%s)", saysSeed, tc.needSeed, ex.stderr)
			}
			runLine := func(extra ...string) (string, string, error) {
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				cmd := exec.CommandContext(ctx, "sh", "-c", line)
				cmd.Dir = elsewhere
				cmd.Env = append(append([]string(nil), base...), extra...)
				var out, errb bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &errb
				err := cmd.Run()
				return out.String(), errb.String(), err
			}
			if tc.needSeed {
				if _, stderr, err := runLine(); err == nil || !strings.Contains(stderr, "FAMILY_SEED") {
					t.Errorf("without FAMILY_SEED the line was not refused: %v %s", err, stderr)
				}
			}
			out, stderr, err := runLine("FAMILY_SEED=" + strings.TrimSpace(string(seed)))
			if err != nil || out != want.stdout {
				t.Fatalf("%s\nin %s gave %v\n%s%s\nwant\n%s", line, elsewhere, err, out, stderr, want.stdout)
			}
			for _, f := range []string{"pwned", "pwned2"} {
				if _, err := os.Stat(filepath.Join(elsewhere, f)); err == nil {
					t.Fatalf("the shell ran a command from the params: %s", line)
				}
			}
		})
	}
}
