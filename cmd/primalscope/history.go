package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/ecoPrimals/primalscope/discovery"
	"github.com/ecoPrimals/primalscope/history"
	"github.com/ecoPrimals/primalscope/internal/config"
	"github.com/ecoPrimals/primalscope/internal/human"
	"github.com/ecoPrimals/primalscope/internal/render"
	"github.com/ecoPrimals/primalscope/ipc"
	"github.com/ecoPrimals/primalscope/ipc/btsp"
	"github.com/ecoPrimals/primalscope/tui"
)

// recordWait bounds how long a command that reads history (and replay, to
// learn its new call's id) waits for the write lock to fold the journal.
const recordWait = 2 * time.Second

// foldBacklog and foldBacklogBytes are how many journal records, or how
// many bytes of them, make a call fold the journal after printing its
// answer (when the database's write lock is free, within --timeout). Below
// both the call leaves them to the next reader of the history: a call then
// costs one file write, and the database work is paid once every 32 calls
// (or 64 MiB), after printing, so the journal stays short even when history
// is never read.
//
// Large records are folded by bytes too, on purpose: storing a 4 MiB entry
// in the database costs about 15 ms a MiB (its pages through the WAL and
// the checkpoint) whoever pays it, so folding them only when history is
// read would just make one later call or reader pay for 32 of them at
// once. By bytes, every 16th 10 MB call pays for 16 after printing: the
// median call pays nothing, and a fold never waits for the lock and never
// outlasts --timeout.
const (
	foldBacklog      = 32
	foldBacklogBytes = 64 << 20
)

// historySettings is the [history] section of the config file.
func (a *app) historySettings() config.History { return a.config().History }

// historyOff says whether calls go unrecorded: --no-history, or
// enabled = false in [history] unless --history names a database.
func (a *app) historyOff() bool {
	return a.noHistory || a.historyPath == "" && !a.historySettings().On()
}

// historyLocation is where the history lives: --history, else
// $PRIMALSCOPE_HISTORY, else the config file's [history] path, else the
// default under $XDG_STATE_HOME.
func (a *app) historyLocation(hs config.History) (string, error) {
	switch {
	case a.historyPath != "":
		return a.historyPath, nil
	case a.getenv("PRIMALSCOPE_HISTORY") != "":
		return a.getenv("PRIMALSCOPE_HISTORY"), nil
	case hs.Path != "":
		return hs.Path, nil
	}
	return history.DefaultPathEnv(a.getenv)
}

// historyStore says where the history is and with which options.
func (a *app) historyStore() (string, history.Options, error) {
	hs := a.historySettings()
	path, err := a.historyLocation(hs)
	if err != nil {
		return "", history.Options{}, err
	}
	return path, history.Options{
		MaxRows: hs.MaxRows, MaxBytes: int64(hs.MaxBytes), EntryLimit: int(hs.EntryLimit),
		Secrets: a.knownSecrets(),
	}, nil
}

// openStore opens the history database without folding its journal.
func (a *app) openStore(ctx context.Context) (*history.Store, error) {
	path, opts, err := a.historyStore()
	if err != nil {
		return nil, err
	}
	return history.Open(ctx, path, opts)
}

// openHistory opens the history store for the history commands and folds
// the calls journalled since into it. A fold that fails is a warning: the
// store is still read.
func (a *app) openHistory(ctx context.Context) (*history.Store, error) {
	s, err := a.openStore(ctx)
	if err != nil {
		return nil, err
	}
	// Wait for another process's write lock, but not long: a command that
	// reads history is not held up by a writer that never lets go. The
	// folding itself is not cut short.
	wait := recordWait
	if a.timeout > 0 && a.timeout < wait {
		wait = a.timeout
	}
	st, err := s.Fold(ctx, history.FoldOptions{NoWait: true, LockWait: wait})
	a.foldWarnings(st, err, true)
	return s, nil
}

// foldWarnings reports damaged journal records, and a failed fold when
// loud (a fold that was only opportunistic fails quietly when the database
// is busy or time is up).
func (a *app) foldWarnings(st history.FoldStats, err error, loud bool) {
	for _, m := range st.SetAside {
		fmt.Fprintln(a.io.err, "primalscope: warning: "+render.Sanitize(m))
	}
	if err == nil {
		return
	}
	if !loud && (errors.Is(err, history.ErrBusy) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)) {
		return
	}
	fmt.Fprintln(a.io.err, "primalscope: warning: history: "+render.Sanitize(err.Error())+" (calls made since the last fold may not be shown yet)")
}

