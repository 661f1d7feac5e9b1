package main

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/ecoPrimals/primalscope/ipc"
	"github.com/ecoPrimals/primalscope/ipc/btsp"
)

// securityState is what the BTSP and prefix flags resolve to, once per run:
// the seed is read once and the endpoint memory opened once.
type securityState struct {
	sec ipc.Security
}

// securityFlags adds the global BTSP and riboCipher flags.
func (a *app) securityFlags(pf *pflag.FlagSet) {
	pf.StringVar(&a.seedFile, "family-seed-file", "", "read the BTSP family seed from this file (mode 0600; default: $FAMILY_SEED)")
	pf.StringVar(&a.prefix, "prefix", "auto", "riboCipher first-byte signal on sockets: auto (send EC 01, fall back and remember), on or off")
	pf.StringVar(&a.btspCipher, "btsp-cipher", "chacha20_poly1305", "BTSP cipher to ask for: chacha20_poly1305, null, hmac_plain or negotiate (null then the btsp.negotiate upgrade)")
}

// security resolves the BTSP and prefix flags: the family seed from
// --family-seed-file or $FAMILY_SEED, the prefix mode, the cipher, the
// family, and the endpoint memory ($XDG_STATE_HOME/primalscope/endpoints.json).
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
	sec := ipc.Security{Cipher: cipher, Negotiate: negotiate, Prefix: mode, Family: a.familyID()}
	switch {
	case a.seedFile != "":
		s, err := btsp.ReadSeedFile(a.seedFile)
		if err != nil {
			var insecure *btsp.InsecureSeedFileError
			if errors.As(err, &insecure) {
				return ipc.Security{}, &securityError{err: fmt.Errorf("--family-seed-file: %w", err)}
			}
			return ipc.Security{}, usageErr(fmt.Errorf("--family-seed-file: %w", err))
		}
		sec.Seed = ipc.NewSeed(s)
	case a.getenv("FAMILY_SEED") != "":
		sec.Seed = ipc.NewSeed(a.getenv("FAMILY_SEED"))
	}
	sec.Memory = a.endpointMemory()
	a.sec = &securityState{sec: sec}
	return sec, nil
}

// endpointMemory opens the per-endpoint memory kept for the one-shot CLI in
// $XDG_STATE_HOME/primalscope/endpoints.json (else ~/.local/state/...). A
// memory that cannot be read starts empty; without a state directory it
// lives in this process only.
func (a *app) endpointMemory() *ipc.EndpointMemory {
	dir := a.getenv("XDG_STATE_HOME")
	if dir == "" {
		if home := a.getenv("HOME"); home != "" {
			dir = filepath.Join(home, ".local", "state")
		}
	}
	if dir == "" || !filepath.IsAbs(dir) {
		return ipc.NewEndpointMemory()
	}
	m, err := ipc.OpenEndpointMemory(filepath.Join(dir, "primalscope", "endpoints.json"))
	if err != nil {
		fmt.Fprintf(a.io.err, "primalscope: warning: %v\n", err)
	}
	return m
}
