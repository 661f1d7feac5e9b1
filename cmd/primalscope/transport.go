package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/ecoPrimals/primalscope/internal/paths"
	"github.com/ecoPrimals/primalscope/internal/render"
	"github.com/ecoPrimals/primalscope/ipc"
	"github.com/ecoPrimals/primalscope/ipc/btsp"
)

// securityState is what the BTSP and prefix flags resolve to, once per run:
// the seed is read once and the endpoint memory opened once.
type securityState struct {
	sec ipc.Security
	w   *warnings
	// stopFlush ends the memory's background flusher (a command that is
	// not bounded by --timeout: the TUI, tail, --watch); nil without one.
	stopFlush func()
}

// warnings prints the secure dial path's warnings on stderr, each once per
// run; the TUI silences them (they are in its trace, and stderr would
// spoil its screen).
type warnings struct {
	mu    sync.Mutex
	out   io.Writer
	quiet bool
	seen  map[string]bool
}

func (w *warnings) warn(msg string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.quiet || w.seen[msg] {
		return
	}
	w.seen[msg] = true
	fmt.Fprintln(w.out, "primalscope: WARNING: "+render.SanitizeMultiline(msg))
}

// quietWarnings stops the secure dial path's warnings from reaching
// stderr (the TUI shows them in its trace).
func (a *app) quietWarnings() {
	if a.sec != nil {
		a.sec.w.mu.Lock()
		a.sec.w.quiet = true
		a.sec.w.mu.Unlock()
	}
}

// securityFlags adds the global BTSP and riboCipher flags.
func (a *app) securityFlags(pf *pflag.FlagSet) {
	pf.StringVar(&a.seedFile, "family-seed-file", "", "read your family's BTSP seed (--family, else $FAMILY_ID) from this file (mode 0600; default: $FAMILY_SEED); other families' seeds: config [families.<id>] seed_file")
	pf.StringVar(&a.prefix, "prefix", "auto", "riboCipher first-byte signal on sockets: auto (raw JSON first; EC 01 once the peer answered -32002, remembered per endpoint), on or off")
	pf.StringVar(&a.btspCipher, "btsp-cipher", "auto", "BTSP session to insist on: auto (encrypted, server authenticated: btsp.negotiate or length-prefixed with server_proof), chacha20_poly1305, hmac_plain, negotiate, or null (cleartext on purpose)")
}

// security resolves the BTSP and prefix flags: the family seeds (each
// for its family: see familySeeds), the prefix mode, the cipher, the
// family, and the endpoint memory ($XDG_STATE_HOME/primalscope/endpoints.d).
func (a *app) security() (ipc.Security, error) {
	if a.sec != nil {
		return a.sec.sec, nil
	}
	mode, err := ipc.ParsePrefixMode(a.prefix)
	if err != nil {
		return ipc.Security{}, usageErr(fmt.Errorf("--prefix: %w", err))
	}
	cipher, negotiate, err := ipc.ParseBTSPCipher(a.btspCipher)
	if err != nil {
		return ipc.Security{}, usageErr(fmt.Errorf("--btsp-cipher: %w", err))
	}
	w := &warnings{out: a.io.err, seen: map[string]bool{}}
	sec := ipc.Security{Cipher: cipher, Negotiate: negotiate, Prefix: mode, Family: a.familyID(), Warn: w.warn, TrustUnknownOwner: a.trust.unknownOwner}
	if sec.TrustUIDs, err = a.trustedUIDs(); err != nil { // trust.go
		return ipc.Security{}, err
	}
	if sec.Cipher == btsp.CipherNull && !negotiate {
		fmt.Fprintln(a.io.err, "primalscope: WARNING: --btsp-cipher null: BTSP sessions (and, without a family seed, family-scoped sockets) carry calls in CLEARTEXT")
	}
	if err := a.familySeeds(&sec); err != nil {
		return ipc.Security{}, err
	}
	sec.Memory = a.endpointMemory()
	a.sec = &securityState{sec: sec, w: w}
	if !a.bounded {
		a.sec.stopFlush = sec.Memory.AutoFlush(memoryFlushEvery)
	}
	return sec, nil
}

// familySeed is a family and the file holding its seed.
type familySeed struct {
	family, file string
	// userFamily is, for the demo's seed, the family the user's own seed
	// (--family-seed-file, $FAMILY_SEED) was given with, before the demo
	// made its family the one in use.
	userFamily string
}