// knownSecrets are the family seeds this run knows of ($FAMILY_SEED,
// --family-seed-file): history scrubs them wherever they turn up (a peer's
// error message echoing one, positional params), not only under secret keys.
func (a *app) knownSecrets() []string {
	var out []string
	if s := strings.TrimSpace(a.getenv("FAMILY_SEED")); s != "" {
		out = append(out, s)
	}
	if a.seedFile != "" {
		if s, err := btsp.ReadSeedFile(a.seedFile); err == nil && strings.TrimSpace(s) != "" {
			out = append(out, strings.TrimSpace(s))
		}
	}
	return out
}

// callRecorder records the calls one command makes, in the history's
// journal: the database is not opened before the answer is printed. A nil
// *callRecorder records nothing (history off, or the journal could not be
// made).
type callRecorder struct {
	a        *app
	journal  *history.Journal
	path     string
	opts     history.Options
	deadline time.Time // the end of the command's --timeout (zero: none)
	// res is the record file created ahead for the first entry (nil: none,
	// or used); later entries are appended to the journal as usual.
	res *history.Reservation
}

// startRecording readies the history's journal for recording, unless
// --no-history. It does not open the database. A journal that cannot be
// made is a warning, never a failed call.
func (a *app) startRecording(ctx context.Context) *callRecorder {
	if a.historyOff() {
		return nil
	}
	var deadline time.Time
	if a.timeout > 0 {
		deadline = time.Now().Add(a.timeout)
	}
	path, opts, err := a.historyStore()
	var j *history.Journal
	if err == nil {
		j, err = history.OpenJournal(path, opts)
	}
	if err != nil {
		fmt.Fprintln(a.io.err, "primalscope: warning: history: "+render.Sanitize(err.Error())+" (the call is not recorded)")
		return nil
	}
	// The record's file is created now, while the call is made: creating a
	// file is the dearest step of a record on some file systems. If it
	// cannot be, the entry is appended as usual (and a failure said then).
	res, _ := j.Reserve()
	return &callRecorder{a: a, journal: j, path: path, opts: opts, deadline: deadline, res: res}
}

// takeReservation returns the reserved record file, if one is left, for
// the entry about to be recorded (called from the command's goroutine).
func (c *callRecorder) takeReservation() *history.Reservation {
	res := c.res
	c.res = nil
	return res
}

// appendEntry writes e to the journal, into res if it is not nil.
func (c *callRecorder) appendEntry(res *history.Reservation, e history.Entry) (string, error) {
	if res != nil {
		return res.Append(e)
	}
	return c.journal.Append(e)
}

// record writes e to the journal, redacted and cut, and returns when it is
// there: from then on the call is in history even if the process is
// killed (see history.Journal). It costs one file write. It returns the
// journal record's id ("" when the call was not recorded). A call that
// printed an answer records it with recordAsync instead, beside printing.
func (c *callRecorder) record(_ context.Context, e history.Entry) string {
	if c == nil {
		return ""
	}
	e.Source = history.SourceCLI
	id, err := c.appendEntry(c.takeReservation(), e)
	if err != nil {
		fmt.Fprintln(c.a.io.err, "primalscope: warning: history: "+render.Sanitize(err.Error()))
		return ""
	}
	return id
}

// pendingRecord is a journal write under way (recordAsync).
type pendingRecord struct {
	c    *callRecorder
	done chan struct{} // closed when the write has ended
	id   string        // set before done is closed
	err  error         // set before done is closed
	told bool          // the warning for err has been printed
}

// recordAsync starts writing e to the journal, as record does, in a
// goroutine, and returns at once. The caller owns the goroutine: it must
// call wait before the command returns. e's byte slices are only read, so
// the caller may print them meanwhile. A nil *callRecorder returns a
// pendingRecord that is already done.
func (c *callRecorder) recordAsync(e history.Entry) *pendingRecord {
	p := &pendingRecord{c: c, done: make(chan struct{})}
	if c == nil {
		close(p.done)
		return p
	}
	e.Source = history.SourceCLI
	res := c.takeReservation()
	go func() {
		defer close(p.done)
		p.id, p.err = c.appendEntry(res, e)
	}()
	return p
}

