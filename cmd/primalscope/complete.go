package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode"

	"github.com/spf13/cobra"

	"github.com/ecoPrimals/primalscope/discovery"
	"github.com/ecoPrimals/primalscope/discovery/capability"
	"github.com/ecoPrimals/primalscope/history"
	"github.com/ecoPrimals/primalscope/internal/paths"
	"github.com/ecoPrimals/primalscope/internal/readfile"
	"github.com/ecoPrimals/primalscope/ipc"
)

// Shell completion must never make the shell wait: what it looks up live
// (a discovery sweep, a capabilities.list) has this budget, and a sweep
// younger than completionFresh is reused from the cache file.
const (
	completionBudget = 250 * time.Millisecond
	completionFresh  = 5 * time.Second
	// completionStale is how old a cached sweep may be and still be
	// offered at once while a new one is made in the background.
	completionStale = 10 * time.Minute
	// completionMax bounds what a cache file and one answer hold.
	completionMax = 2000
	// completionCacheMax bounds the cache file read back.
	completionCacheMax = 4 << 20
)

// Values of the flags that take one of a few words.
var (
	wireValues   = []string{"auto\tdetect from the peer", "jsonrpc\tJSON-RPC 2.0 lines", "lean\tlean NDJSON {type,data}", "holon\tHolon-RPC"}
	colorValues  = []string{"auto\tcolour on a terminal, unless NO_COLOR", "always\tcolour even into a pipe (beats NO_COLOR)", "never\tno colour"}
	cipherValues = []string{"auto\tthe best the peer offers", "chacha20_poly1305\tencrypted session", "hmac_plain\tauthenticated, not encrypted", "negotiate\tnull, then the btsp.negotiate upgrade", "null\tno session protection"}
	prefixValues = []string{"auto\tsend EC 01, fall back and remember", "on\talways send the riboCipher prefix", "off\tnever send it"}
	asValues     = []string{"command\tthe primalscope command line", "socat\ta printf | socat line", "json\tthe request envelope"}
	outcomeValue = []string{"ok", "error", "timeout", "unreachable", "closed", "refused", "cancelled"}
)

// completions registers dynamic completion on every command and flag that
// takes a value primalscope can know: TARGET, METHOD, call ids and saved
// names, and flag values.
func (a *app) completions(root *cobra.Command) {
	words := func(vals []string) cobra.CompletionFunc {
		return func(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			var out []cobra.Completion
			for _, v := range vals {
				if strings.HasPrefix(v, toComplete) {
					out = append(out, v)
				}
			}
			return out, cobra.ShellCompDirectiveNoFileComp
		}
	}
	flag := func(c *cobra.Command, name string, f cobra.CompletionFunc) {
		if c.Flag(name) != nil {
			_ = c.RegisterFlagCompletionFunc(name, f)
		}
	}
	flag(root, "wire", words(wireValues))
	flag(root, "color", words(colorValues))
	flag(root, "btsp-cipher", words(cipherValues))
	flag(root, "prefix", words(prefixValues))
	flag(root, "theme", a.completeTheme)
	flag(root, "family", a.completeFamily)
	flag(root, "socket-dir", func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return nil, cobra.ShellCompDirectiveFilterDirs
	})
	for _, c := range root.Commands() {
		switch c.Name() {
		case "call":
			c.ValidArgsFunction = a.completeTargetThenMethod
		case "caps":
			c.ValidArgsFunction = a.completeOneTarget
		case "map":
			c.ValidArgsFunction = a.completeOneTarget
			flag(c, "fail-on", words([]string{"gap", "degraded"}))
		case "check", "tail":
			c.ValidArgsFunction = a.completeTargets
		case "replay":
			c.ValidArgsFunction = a.completeCallRef
			flag(c, "target", a.completeTargetFlag)
		case "history":
			flag(c, "target", a.completeTargetFlag)
			flag(c, "outcome", words(outcomeValue))
			flag(c, "method", a.completeHistoryMethod)
			for _, sub := range c.Commands() {
				switch sub.Name() {
				case "export":
					sub.ValidArgsFunction = a.completeCallRef
					flag(sub, "as", words(asValues))
				case "save":
					sub.ValidArgsFunction = a.completeCallID
				}
			}
		}
	}
}