// familySeeds fills in sec's seeds, each for the family it was given with
// (ipc.Security.SeedFor hands each socket its own family's, never
// another's):
//   - --family-seed-file, else $FAMILY_SEED: the user's own family's
//     (--family, else $FAMILY_ID); given with neither, a seed of no named
//     family, used only for sockets of no family (never offered to a
//     family it was not given for: ipc.Security.SeedFor);
//   - the config file's [families.<id>] seed_file: other families';
//   - the demo's own seed for the demo's family, whatever else is set.
//
// Every seed file must be readable by its owner only: one that group or
// others may read is a refusal (exit 5), one that cannot be read bad input.
func (a *app) familySeeds(sec *ipc.Security) error {
	read := func(what, file string) (ipc.Seed, error) {
		s, err := btsp.ReadSeedFile(file)
		if err != nil {
			var insecure *btsp.InsecureSeedFileError
			if errors.As(err, &insecure) {
				return ipc.Seed{}, &securityError{err: fmt.Errorf("%s: %w", what, err)}
			}
			return ipc.Seed{}, usageErr(fmt.Errorf("%s: %w", what, err))
		}
		return ipc.NewSeed(s), nil
	}
	book := map[string]ipc.Seed{}
	if files := a.callSettings().SeedFiles; len(files) > 0 {
		ids := make([]string, 0, len(files))
		for id := range files {
			ids = append(ids, id)
		}
		sort.Strings(ids) // the first bad file is the same one every run
		for _, id := range ids {
			sd, err := read(fmt.Sprintf("config [families.%s] seed_file", id), files[id])
			if err != nil {
				return err
			}
			book[id] = sd
		}
	}
	var user ipc.Seed
	switch {
	case a.seedFile != "":
		sd, err := read("--family-seed-file", a.seedFile)
		if err != nil {
			return err
		}
		user = sd
	case a.getenv("FAMILY_SEED") != "":
		user = ipc.NewSeed(a.getenv("FAMILY_SEED"))
	}
	userFamily := a.familyID()
	if a.demoSeed != nil {
		userFamily = a.demoSeed.userFamily
	}
	unbound := ipc.Seed{}
	if !user.IsZero() {
		if userFamily != "" {
			book[userFamily] = user // given for this family: it wins over the config's
		} else {
			unbound = user
		}
	}
	if a.demoSeed != nil {
		sd, err := read("the demo's seed file", a.demoSeed.file)
		if err != nil {
			return err
		}
		book[a.demoSeed.family] = sd // the demo reaches its own sockets, whatever the shell says
		unbound = ipc.Seed{}
	}
	if sec.Family == "" {
		sec.Seed = unbound
	} else {
		sec.Seed = book[sec.Family]
		delete(book, sec.Family)
	}
	if len(book) > 0 {
		sec.Seeds = book
	}
	return nil
}

// memoryFlushEvery is how often a long-running command (the TUI, tail,
// --watch) writes what it learned about endpoints, while it learns.
const memoryFlushEvery = time.Second

// flushMemory writes what this bounded command learned about endpoints,
// within the command's deadline (a write that would outlast it is skipped:
// facts, learned again next time).
func (a *app) flushMemory(ctx context.Context) {
	if a.sec == nil {
		return
	}
	ctx, cancel := boundWait(context.WithoutCancel(ctx))
	defer cancel()
	a.sec.sec.Memory.Flush(ctx) // a failure is kept in the memory's Err
}

// closeMemory ends the background flusher of a command that is not bounded
// by --timeout and writes what is left; a bounded command flushed within
// its deadline (flushMemory), and one that was cut may still be running.
func (a *app) closeMemory() {
	if a.bounded || a.sec == nil {
		return
	}
	if a.sec.stopFlush != nil {
		a.sec.stopFlush()
	}
	a.sec.sec.Memory.Flush(context.Background())
}

// endpointMemory opens the per-endpoint memory kept for the CLI in
// $XDG_STATE_HOME/primalscope/endpoints.d (else ~/.local/state/...), one
// record an endpoint, read when the endpoint is dialled; without a state
// directory it lives in this process only.
func (a *app) endpointMemory() *ipc.EndpointMemory {
	path := paths.StateDir(a.getenv)
	if path == "" {
		return ipc.NewEndpointMemory()
	}
	m, err := ipc.OpenEndpointMemory(path)
	if err != nil {
		fmt.Fprintf(a.io.err, "primalscope: warning: %v\n", err)
	}
	return m
}
