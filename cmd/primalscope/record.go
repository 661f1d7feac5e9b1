// Recording the calls a command makes: the history journal on the call path,
// the entry a call becomes, and its outcome.

package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/ecoPrimals/primalscope/discovery"
	"github.com/ecoPrimals/primalscope/history"
	"github.com/ecoPrimals/primalscope/internal/config"
	"github.com/ecoPrimals/primalscope/internal/render"
	"github.com/ecoPrimals/primalscope/ipc"
	"github.com/ecoPrimals/primalscope/ipc/btsp"
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

// historySettings is the [history] section of the config file: from the
// config file read whole when it has been, else from the cache of the
// section when it holds this version of the file (a one-shot call then
// does not parse the whole file: its cost does not grow with the targets a
// user adds), else from the file read whole.
func (a *app) historySettings() config.History { return a.callSettings().History }

// callSettings is what a one-shot call reads of the config file ([history],
// discovery.trust_uids, the families' seed files): from the file read whole
// when it has been, else from the cache of them when it holds this version
// of the file (a call then does not parse the whole file: its cost does not
// grow with the targets a user adds), else from the file read whole.
func (a *app) callSettings() config.CallSettings {
	if !a.cfgLoaded() {
		if cs, ok := config.CallDefault(a.getenv); ok {
			return cs
		}
	}
	return config.CallSettingsOf(a.config())
}

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

// warnStateFolder says, once a command, what is wrong with the folder that
// holds the history at path (group- or world-writable, another user's).
// It may run on another goroutine than the command's (startRecording).
func (a *app) warnStateFolder(path string) {
	if a.stateWarned.Swap(true) {
		return
	}
	for _, w := range history.StateWarnings(path) {
		fmt.Fprintln(a.io.err, "primalscope: warning: "+render.Sanitize(w))
	}
}

// openHistory opens the history store for the history commands and folds
// the calls journalled since into it. A fold that fails is a warning: the
// store is still read.
func (a *app) openHistory(ctx context.Context) (*history.Store, error) {
	s, err := a.openStore(ctx)
	if err != nil {
		return nil, err
	}
	a.warnStateFolder(s.Path())
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
// --family-seed-file, the config's [families.<id>] seed_file, the
// demo's): history scrubs them wherever they turn up (a peer's
// error message echoing one, positional params), not only under secret keys.
func (a *app) knownSecrets() []string {
	var out []string
	if s := strings.TrimSpace(a.getenv("FAMILY_SEED")); s != "" {
		out = append(out, s)
	}
	files := []string{a.seedFile}
	if a.demoSeed != nil {
		files = append(files, a.demoSeed.file)
	}
	for _, f := range a.callSettings().SeedFiles {
		files = append(files, f) // other families' seeds
	}
	for _, f := range files {
		if f == "" {
			continue
		}
		if s, err := btsp.ReadSeedFile(f); err == nil && strings.TrimSpace(s) != "" {
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
	// The command's own bound (boundOneShot counts it from the start):
	// counted from here instead, the work after the answer could run past
	// it by the time the params took, and meet the backstop.
	var deadline time.Time
	if dl, ok := ctx.Value(waitDeadlineKey{}).(time.Time); ok {
		deadline = dl
	} else if a.timeout > 0 {
		deadline = time.Now().Add(a.timeout)
	}
	path, opts, err := a.historyStore()
	var j *history.Journal
	if err == nil {
		a.warnStateFolder(path)
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
// holding the lock never holds up this one. Its cost does not grow with the
// backlog: it counts at most foldBacklog records to decide, and folds at
// most foldBacklog (a limited fold: see history.FoldOptions.Limit), the
// fold every 32nd call does anyway, so a backlog left by a lock held for
// long (1,000 records) is worked off by the next calls 31 at a time (or by
// a reader at once), none of them paying more than that.
func (c *callRecorder) close() {
	if c == nil {
		return
	}
	if c.res != nil {
		c.res.Release() // nothing was recorded
		c.res = nil
	}
	if due, err := c.journal.BacklogAtLeast(foldBacklog, foldBacklogBytes); err != nil || !due {
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
	st, err := s.Fold(ctx, history.FoldOptions{NoWait: true, Limit: foldBacklog})
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
	var fp *ipc.ForeignPeerError
	if errors.As(err, &fp) {
		e.Params = nil // refused before a byte was sent: nothing went anywhere
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