// gate returns a channel closed when the journal write ends or when ctx
// does (the command's bound for waits other than the call: boundWait),
// whichever comes first. A record that cannot be written in time (a stuck
// file system) must not cost the user an answer the peer gave: the answer
// is then printed unrecorded and wait says so.
func (p *pendingRecord) gate(ctx context.Context) <-chan struct{} {
	g := make(chan struct{})
	go func() {
		defer close(g)
		select {
		case <-p.done:
		case <-ctx.Done():
		}
	}()
	return g
}

// wait waits for the journal write to end, at most until ctx does, and
// returns the record's id ("" when the call was not recorded). A failed or
// late write is a warning on stderr, printed once, from the caller's
// goroutine.
func (p *pendingRecord) wait(ctx context.Context) string {
	select {
	case <-p.done:
	case <-ctx.Done():
		if !p.told {
			p.told = true
			fmt.Fprintln(p.c.a.io.err, "primalscope: warning: history: the call's record was not written within --timeout; it may be missing from history")
		}
		return ""
	}
	if p.err != nil && !p.told {
		p.told = true
		fmt.Fprintln(p.c.a.io.err, "primalscope: warning: history: "+render.Sanitize(p.err.Error()))
	}
	return p.id
}

// close runs after the answer is printed. It removes the reserved record
// file if nothing was recorded. When the journal has grown to foldBacklog
// records it folds them into the database, but only if the write lock is
// free at once and only within what is left of --timeout: another process
// holding the lock never holds up this one. It folds at most
// 4*foldBacklog records: a backlog left by a lock held for long is worked
// off by the next calls a share at a time (or by a reader at once).
func (c *callRecorder) close() {
	if c == nil {
		return
	}
	if c.res != nil {
		c.res.Release() // nothing was recorded
		c.res = nil
	}
	if n, size, err := c.journal.Backlog(); err != nil || n < foldBacklog && size < foldBacklogBytes {
		return
	}
	ctx, cancel := c.bounded(context.Background())
	defer cancel()
	if ctx.Err() != nil {
		return
	}
	opts := c.opts
	opts.BusyTimeout = -1 // never wait for the lock, not even to open
	s, err := history.Open(ctx, c.path, opts)
	if err != nil {
		c.a.foldWarnings(history.FoldStats{}, err, false)
		return
	}
	defer s.Close()
	st, err := s.Fold(ctx, history.FoldOptions{NoWait: true, Limit: 4 * foldBacklog})
	c.a.foldWarnings(st, err, false)
}

// bounded limits ctx to the command's --timeout.
func (c *callRecorder) bounded(ctx context.Context) (context.Context, context.CancelFunc) {
	if c.deadline.IsZero() {
		return context.WithCancel(ctx)
	}
	return context.WithDeadline(ctx, c.deadline)
}

// folded folds the journal into the database (waiting for the lock, at most
// recordWait and never past --timeout) and returns the id the record rec
// got there, 0 when it cannot tell.
func (c *callRecorder) folded(ctx context.Context, rec string) int64 {
	if c == nil || rec == "" {
		return 0
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordWait)
	defer cancel()
	ctx, cancel2 := c.bounded(ctx)
	defer cancel2()
	s, err := history.Open(ctx, c.path, c.opts)
	if err != nil {
		c.a.foldWarnings(history.FoldStats{}, err, false)
		return 0
	}
	defer s.Close()
	st, err := s.Fold(ctx, history.FoldOptions{NoWait: true, LockWait: recordWait})
	c.a.foldWarnings(st, err, false)
	e, err := s.GetRecord(ctx, rec)
	if err != nil {
		return 0
	}
	return e.ID
}

