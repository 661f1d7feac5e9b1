// Package livedin makes the state a long-time user of primalscope has, for
// benchmarks (bench/livedin, bench/run.sh, the cmd/primalscope benchmarks):
// an endpoint memory of many remembered endpoints, a history database of
// many calls (some saved by name), a journal backlog of calls recorded but
// not yet folded, and a config file with many named targets. It writes
// through primalscope's own packages, so the files are what the tool itself
// would have written.
package livedin

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ecoPrimals/primalscope/history"
	"github.com/ecoPrimals/primalscope/internal/paths"
	"github.com/ecoPrimals/primalscope/ipc"
)

// Options say how lived-in the state is.
type Options struct {
	StateHome  string // $XDG_STATE_HOME to fill (required)
	ConfigHome string // $XDG_CONFIG_HOME for the config file ("" for none)
	Endpoints  int    // endpoints remembered
	History    int    // calls in the history database
	Saved      int    // of them, saved by name
	Backlog    int    // calls in the journal, not yet folded
	Targets    int    // named targets in the config file
}

// Issue23 is the lived-in state of issue 23: 16,000 remembered endpoints,
// 100,000 calls in history (100 saved), a backlog of 1,000 journal records,
// 200 named targets.
func Issue23(stateHome, configHome string) Options {
	return Options{StateHome: stateHome, ConfigHome: configHome, Endpoints: 16000, History: 100000, Saved: 100, Backlog: 1000, Targets: 200}
}

// Build adds to the state at o.StateHome (and o.ConfigHome) what o says.
func Build(ctx context.Context, o Options) error {
	getenv := func(k string) string {
		switch k {
		case "XDG_STATE_HOME":
			return o.StateHome
		case "XDG_CONFIG_HOME":
			return o.ConfigHome
		}
		return ""
	}
	if o.StateHome == "" {
		return fmt.Errorf("lived-in state: no state home")
	}
	if o.Endpoints > 0 {
		// What calls and `ls` runs over crowded socket directories learned
		// (each answered raw JSON).
		mem, _ := ipc.OpenEndpointMemory(paths.StateDir(getenv))
		no := false
		for i := 0; i < o.Endpoints; i++ {
			mem.Update(Endpoint(i), func(f *ipc.EndpointFacts) { f.Prefix, f.Socket = &no, fmt.Sprintf("%d:1764000000.%d", 1000000+i, i) })
		}
		if err := mem.Flush(ctx); err != nil {
			return err
		}
	}
	dbPath, err := history.DefaultPathEnv(getenv)
	if err != nil {
		return err
	}
	if o.History > 0 {
		if err := fillHistory(ctx, dbPath, o); err != nil {
			return err
		}
	}
	if err := AddBacklog(dbPath, o.History, o.Backlog); err != nil {
		return err
	}
	if o.ConfigHome != "" && o.Targets > 0 {
		var b strings.Builder
		for i := 0; i < o.Targets; i++ {
			fmt.Fprintf(&b, "[[target]]\nname = \"t%04d\"\nendpoint = %q\n\n", i, Endpoint(i).String())
		}
		dir := paths.ConfigDir(getenv)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, paths.ConfigFileName), []byte(b.String()), 0o600); err != nil {
			return err
		}
	}
	return nil
}

func fillHistory(ctx context.Context, dbPath string, o Options) error {
	s, err := history.Open(ctx, dbPath, history.Options{})
	if err != nil {
		return err
	}
	defer s.Close()
	start := time.Now().Add(-90 * 24 * time.Hour)
	const batch = 5000
	for i := 0; i < o.History; i += batch {
		var es []history.Entry
		for j := i; j < min(i+batch, o.History); j++ {
			es = append(es, Entry(j, start.Add(time.Duration(j)*time.Minute)))
		}
		ids, err := s.Add(ctx, es...)
		if err != nil {
			return err
		}
		for k, id := range ids {
			if n := i + k; n < o.Saved {
				if err := s.Save(ctx, id, fmt.Sprintf("saved-%03d", n)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// AddBacklog writes n calls to the journal of the database at dbPath, the
// first numbered from.
func AddBacklog(dbPath string, from, n int) error {
	if n <= 0 {
		return nil
	}
	j, err := history.OpenJournal(dbPath, history.Options{})
	if err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		if _, err := j.Append(Entry(from+i, time.Now().Add(-time.Duration(n-i)*time.Second))); err != nil {
			return err
		}
	}
	return nil
}

// Endpoint is the i-th endpoint of the state: sockets in 8 directories.
func Endpoint(i int) ipc.Endpoint {
	return ipc.Endpoint{Transport: ipc.Unix, Path: fmt.Sprintf("/run/user/1000/biomeos/dir%d/primal%05d.sock", i%8, i)}
}

// Entry is the i-th call of a user's history: a small answer, as most are.
func Entry(i int, at time.Time) history.Entry {
	methods := []string{"health.liveness", "capabilities.list", "crypto.sign", "storage.get", "ipc.list", "dag.status"}
	ep := Endpoint(i % 16000)
	return history.Entry{
		Time:      at,
		Duration:  time.Duration(200+i%800) * time.Microsecond,
		Target:    fmt.Sprintf("primal%05d", i%16000),
		Endpoint:  ep.String(),
		Wire:      "jsonrpc",
		Transport: "unix",
		Method:    methods[i%len(methods)],
		Params:    json.RawMessage(fmt.Sprintf(`{"n":%d}`, i)),
		Result:    json.RawMessage(`{"ok":true,"value":"` + strings.Repeat("v", 100+i%300) + `"}`),
		Outcome:   history.OutcomeOK,
		Source:    history.SourceCLI,
	}
}

// TopUp adds journal records to the history under stateHome (its default
// database) until n wait to be folded.
func TopUp(stateHome string, n int) error {
	dbPath := filepath.Join(stateHome, paths.App, paths.HistoryFileName)
	j, err := history.OpenJournal(dbPath, history.Options{})
	if err != nil {
		return err
	}
	have, err := j.Pending()
	if err != nil {
		return err
	}
	return AddBacklog(dbPath, 1_000_000+int(time.Now().UnixNano()%1_000_000_000), n-have)
}
