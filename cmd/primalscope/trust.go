package main

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/ecoPrimals/primalscope/internal/render"
	"github.com/ecoPrimals/primalscope/ipc"
)

// trustFlags are the global flags that say whom primalscope trusts: the
// local users that may serve the sockets it calls (besides the user and
// root), and whether discovery may reach what registries name on other
// nodes and of other families.
type trustFlags struct {
	uids         []string
	federation   bool
	unknownOwner bool
}

func (f *trustFlags) add(pf *pflag.FlagSet) {
	pf.StringArrayVar(&f.uids, "trust-uid", nil, "a local user (uid or name) trusted to serve the sockets primalscope calls, besides you and root (repeatable; also trust_uids in the config file); others are refused (exit 5)")
	pf.BoolVar(&f.unknownOwner, "trust-unknown-owner", false, "call a loopback TCP port even when who serves it cannot be told (no socket diagnostics nor tables, or no listener in this network namespace); refused otherwise (exit 5); said loudly on every such call")
	pf.BoolVar(&f.federation, "federation", false, "let discovery reach what registries name on other nodes and of other families (discovery.peers, remote addresses; also federation in the config file)")
}

// trustedUIDs are the uids of --trust-uid and the config's trust_uids. A
// name no user has is bad usage (from the flag) or a warning (from the
// file, which is ignored when broken).
func (a *app) trustedUIDs() ([]uint32, error) {
	var out []uint32
	for _, u := range a.trust.uids {
		uid, err := ipc.ParseTrustedUser(u)
		if err != nil {
			return nil, usageErr(fmt.Errorf("--trust-uid: %w", err))
		}
		out = append(out, uid)
	}
	for _, u := range a.callSettings().TrustUIDs {
		uid, err := ipc.ParseTrustedUser(u)
		if err != nil {
			fmt.Fprintln(a.io.err, "primalscope: warning: config: discovery.trust_uids: "+render.Sanitize(err.Error())+" (ignored)")
			continue
		}
		out = append(out, uid)
	}
	return out, nil
}

// federation reports whether discovery may reach other nodes and families
// (--federation, or federation in the config file).
func (a *app) federation() bool {
	return a.trust.federation || a.config().Discovery.Federation
}