// callEntry describes a finished call for history. err is what Send (or
// the dial) returned; conn and resp may be nil.
func (a *app) callEntry(t target, conn *ipc.Conn, req ipc.Request, resp *ipc.Response, err error, start time.Time) history.Entry {
	wire := "jsonrpc"
	if w, werr := ipc.ParseWire(a.wire); werr == nil {
		wire = w.String()
	}
	e := history.Entry{
		Time:      start,
		Duration:  time.Since(start),
		Target:    t.Arg,
		Endpoint:  absEndpoint(t.Endpoint).String(),
		Family:    t.Family,
		Wire:      wire,
		Transport: string(t.Endpoint.Transport),
		Method:    req.Method,
		Params:    req.Params,
		Session:   req.SessionID,
		Pool:      req.Pool,
		Outcome:   outcomeOf(err),
		Source:    history.SourceCLI,
	}
	if conn != nil {
		if d := conn.Transport(); d != "" {
			e.Transport = d // "unix+ribocipher", "unix+btsp(chacha20_poly1305)"...
		}
	}
	e.Prefix = strings.Contains(e.Transport, "ribocipher")
	if e.Family == "" && t.Endpoint.Transport == ipc.Unix {
		// A known primal's family-scoped socket names its family
		// (beardog-<family>.sock), as discovery reads it.
		if base, ok := strings.CutSuffix(filepath.Base(t.Endpoint.Path), ".sock"); ok {
			if _, fam := discovery.NewFamilyMatcher(nil).Split(base); fam != "default" {
				e.Family = fam
			}
		}
	}
	if e.Family == "" {
		e.Family = a.familyID() // --family or $FAMILY_ID: what the name was resolved with
	}
	if resp != nil {
		e.Duration = resp.Elapsed
		e.Result = resp.Result
		e.ResponseSize = int64(len(resp.Raw))
		if resp.Error != nil {
			e.Error = &history.RPCError{Code: resp.Error.Code, Message: resp.Error.Message, Data: resp.Error.Data}
		}
	}
	if e.Error == nil && err != nil {
		e.Error = &history.RPCError{Message: err.Error()}
	}
	return e
}

// absEndpoint makes a relative socket path absolute (from the working
// directory), so that a recorded call can be replayed or exported and run
// from anywhere. Other endpoints are returned as they are.
func absEndpoint(ep ipc.Endpoint) ipc.Endpoint {
	if ep.Transport == ipc.Unix && ep.Path != "" && !filepath.IsAbs(ep.Path) {
		if p, err := filepath.Abs(ep.Path); err == nil {
			ep.Path = p
		}
	}
	return ep
}

// outcomeOf names how a call ended, in the terms of the exit codes: this
// command line's own refusals and "nothing to connect to" first, then
// history.OutcomeOf (the classification the TUI records with too).
func outcomeOf(err error) history.Outcome {
	var (
		sec *securityError
		cn  *connectError
		nf  *discovery.NotFoundError
	)
	switch {
	case err == nil:
		return history.OutcomeOK
	case errors.As(err, &sec):
		return history.OutcomeRefused
	case errors.As(err, &cn), errors.As(err, &nf):
		return history.OutcomeUnreachable
	}
	return history.OutcomeOf(err)
}

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
			cell(e.Target, 28), cell(e.Method, 40), e.Outcome, elapsed(e.Duration), size,
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
		Use:   "export ID|NAME",
		Short: "Print a past call as a command line, a socat line or its JSON envelope",
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
Notes on what the line needs or does on purpose are printed on stderr.`,
		Args: argsFor(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := a.openHistory(cmd.Context())
			if err != nil {
				return err
			}
			defer s.Close()
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
				return usageErr(fmt.Errorf("--as %q: want command, socat or json", as))
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
	cmd.Flags().StringVar(&as, "as", "command", "command, socat or json")
	return cmd
}

type replayFlags struct {
	target string
	params string
	asJSON bool
	jq     jqFlag
	// The global flags the user gave, which the recorded call's own do not
	// override.
	wireSet, familySet, prefixSet bool
}

func (a *app) replayCmd() *cobra.Command {
	var f replayFlags
	cmd := &cobra.Command{
		Use:   "replay ID|NAME",
		Short: "Send a past call again and show what changed in the answer",
		Long: `Send the call ID (or the call saved as NAME) again, to the same target or
to --target, and show how the answer differs from the stored one: one line a
change, "+" added, "-" removed, "~" changed, with jq-style paths (.a.b[3]);
arrays are aligned by element, so an inserted element is one "+". The new
call is recorded too.

The call goes to the name it was made to when that still resolves, else to
the endpoint it was made at (said on stderr), with the family, wire and
riboCipher prefix it was made with (the flags override them). A BTSP call
needs the family seed as call does ($FAMILY_SEED or --family-seed-file).

Params stored as "[redacted]" are not sent: give the real ones with --params.