// completionTarget is one target as the completion cache keeps it.
type completionTarget struct {
	Name    string   `json:"name"`
	Aliases []string `json:"aliases,omitempty"`
	Family  string   `json:"family,omitempty"`
	Address string   `json:"address,omitempty"`
	State   string   `json:"state,omitempty"`
	Methods []string `json:"methods,omitempty"`
}

// completionCache is the file $XDG_CACHE_HOME/primalscope/complete-targets.json:
// the last short sweep, for the places it looked in (Key).
type completionCache struct {
	Key     string             `json:"key"`
	Time    time.Time          `json:"time"`
	Targets []completionTarget `json:"targets"`
}

// completionCachePath is where the cache lives ("" when there is no cache
// directory: then every completion sweeps).
func (a *app) completionCachePath() string { return paths.CompletionCacheFile(a.getenv) }

// completionKey names the places a sweep looks in, so that a cache made
// for other socket directories or another family is not used.
func (a *app) completionKey() string {
	h := sha256.New()
	for _, d := range discovery.CandidateSocketDirs(a.getenv, a.socketDirs) {
		fmt.Fprintf(h, "dir %s\n", d)
	}
	fmt.Fprintf(h, "family %s\n", a.familyID())
	return hex.EncodeToString(h.Sum(nil)[:12])
}

func (a *app) readCompletionCache(path, key string) (*completionCache, bool) {
	if path == "" {
		return nil, false
	}
	// A cache file grown wild, or something else in its place, is ignored.
	b, err := readfile.Regular(path, completionCacheMax)
	if err != nil {
		return nil, false
	}
	var c completionCache
	if json.Unmarshal(b, &c) != nil || c.Key != key {
		return nil, false
	}
	return &c, true
}

// writeCompletionCache replaces the cache file whole (write, then rename),
// private to the user.
func writeCompletionCache(path string, c *completionCache) {
	if path == "" {
		return
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return
	}
	b, err := json.Marshal(c)
	if err != nil {
		return
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".complete-*.tmp")
	if err != nil {
		return
	}
	_, werr := tmp.Write(b)
	cerr := tmp.Close()
	if werr != nil || cerr != nil || os.Rename(tmp.Name(), path) != nil {
		os.Remove(tmp.Name())
	}
}

// completionTargets returns the targets to complete from: the cached
// sweep when it is fresh; a cached one up to completionStale old at once,
// while a background process sweeps again for the next Tab
// (stale-while-revalidate); else a new sweep cut at completionBudget (what
// it found by then is used).
func (a *app) completionTargets(ctx context.Context) []completionTarget {
	path, key := a.completionCachePath(), a.completionKey()
	old, ok := a.readCompletionCache(path, key)
	age := time.Since(old.timeOr())
	if ok && age >= 0 && age < completionFresh {
		return old.Targets
	}
	if ok && age >= 0 && age < completionStale && a.refreshInBackground(path) {
		return old.Targets
	}
	return a.sweepForCompletion(ctx, path, key, old)
}

func (c *completionCache) timeOr() time.Time {
	if c == nil {
		return time.Time{}
	}
	return c.Time
}

