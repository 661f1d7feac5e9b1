// The history commands (history, save, export) and the store behind the TUI.

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/ecoPrimals/primalscope/history"
	"github.com/ecoPrimals/primalscope/internal/human"
	"github.com/ecoPrimals/primalscope/internal/render"
	"github.com/ecoPrimals/primalscope/internal/runbook"
	"github.com/ecoPrimals/primalscope/tui"
)

type historyFlags struct {
	asJSON  bool
	target  string
	method  string
	outcome string
	since   string
	limit   int
	jq      jqFlag
}

func (a *app) historyCmd() *cobra.Command {
	var f historyFlags
	cmd := &cobra.Command{
		Use:   "history [QUERY]",
		Short: "List and search past calls, newest first",
		Long: `List the calls primalscope made (from the command line and the TUI), newest
first. QUERY searches the target, method, params and error text (every word
must match, each as a word prefix). Filters narrow the list.

Calls are kept in $XDG_STATE_HOME/primalscope/history.db (--history PATH or
$PRIMALSCOPE_HISTORY to use another file). Secret-looking params (seeds,
passwords, tokens, keys...) are stored as "[redacted]". The oldest calls are
trimmed beyond 100,000 calls or 512 MiB ([history] max_rows, max_bytes in
the config file); named calls are kept.`,
		Example: `  primalscope history
  primalscope history storage --target nestgate --since 1h
  primalscope history --outcome error --json
  primalscope history save 42 daily-sign
  primalscope replay daily-sign
  primalscope history export 42 --as socat`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.listHistory(cmd.Context(), strings.Join(args, " "), f)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&f.asJSON, "json", false, "print a JSON array of the calls, with their results")
	fl.StringVar(&f.target, "target", "", "only calls to this target (name or endpoint)")
	fl.StringVar(&f.method, "method", "", "only calls of this method")
	fl.StringVar(&f.outcome, "outcome", "", "only calls that ended so: "+history.OutcomeList())
	fl.StringVar(&f.since, "since", "", "only calls since then: a duration back (90s, 2h, 3d) or a date (2026-11-22, RFC 3339)")
	fl.IntVar(&f.limit, "limit", 50, "most calls to show (0: all)")
	f.jq.add(cmd)
	cmd.AddCommand(a.historySaveCmd(), a.historyExportCmd())
	return cmd
}