Exit codes as for call: 0 the peer answered (changed or not), 1 it answered
with an error, 2 unknown call or bad input, 3 cannot connect, 4 timed out,
5 refused for security.`,
		Example: `  primalscope replay 42
  primalscope replay daily-sign --target tcp://10.0.0.5:9200
  primalscope replay 42 --json`,
		Args: argsFor(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			changed := func(name string) bool {
				fl := cmd.Flag(name)
				return fl != nil && fl.Changed
			}
			f.wireSet, f.familySet, f.prefixSet = changed("wire"), changed("family"), changed("prefix")
			return a.replay(cmd.Context(), args[0], f)
		},
	}
	cmd.Flags().StringVar(&f.target, "target", "", "send to this TARGET instead of the original one")
	cmd.Flags().StringVar(&f.params, "params", "", "send these params instead (JSON, @file or -)")
	cmd.Flags().BoolVar(&f.asJSON, "json", false, "print the changes as JSON")
	f.jq.add(cmd)
	return cmd
}

// replayTarget chooses where a replayed call goes: the name it was made
// to, when that still resolves (a note on stderr when it now leads
// elsewhere), else the endpoint it was made at (history records it
// absolute), saying so on stderr; a call made to an address (a bus pool
// too: its endpoint is the bus) goes to its recorded endpoint. It returns
// what to dial and, when that is not the name, the name to record the new
// call under.
func (a *app) replayTarget(ctx context.Context, old history.Entry) (arg, recordAs string) {
	name := old.Target
	switch {
	case name == "":
		return old.Endpoint, ""
	case old.Endpoint == "":
		return name, ""
	}
	if _, err := ipc.ParseEndpoint(name); err == nil {
		return old.Endpoint, "" // an address typed relative resolves only where it was typed
	}
	t, err := a.resolve(ctx, name)
	if err != nil {
		fmt.Fprintf(a.io.err, "primalscope: %s does not resolve now (%s); replaying to the endpoint the call was made at: %s\n",
			render.Sanitize(name), render.Sanitize(err.Error()), render.Sanitize(old.Endpoint))
		return old.Endpoint, name
	}
	was := old.Endpoint
	if ep, err := ipc.ParseEndpoint(was); err == nil {
		was = absEndpoint(ep).String()
	}
	if now := absEndpoint(t.Endpoint).String(); now != was {
		fmt.Fprintf(a.io.err, "primalscope: note: %s now resolves to %s (the call was made at %s)\n",
			render.Sanitize(name), render.Sanitize(now), render.Sanitize(old.Endpoint))
	}
	if t.Family != "" && a.family == "" {
		a.family = t.Family // the family the name carried, as dialing by name would use
	}
	return t.Endpoint.String(), name
}

// replayDoc is replay's --json output.
type replayDoc struct {
	Replayed   int64             `json:"replayed"`
	ID         int64             `json:"id,omitempty"` // the new call's id, when recorded
	Target     string            `json:"target"`
	Method     string            `json:"method"`
	OldOutcome history.Outcome   `json:"old_outcome"`
	Outcome    history.Outcome   `json:"outcome"`
	Comparable bool              `json:"comparable"` // false when the stored answer was cut
	Changes    []history.Change  `json:"changes"`
	Error      *history.RPCError `json:"error,omitempty"`
}

func (a *app) replay(ctx context.Context, ref string, f replayFlags) error {
	s, err := a.openHistory(ctx)
	if err != nil {
		return err
	}
	old, err := lookupCall(ctx, s, ref)
	s.Close()
	if err != nil {
		return err
	}
	if old.ParamsTruncated {
		return usageErr(fmt.Errorf("call %d: %w, so it cannot be sent again", old.ID, history.ErrParamsCut))
	}
	params := old.Params
	if f.params != "" {
		if params, err = a.readParams(f.params); err != nil {
			return err
		}
	} else if history.HasRedacted(params) {
		return usageErr(fmt.Errorf(`call %d had secret params, stored as "[redacted]"; give them with --params`, old.ID))
	}
	// The call is made as it was: its wire, family and prefix, unless the
	// user says otherwise (the seed is the user's to give, as for call).
	if !f.wireSet && old.Wire != "" {
		a.wire = old.Wire
	}
	if !f.familySet && old.Family != "" {
		a.family = old.Family
	}
	if !f.prefixSet && old.Prefix {
		a.prefix = "on"
	}
	targetArg, recordAs := f.target, ""
	if targetArg == "" {
		targetArg, recordAs = a.replayTarget(ctx, old)
	}

	rec := a.startRecording(ctx)
	defer rec.close()
	req := ipc.Request{Method: old.Method, Params: params, SessionID: old.Session, Pool: old.Pool}
	cctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	start := time.Now()
	conn, t, err := a.dial(cctx, targetArg, nil)
	if recordAs != "" && t.Arg != "" {
		t.Arg, t.Name = recordAs, recordAs // the name it was called by, reached at its endpoint
	}
	if err != nil {
		if t.Arg != "" {
			rec.record(ctx, a.callEntry(t, nil, req, nil, err, start))
		}
		return err
	}
	defer closeConn(ctx, conn) // within the command's deadline (deadline.go)
	resp, err := conn.Send(cctx, req)
	newID := rec.folded(ctx, rec.record(ctx, a.callEntry(t, conn, req, resp, err, start)))
	var re *ipc.RPCError
	answered := err == nil || (errors.As(err, &re) && resp != nil)
	if !answered {
		return fmt.Errorf("%s: %w", t.Name, err)
	}

	doc := replayDoc{Replayed: old.ID, ID: newID, Target: t.Name, Method: old.Method,
		OldOutcome: old.Outcome, Outcome: outcomeOf(err), Comparable: !old.Truncated}
	if resp.Error != nil {
		doc.Error = &history.RPCError{Code: resp.Error.Code, Message: resp.Error.Message, Data: resp.Error.Data}
	}
	if doc.Comparable {
		oldDoc, newDoc := answers(old.Result, old.Error, old.Outcome, resp.Result, doc.Error)
		changes, derr := history.Diff(oldDoc, newDoc)
		if derr != nil {
			doc.Comparable = false
			fmt.Fprintln(a.io.err, "primalscope: warning: cannot compare the answers: "+render.Sanitize(derr.Error()))
		}
		doc.Changes = changes
	}
	if doc.Changes == nil {
		doc.Changes = []history.Change{}
	}

	if f.jq.set() {
		if err := a.emitDoc(ctx, f.jq, doc); err != nil {
			return err
		}
	} else if f.asJSON {
		if err := a.encodeJSON(a.io.out, doc, false); err != nil {
			return err
		}
	} else {
		idNote := ""
		if newID != 0 {
			idNote = fmt.Sprintf(" (call %d)", newID)
		}
		fmt.Fprintf(a.io.err, "primalscope: replayed call %d, %s %s from %s: %s → %s in %s%s\n",
			old.ID, render.Sanitize(t.Name), render.Sanitize(old.Method), old.Time.Local().Format("2006-01-02 15:04:05"),
			old.Outcome, doc.Outcome, elapsed(resp.Elapsed), idNote)
		if !doc.Comparable {
			fmt.Fprintf(a.io.err, "primalscope: the stored answer was cut (%s of it kept): no diff; the new answer follows\n",
				human.Bytes(old.ResponseSize))
			if err := a.printJSON(a.io.out, resp.Result, false); err != nil {
				return err
			}
		} else {
			st := a.styler(a.io.out)
			if err := history.FormatDiff(a.io.out, doc.Changes, history.DiffFormat{Color: st.on}); err != nil {
				return err
			}
		}
	}
	if re != nil {
		return &quietError{code: exitPeer, err: err}
	}
	return nil
}

// answers builds the two documents replay compares. When both calls
// succeeded they are the results themselves (paths like .a.b); otherwise
// each is {"result": ...} or {"error": ...} so a switch between result and
// error shows. A call that got no answer is absent. The new answer is
// redacted as the stored one was.
func answers(oldRes json.RawMessage, oldErr *history.RPCError, oldOutcome history.Outcome,
	newRes json.RawMessage, newErr *history.RPCError) (json.RawMessage, json.RawMessage) {
	redact := func(b json.RawMessage) json.RawMessage {
		if len(b) == 0 {
			return b
		}
		r, _, err := history.Redact(b)
		if err != nil {
			return b
		}
		return r
	}
	newRes = redact(newRes)
	if newErr != nil {
		ne := *newErr
		ne.Data = redact(ne.Data)
		newErr = &ne
	}
	if oldOutcome == history.OutcomeOK && newErr == nil {
		if len(oldRes) == 0 {
			oldRes = json.RawMessage("null")
		}
		if len(newRes) == 0 {
			newRes = json.RawMessage("null")
		}
		return oldRes, newRes
	}
	wrap := func(res json.RawMessage, e *history.RPCError, answered bool) json.RawMessage {
		if !answered {
			return nil
		}
		var m map[string]any
		if e != nil {
			m = map[string]any{"error": e}
		} else {
			if len(res) == 0 {
				res = json.RawMessage("null")
			}
			m = map[string]any{"result": res}
		}
		b, _ := json.Marshal(m)
		return b
	}
	oldAnswered := oldOutcome == history.OutcomeOK || (oldOutcome == history.OutcomeError && oldErr != nil)
	return wrap(oldRes, oldErr, oldAnswered), wrap(newRes, newErr, true)
}

// storeHistory is the persistent history behind the TUI (tui.History).
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