// sweepForCompletion sweeps within completionBudget and writes the cache.
// old (may be nil) fills in what a cut sweep did not learn.
func (a *app) sweepForCompletion(ctx context.Context, path, key string, old *completionCache) []completionTarget {
	ok := old != nil
	ctx, cancel := context.WithTimeout(ctx, completionBudget)
	defer cancel()
	d, err := a.discoverer(discoverFlags{stale: completionBudget * 4 / 5, noProc: true}, nil)
	if err != nil {
		if ok {
			return old.Targets
		}
		return nil
	}
	snap, _ := d.Sweep(ctx, nil) // cut at the budget: what was found is kept
	if snap == nil || len(snap.Targets) == 0 {
		if ok {
			return old.Targets
		}
		return nil
	}
	prev := map[string]completionTarget{}
	if ok {
		for _, t := range old.Targets {
			prev[t.Address] = t
		}
	}
	c := &completionCache{Key: key, Time: time.Now()}
	for _, t := range snap.Targets {
		if len(c.Targets) >= completionMax {
			break
		}
		if t.Kind == discovery.KindTarpc {
			continue // a binary sidecar: nothing to call
		}
		ct := completionTarget{Name: t.Name, Aliases: t.Aliases, Family: t.Family, Address: t.Address, State: string(t.State())}
		if p, seen := prev[t.Address]; seen && t.Address != "" && (t.Probe == nil || t.Probe.Identity == nil) {
			// The probe was cut by the budget: keep the names the last
			// sweep learned from the target's identity (a family split),
			// and its methods.
			ct = carryNames(ct, p)
		}
		if t.Probe != nil && t.Probe.Capabilities != nil {
			ct.Methods = t.Probe.Capabilities.Methods
		}
		if len(ct.Methods) > completionMax {
			ct.Methods = ct.Methods[:completionMax]
		}
		c.Targets = append(c.Targets, ct)
	}
	writeCompletionCache(path, c)
	return c.Targets
}

// refreshInBackground starts `primalscope __refresh-targets` with this
// run's discovery flags, detached, to sweep and rewrite the cache; one at a
// time (a lock file next to the cache, taken over once older than a few
// seconds). It reports whether one is running; false means sweep now.
// $PRIMALSCOPE_COMPLETE_SYNC=1 turns it off (tests, debugging).
func (a *app) refreshInBackground(path string) bool {
	if path == "" || a.getenv("PRIMALSCOPE_COMPLETE_SYNC") != "" {
		return false
	}
	lock := path + ".lock"
	f, err := os.OpenFile(lock, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		if fi, serr := os.Stat(lock); serr == nil && time.Since(fi.ModTime()) < 3*completionFresh {
			return true // a refresh is under way
		}
		os.Remove(lock)
		if f, err = os.OpenFile(lock, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600); err != nil {
			return false
		}
	}
	f.Close()
	exe, err := os.Executable()
	if err != nil {
		os.Remove(lock)
		return false
	}
	args := []string{"__refresh-targets"}
	for _, d := range a.socketDirs {
		args = append(args, "--socket-dir", d)
	}
	if a.family != "" {
		args = append(args, "--family", a.family)
	}
	if a.seedFile != "" {
		args = append(args, "--family-seed-file", a.seedFile)
	}
	args = append(args, "--prefix", a.prefix, "--btsp-cipher", a.btspCipher, "--max-frame", strconv.FormatInt(a.maxFrame, 10))
	cmd := exec.Command(exe, args...)
	cmd.Env = a.environ
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // not the shell's job
	if err := cmd.Start(); err != nil {
		os.Remove(lock)
		return false
	}
	cmd.Process.Release() // it outlives this process; init reaps it
	return true
}

// refreshCmd is the hidden command a background refresh runs.
func (a *app) refreshCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "__refresh-targets",
		Short:  "Sweep once and rewrite the completion cache (run by completion)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			path, key := a.completionCachePath(), a.completionKey()
			defer os.Remove(path + ".lock")
			old, _ := a.readCompletionCache(path, key)
			a.sweepForCompletion(ctxOf(cmd), path, key, old)
			return nil
		},
	}
}

// carryNames keeps an earlier sweep's name, family and methods for a
// target this sweep did not finish probing; every name either gave stays.
func carryNames(now, before completionTarget) completionTarget {
	out := before
	out.State, out.Address = now.State, now.Address
	out.Aliases = nil
	for _, n := range append(append([]string{now.Name}, now.Aliases...), before.Aliases...) {
		if n != out.Name && !slices.Contains(out.Aliases, n) {
			out.Aliases = append(out.Aliases, n)
		}
	}
	sort.Strings(out.Aliases)
	return out
}