// parseSince reads --since: a duration back from now (Go syntax, plus "d"
// for days) or a date or time.
func parseSince(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, nil
	}
	if strings.HasSuffix(s, "d") {
		if n, err := strconv.ParseFloat(strings.TrimSuffix(s, "d"), 64); err == nil && n >= 0 {
			return now.Add(-time.Duration(n * 24 * float64(time.Hour))), nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02 15:04:05", "2006-01-02 15:04", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, time.Local); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("--since %q: want a duration (90s, 2h, 3d) or a date (2026-11-22, 2026-11-22T10:00:00Z)", s)
}

func (a *app) listHistory(ctx context.Context, text string, f historyFlags) error {
	f.asJSON = f.asJSON || f.jq.set()
	q := history.Query{Text: text, Target: f.target, Method: f.method, Outcome: history.Outcome(f.outcome),
		Limit: f.limit, WithResults: f.asJSON}
	if f.outcome != "" && !q.Outcome.Valid() {
		return usageErr(fmt.Errorf("--outcome %q: want %s", f.outcome, history.OutcomeList()))
	}
	if f.limit < 0 {
		return usageErr(fmt.Errorf("--limit must not be negative"))
	}
	if f.limit == 0 {
		q.Limit = -1
	}
	since, err := parseSince(f.since, time.Now())
	if err != nil {
		return usageErr(err)
	}
	q.Since = since
	s, err := a.openHistory(ctx)
	if err != nil {
		return err
	}
	defer s.Close()
	entries, err := s.Search(ctx, q)
	if err != nil {
		return err
	}
	if f.asJSON {
		if entries == nil {
			entries = []history.Entry{}
		}
		if f.jq.set() {
			b, err := json.Marshal(entries)
			if err != nil {
				return err
			}
			return a.emitJSON(ctx, a.io.out, f.jq, b, false)
		}
		return a.encodeJSON(a.io.out, entries, false)
	}
	if len(entries) == 0 {
		fmt.Fprintln(a.io.err, "primalscope: no calls in history match")
		return nil
	}
	names := map[int64][]string{}
	if saved, err := s.Saved(ctx); err == nil {
		for _, sc := range saved {
			names[sc.ID] = append(names[sc.ID], sc.Name)
		}
	}
	a.printHistoryTable(a.io.out, entries, names)
	return nil
}

// printHistoryTable prints one call a line, newest first.
func (a *app) printHistoryTable(w io.Writer, entries []history.Entry, names map[int64][]string) {
	st := a.styler(w)
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tWHEN\tTARGET\tMETHOD\tOUTCOME\tTIME\tSIZE\tNAME")
	for _, e := range entries {
		size := human.Bytes(e.ResponseSize)
		if e.Truncated {
			size += " (cut)"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n",
			e.ID, e.Time.Local().Format("2006-01-02 15:04:05"),
			cell(e.Target, 28), cell(e.Method, 40), e.Outcome, human.Duration(e.Duration), size,
			cell(strings.Join(names[e.ID], ","), 30))
	}
	tw.Flush()
	// Colour after alignment, so escape codes do not upset the columns.
	lines := strings.SplitAfter(buf.String(), "\n")
	for i, l := range lines {
		if i == 0 || l == "" {
			io.WriteString(w, l)
			continue
		}
		io.WriteString(w, paintOutcome(st, l))
	}
}

// paintOutcome colours the outcome word of a table line.
func paintOutcome(st styler, line string) string {
	for _, o := range []struct {
		word, code string
	}{{" ok ", "32"}, {" error ", "31"}, {" timeout ", "33"}, {" unreachable ", "31"}, {" closed ", "31"}, {" refused ", "35"}, {" cancelled ", "33"}} {
		// The outcome column follows the method column; find it from the
		// left so a method named "ok" is not painted instead.
		if i := strings.Index(line, o.word); i >= 0 && outcomeColumn(line, i) {
			w := strings.TrimSpace(o.word)
			return line[:i+1] + st.paint(o.code, w) + line[i+1+len(w):]
		}
	}
	return line
}

// outcomeColumn reports whether the word at byte i is the fifth column.
func outcomeColumn(line string, i int) bool {
	return len(strings.Fields(line[:i])) == 5 // id, date, clock, target, method
}

// cell makes user or peer text safe for one table cell, at most n cells wide.
func cell(s string, n int) string {
	if s == "" {
		return "-"
	}
	s = render.Sanitize(s)
	s = strings.Map(func(r rune) rune {
		if r == ' ' {
			return '·' // a space would look like a column break
		}
		return r
	}, s)
	return human.Truncate(s, n)
}

func (a *app) historySaveCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "save ID NAME",
		Short: "Name a past call, to replay it by name",
		Long: `Give the call ID a NAME, so "primalscope replay NAME" sends it again. A name
must not start with "@" (that is an abstract socket) nor be a number (that
is a call id). Saving an existing name moves it. Named calls are never
trimmed from history.`,
		Args: argsFor(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := strconv.ParseInt(args[0], 10, 64)
			if err != nil {
				return usageErr(fmt.Errorf("ID %q is not a call id (see primalscope history)", args[0]))
			}
			s, err := a.openHistory(cmd.Context())
			if err != nil {
				return err
			}
			defer s.Close()
			if err := s.Save(cmd.Context(), id, args[1]); err != nil {
				if errors.Is(err, history.ErrBadName) || errors.Is(err, history.ErrNotFound) {
					return usageErr(err)
				}
				return err
			}
			fmt.Fprintf(a.io.out, "saved call %d as %s\n", id, render.Sanitize(args[1]))
			return nil
		},
	}
}

// lookupCall finds a call by id or saved name; not found is bad input.
func lookupCall(ctx context.Context, s *history.Store, ref string) (history.Entry, error) {
	e, err := s.Resolve(ctx, ref)
	if errors.Is(err, history.ErrNotFound) {
		return e, usageErr(fmt.Errorf("%w (see primalscope history)", err))
	}
	return e, err
}

