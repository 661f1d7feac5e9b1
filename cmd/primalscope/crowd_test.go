package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ecoPrimals/primalscope/ipc/ipctest"
)

// runCLILong is runCLI with a bound fit for a 2,000-socket directory on a
// loaded machine under -race (a hang guard, not a timing assertion).
func runCLILong(t *testing.T, env map[string]string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	var environ []string
	for k, v := range env {
		environ = append(environ, k+"="+v)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	code := run(ctx, args, &stdio{in: strings.NewReader(""), out: &out, err: &errb}, func(k string) string { return env[k] }, environ)
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}

// TestCrowdCheck runs check --level 1, with the default flags otherwise,
// over the directory of issue 11: 2,000 sockets, 500 of them hung (they
// accept and read but never answer). It judges all 1,500 answering
// sockets (each at level 1: the crowd's primals answer capabilities.list
// and health.liveness) and exits 0; each hung one is listed, not judged,
// as stale after a connection of its own. (discovery's TestCrowd checks
// the sweep that ls prints, and repeated sweeps.)
func TestCrowdCheck(t *testing.T) {
	if testing.Short() {
		t.Skip("load: not in -short")
	}
	dir, err := ipctest.TempDir()
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	crowd, err := ipctest.StartCrowd(dir, 1500, 500)
	if err != nil {
		t.Fatal(err)
	}
	defer crowd.Close()
	// HOME set, as a user's: the endpoint memory is kept in its file
	// (written once, at the end).
	home := t.TempDir()
	env := map[string]string{"HOME": home}
	start := time.Now()
	// --timeout 60s: the default 10 s bounds the whole command, and this
	// directory under -race on a loaded 2-core CI machine can take longer
	// (without -race it takes a few seconds; BENCHMARKS.md). What a cut
	// sweep prints is TestSweepCutByTimeout's.
	r := runCLILong(t, env, "--socket-dir="+dir, "--timeout", "60s", "check", "--json", "--level", "1")
	t.Logf("check took %v", time.Since(start).Round(time.Millisecond))
	if r.code != 0 {
		t.Errorf("check --level 1: exit %d: %s", r.code, r.stderr)
	}
	var doc struct {
		Targets []struct {
			Target string `json:"target"`
			State  string `json:"state"`
			Level  int    `json:"level"`
			Judged bool   `json:"judged"`
			NotWhy string `json:"not_judged_because"`
		} `json:"targets"`
		OK bool `json:"ok"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("%v: %.200s", err, r.stdout)
	}
	judged, stale, bad := 0, 0, 0
	for _, ct := range doc.Targets {
		live := strings.HasPrefix(ct.Target, "live")
		if !live && !strings.HasPrefix(ct.Target, "mute") {
			continue // a stdio bus of another process on this machine (found in /proc), not the crowd's
		}
		switch {
		case live && ct.Judged && ct.State == "live" && ct.Level >= 1:
			judged++
		case live:
			if bad++; bad <= 5 {
				t.Errorf("check: %s %s, judged=%v, level %d (%s)", ct.Target, ct.State, ct.Judged, ct.Level, ct.NotWhy)
			}
		case ct.Judged:
			t.Errorf("check: hung %s was judged", ct.Target)
		case ct.State == "stale" && strings.HasPrefix(ct.NotWhy, "stale: no answer"):
			stale++
		default:
			t.Errorf("check: hung %s is %s, not judged because %q", ct.Target, ct.State, ct.NotWhy)
		}
	}
	if judged != 1500 || stale != 500 || !doc.OK {
		t.Errorf("check: %d of 1500 live targets judged at level 1 or above, %d of 500 hung ones stale (ok=%v)", judged, stale, doc.OK)
	}
	// What the run learned reached the file: each answering socket's
	// prefix (it answered raw JSON).
	remembered := 0
	for k, b := range readMemoryFile(t, filepath.Join(home, ".local", "state")) {
		var f struct {
			Prefix *bool `json:"prefix"`
		}
		if err := json.Unmarshal(b, &f); err != nil {
			t.Fatalf("endpoint memory: %v", err)
		}
		if strings.Contains(k, "/live") && f.Prefix != nil && !*f.Prefix {
			remembered++
		}
	}
	if remembered != 1500 {
		t.Errorf("endpoint memory: %d of 1500 answering sockets remembered as prefix=false", remembered)
	}
	for _, p := range crowd.Silent {
		if crowd.Accepted(p) == 0 {
			t.Errorf("%s was never connected to", p)
		}
	}
}

// TestSweepCutByTimeout: ls and check are bounded by --timeout whole. When
// hung sockets would keep the sweep past it, the sweep ends early enough to
// print every target, the ones it could not judge as unknown (never stale,
// never dropped), and the command exits 4 within the bound.
func TestSweepCutByTimeout(t *testing.T) {
	if testing.Short() {
		t.Skip("load: not in -short")
	}
	dir, err := ipctest.TempDir()
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	crowd, err := ipctest.StartCrowd(dir, 20, 20)
	if err != nil {
		t.Fatal(err)
	}
	defer crowd.Close()
	for _, cmd := range [][]string{{"ls", "--json"}, {"check", "--json"}} {
		start := time.Now()
		// --stale 5s: a hung socket's own probe would outlast --timeout.
		r := runCLILong(t, map[string]string{}, append([]string{"--socket-dir=" + dir, "--timeout", "1s", "--stale", "5s"}, cmd...)...)
		took := time.Since(start)
		if r.code != exitTimeout || !strings.Contains(r.stderr, "--timeout (1s) ran out: 20 target(s)") {
			t.Errorf("%s: exit %d, stderr %q; want 4 and the count of unjudged targets", cmd[0], r.code, r.stderr)
		}
		if took > 1*time.Second+1500*time.Millisecond { // the bound is 1s+200ms; slack for -race on a loaded machine
			t.Errorf("%s took %v with --timeout 1s", cmd[0], took)
		}
		var doc struct {
			Targets []struct {
				Name   string `json:"name"`
				Target string `json:"target"`
				State  string `json:"state"`
			} `json:"targets"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
			t.Fatalf("%s: %v: %.300s", cmd[0], err, r.stdout)
		}
		live, unknown := 0, 0
		for _, x := range doc.Targets {
			name := x.Name + x.Target
			if !strings.HasPrefix(name, "live") && !strings.HasPrefix(name, "mute") {
				continue // a stdio bus of another process on this machine, not the crowd's
			}
			switch {
			case strings.HasPrefix(name, "live") && x.State == "live":
				live++
			case strings.HasPrefix(name, "mute") && x.State == "unknown":
				unknown++
			default:
				t.Errorf("%s: %s is %q", cmd[0], name, x.State)
			}
		}
		if live != 20 || unknown != 20 {
			t.Errorf("%s: %d live, %d unknown of 20 + 20", cmd[0], live, unknown)
		}
	}
}