// completable reports whether s can be offered to a shell as one word: no
// control characters, no spaces, not absurdly long. Names come from peers.
func completable(s string) bool {
	if s == "" || len(s) > 256 {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) || unicode.IsSpace(r) || r == unicode.ReplacementChar || !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

// describe makes a completion description safe for the shell.
func describe(s string) string {
	var b strings.Builder
	for _, r := range s {
		if unicode.IsControl(r) || !unicode.IsPrint(r) {
			r = ' '
		}
		b.WriteRune(r)
		if b.Len() > 80 {
			break
		}
	}
	return b.String()
}

// targetNames are the words TARGET completes to: every name, alias and
// family-scoped name (<name>-<family>) of every target, each once.
func targetNames(ts []completionTarget, prefix string) []cobra.Completion {
	seen := map[string]bool{}
	var out []cobra.Completion
	add := func(name, desc string) {
		if seen[name] || !completable(name) || !strings.HasPrefix(name, prefix) {
			return
		}
		seen[name] = true
		out = append(out, cobra.CompletionWithDesc(name, describe(desc)))
	}
	// A bare name shared by a standalone socket and a family-scoped one
	// resolves to the standalone one (as call does): describe that one.
	ordered := make([]completionTarget, 0, len(ts))
	for _, t := range ts {
		if t.Family == "" {
			ordered = append(ordered, t)
		}
	}
	for _, t := range ts {
		if t.Family != "" {
			ordered = append(ordered, t)
		}
	}
	for _, t := range ordered {
		desc := t.State
		if t.Family != "" {
			desc += " · family " + t.Family
		}
		if t.Address != "" && !strings.HasPrefix(t.Address, "/") && !strings.HasPrefix(t.Address, "unix://") {
			desc += " · " + t.Address // where a name alone does not say
		}
		add(t.Name, desc)
		if t.Family != "" {
			add(t.Name+"-"+t.Family, desc)
		}
		for _, al := range t.Aliases {
			add(al, "alias of "+t.Name)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i] < out[j] })
	if len(out) > completionMax {
		out = out[:completionMax]
	}
	return out
}