func (a *app) historyExportCmd() *cobra.Command {
	var as string
	cmd := &cobra.Command{
		Use:   "export ID|NAME...",
		Short: "Print a past call as a command line, a socat line, its JSON envelope, or calls as a runbook",
		Long: `Print a past call in a form to share or script:
  --as command  the primalscope command line that makes the call again, from
                any directory: its endpoint (not the name, which may resolve
                to something else there), family, wire, riboCipher prefix,
                bus session and pool, shell-quoted. The family seed is never
                printed: stderr says when FAMILY_SEED must be set.
  --as socat    a printf ... | socat line that sends the raw request line
                (Unix, abstract and TCP sockets only; not to a socket that
                takes calls only through BTSP)
  --as json     the request envelope, one line, as primalscope sends it
  --as runbook  a book for primalscope run that makes every call given again,
                in order, and checks its answer (the result as equals; fields
                that differ between repeated calls become ignore paths; an
                error by its code); redacted params are read from the
                environment (the variables to set are named on stderr)
Notes on what the line needs or does on purpose are printed on stderr.`,
		Args: argsFor(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if as != "runbook" && len(args) > 1 {
				return usageErr(fmt.Errorf("--as %s exports one call; only --as runbook takes several", as))
			}
			s, err := a.openHistory(cmd.Context())
			if err != nil {
				return err
			}
			defer s.Close()
			if as == "runbook" {
				return a.exportRunbook(cmd.Context(), s, args)
			}
			e, err := lookupCall(cmd.Context(), s, args[0])
			if err != nil {
				return err
			}
			var out history.Command
			switch as {
			case "command":
				out, err = history.CommandFor(e)
			case "socat":
				out, err = history.SocatFor(e)
			case "json":
				var b []byte
				b, err = history.Envelope(e, 1)
				out.Line = string(b)
			default:
				return usageErr(fmt.Errorf("--as %q: want command, socat, json or runbook", as))
			}
			if err != nil {
				return usageErr(fmt.Errorf("export call %d: %w", e.ID, err))
			}
			if history.HasRedacted(e.Params) {
				fmt.Fprintln(a.io.err, `primalscope: warning: secret params were stored as "[redacted]"; put the real values back before use`)
			}
			for _, n := range out.Notes {
				fmt.Fprintln(a.io.err, "primalscope: note: "+render.Sanitize(n))
			}
			_, err = fmt.Fprintln(a.io.out, render.Sanitize(out.Line))
			return err
		},
	}
	cmd.Flags().StringVar(&as, "as", "command", "command, socat, json or runbook")
	return cmd
}

// exportRunbook prints a book made from the calls named (runbook.FromHistory).
func (a *app) exportRunbook(ctx context.Context, s *history.Store, refs []string) error {
	entries := make([]history.Entry, 0, len(refs))
	for _, ref := range refs {
		e, err := lookupCall(ctx, s, ref)
		if err != nil {
			return err
		}
		entries = append(entries, e)
	}
	book, notes := runbook.FromHistory("exported calls", entries)
	for _, n := range notes {
		fmt.Fprintln(a.io.err, "primalscope: note: "+render.Sanitize(n))
	}
	_, err := a.io.out.Write(book)
	return err
}

var _ tui.History = (*storeHistory)(nil)

type storeHistory struct {
	store   *history.Store
	journal *history.Journal
}

// tuiHistory opens the persistent history for the TUI; when it cannot be
// opened it warns and falls back to a history of this session only. The
// returned func closes it. Calls are recorded in the journal, as the CLI
// does, and folded into the database by the history's readers (Search,
// Get, LastParams), which the TUI runs in commands, never in Update.
func (a *app) tuiHistory(ctx context.Context) (tui.History, func()) {
	path, opts, err := a.historyStore()
	var s *history.Store
	var j *history.Journal
	if err == nil {
		a.warnStateFolder(path)
		s, err = history.Open(ctx, path, opts)
	}
	if err == nil {
		if j, err = history.OpenJournal(path, opts); err != nil {
			s.Close()
		}
	}
	if err != nil {
		fmt.Fprintln(a.io.err, "primalscope: warning: history: "+render.Sanitize(err.Error())+" (keeping this session's calls in memory only)")
		return tui.NewMemHistory(0), func() {}
	}
	h := &storeHistory{store: s, journal: j}
	return h, func() { s.Close() }
}

// Record writes the call to the journal (one file; a failure is dropped,
// the TUI has no place to say it).
func (h *storeHistory) Record(e history.Entry) { h.journal.Append(e) }

// fold brings the journal into the database when the write lock is free;
// otherwise the next read does.
func (h *storeHistory) fold(ctx context.Context) {
	h.store.Fold(ctx, history.FoldOptions{NoWait: true})
}

func (h *storeHistory) Search(ctx context.Context, text string, limit int) ([]history.Entry, error) {
	h.fold(ctx)
	if limit <= 0 {
		limit = -1
	}
	return h.store.Search(ctx, history.Query{Text: text, Limit: limit})
}

func (h *storeHistory) Get(ctx context.Context, id int64) (history.Entry, error) {
	h.fold(ctx)
	return h.store.Get(ctx, id)
}

func (h *storeHistory) LastParams(ctx context.Context, target, method string) (json.RawMessage, bool, error) {
	h.fold(ctx)
	es, err := h.store.Search(ctx, history.Query{Target: target, Method: method, Limit: 1})
	if err != nil || len(es) == 0 || es[0].ParamsTruncated {
		return nil, false, err
	}
	return es[0].Params, true, nil
}

func (h *storeHistory) Save(ctx context.Context, id int64, name string) error {
	return h.store.Save(ctx, id, name)
}