// completeTarget completes one TARGET: a path completes as a file, an
// address is left alone, anything else is a discovered name.
func (a *app) completeTarget(cmd *cobra.Command, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	switch {
	case strings.HasPrefix(toComplete, "/"), strings.HasPrefix(toComplete, "."), strings.HasPrefix(toComplete, "~"):
		return nil, cobra.ShellCompDirectiveDefault // a socket path: the shell's files
	case strings.Contains(toComplete, "://"), strings.HasPrefix(toComplete, "@"), strings.HasPrefix(toComplete, "stdio:"):
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return targetNames(a.completionTargets(ctxOf(cmd)), toComplete), cobra.ShellCompDirectiveNoFileComp
}

func (a *app) completeOneTarget(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return a.completeTarget(cmd, toComplete)
}

func (a *app) completeTargets(cmd *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	return a.completeTarget(cmd, toComplete)
}

func (a *app) completeTargetFlag(cmd *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	return a.completeTarget(cmd, toComplete)
}

// completeTargetThenMethod is call's: TARGET, then METHOD from the
// target's capability list, then PARAMS (files, for @file).
func (a *app) completeTargetThenMethod(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	switch len(args) {
	case 0:
		return a.completeTarget(cmd, toComplete)
	case 1:
		var out []cobra.Completion
		for _, m := range a.targetMethods(ctxOf(cmd), args[0]) {
			if completable(m) && strings.HasPrefix(m, toComplete) {
				out = append(out, m)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
	return nil, cobra.ShellCompDirectiveNoFileComp
}

// targetMethods lists the methods TARGET advertises: from the cached sweep
// when it probed the target, else by asking it (capabilities.list, then
// capability.list). The sweep and the asking share one budget of
// completionBudget plus a little: a name costs at most one sweep and what
// is left of it; an address is asked at once.
func (a *app) targetMethods(ctx context.Context, arg string) []string {
	ctx, cancel := context.WithTimeout(ctx, completionBudget+50*time.Millisecond)
	defer cancel()
	if _, err := ipc.ParseEndpoint(arg); err != nil {
		for _, t := range a.completionTargets(ctx) {
			if len(t.Methods) == 0 {
				continue
			}
			if t.Name == arg || t.Address == arg || t.Family != "" && t.Name+"-"+t.Family == arg || slices.Contains(t.Aliases, arg) {
				return t.Methods
			}
		}
	}
	conn, _, err := a.dial(ctx, arg, nil)
	if err != nil {
		return nil
	}
	defer conn.Close()
	for _, method := range []string{"capabilities.list", "capability.list"} {
		resp, err := conn.Send(ctx, ipc.Request{Method: method})
		if err != nil {
			continue
		}
		caps, err := capability.Parse(resp.Result)
		if err != nil {
			return nil
		}
		return caps.Methods
	}
	return nil
}

// completeFamily offers the family ids discovery saw.
func (a *app) completeFamily(cmd *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	seen := map[string]bool{}
	var out []cobra.Completion
	for _, t := range a.completionTargets(ctxOf(cmd)) {
		if t.Family != "" && !seen[t.Family] && completable(t.Family) && strings.HasPrefix(t.Family, toComplete) {
			seen[t.Family] = true
			out = append(out, t.Family)
		}
	}
	sort.Strings(out)
	return out, cobra.ShellCompDirectiveNoFileComp
}

// completeTheme offers the built-in themes and the user's own.
func (a *app) completeTheme(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	var out []cobra.Completion
	for _, n := range a.themeCatalog().Names() {
		if completable(n) && strings.HasPrefix(n, toComplete) {
			out = append(out, n)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// historyForCompletion opens the history only if it exists (completing
// must not create a database).
func (a *app) historyForCompletion(ctx context.Context) (*history.Store, bool) {
	if a.historyOff() {
		return nil, false
	}
	path, err := a.historyLocation(a.historySettings())
	if err != nil {
		return nil, false
	}
	if _, err := os.Stat(path); err != nil {
		return nil, false
	}
	s, err := a.openHistory(ctx)
	if err != nil {
		return nil, false
	}
	return s, true
}

// completeCallRef offers saved names, then the latest call ids.
func (a *app) completeCallRef(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return a.callRefs(ctxOf(cmd), toComplete, true)
}

// completeCallID offers the latest call ids (history save ID NAME).
func (a *app) completeCallID(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return a.callRefs(ctxOf(cmd), toComplete, false)
}

func (a *app) callRefs(ctx context.Context, prefix string, names bool) ([]cobra.Completion, cobra.ShellCompDirective) {
	ctx, cancel := context.WithTimeout(ctx, completionBudget)
	defer cancel()
	s, ok := a.historyForCompletion(ctx)
	if !ok {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	defer s.Close()
	var out []cobra.Completion
	if names {
		if saved, err := s.Saved(ctx); err == nil {
			for _, sc := range saved {
				if completable(sc.Name) && strings.HasPrefix(sc.Name, prefix) {
					out = append(out, cobra.CompletionWithDesc(sc.Name, fmt.Sprintf("saved call %d", sc.ID)))
				}
			}
		}
	}
	if entries, err := s.Search(ctx, history.Query{Limit: 50}); err == nil {
		for _, e := range entries {
			id := strconv.FormatInt(e.ID, 10)
			if strings.HasPrefix(id, prefix) {
				out = append(out, cobra.CompletionWithDesc(id, describe(fmt.Sprintf("%s %s %s %s",
					e.Time.Local().Format("01-02 15:04"), e.Target, e.Method, e.Outcome))))
			}
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveKeepOrder
}

// completeHistoryMethod offers the methods of recent calls.
func (a *app) completeHistoryMethod(cmd *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	ctx, cancel := context.WithTimeout(ctxOf(cmd), completionBudget)
	defer cancel()
	s, ok := a.historyForCompletion(ctx)
	if !ok {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	defer s.Close()
	seen := map[string]bool{}
	var out []cobra.Completion
	if entries, err := s.Search(ctx, history.Query{Limit: 500}); err == nil {
		for _, e := range entries {
			if !seen[e.Method] && completable(e.Method) && strings.HasPrefix(e.Method, toComplete) {
				seen[e.Method] = true
				out = append(out, e.Method)
			}
		}
	}
	sort.Strings(out)
	return out, cobra.ShellCompDirectiveNoFileComp
}

// ctxOf is the command's context (cobra leaves it nil in some paths).
func ctxOf(cmd *cobra.Command) context.Context {
	if ctx := cmd.Context(); ctx != nil {
		return ctx
	}
	return context.Background()
}
