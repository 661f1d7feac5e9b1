package discovery

import (
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/ecoPrimals/primalscope/ipc"
)

// MaxRegistryProbes bounds how many endpoints that only registries named
// one sweep probes: a registry listing 2,000 ports must not make
// primalscope connect to 2,000 ports. Those past it are listed, unprobed,
// with a note, and the sweep says so (a source error: stderr, the TUI).
const MaxRegistryProbes = 64

// SrcReach names the sweep's own notes about what it did not reach, among
// Snapshot.Errors.
const SrcReach = "registries"

// registryNamed reports whether only registries' answers (not a socket
// directory, a file, the environment or the user) named t.
func registryNamed(t *Target) bool {
	if len(t.Sources) == 0 {
		return false
	}
	for _, s := range t.Sources {
		switch s.Source {
		case SrcSongbird, SrcPeers, SrcNeural:
		default:
			return false
		}
	}
	return true
}

// bound keeps the probes of what registries named to the user's own node
// and family (unless Options.Federation) and to MaxRegistryProbes; the rest
// are marked NoProbe with a note saying why. It returns the sweep's note
// when some were cut by the bound (nil otherwise).
func (d *Discoverer) bound(targets []*Target) error {
	n := 0
	for _, t := range targets {
		if t.NoProbe || t.Endpoint.Transport == "" || !registryNamed(t) {
			continue
		}
		if !d.opts.Federation {
			if where := d.elsewhere(t); where != "" {
				t.NoProbe = true
				t.Notes = append(t.Notes, "named by a registry "+where+": not reached without --federation")
				continue
			}
		}
		n++
		if n > MaxRegistryProbes {
			t.NoProbe = true
			t.Notes = append(t.Notes, fmt.Sprintf("not probed: registries named more than %d endpoints to probe", MaxRegistryProbes))
		}
	}
	if n > MaxRegistryProbes {
		return fmt.Errorf("registries named %d endpoints to probe: only the first %d were probed, the rest are listed unprobed", n, MaxRegistryProbes)
	}
	return nil
}

// elsewhere says where t is when that is not the user's own node and
// family ("" when it is, or cannot be told).
func (d *Discoverer) elsewhere(t *Target) string {
	if t.Kind == KindRemote {
		return "on another node (discovery.peers)"
	}
	if host := remoteHost(t.Endpoint); host != "" {
		return "on another node (" + host + ")"
	}
	fam := t.Family
	if fam == "" && t.Endpoint.Transport == ipc.Unix {
		// <known-primal>-<family>.sock, as the socket directories are read.
		var known []string
		if d.opts.Config != nil {
			known = d.opts.Config.Discovery.KnownPrimals
		}
		_, fam = NewFamilyMatcher(known, d.opts.Family).Split(strings.TrimSuffix(filepath.Base(t.Endpoint.Path), ".sock"))
	}
	if d.opts.Family != "" && fam != "" && fam != "default" && !strings.EqualFold(fam, d.opts.Family) {
		return "of another family (" + fam + ")"
	}
	return ""
}

// remoteHost is the host of a TCP or WebSocket endpoint that is not this
// machine's loopback ("" for loopback and for local transports).
func remoteHost(ep ipc.Endpoint) string {
	var host string
	switch ep.Transport {
	case ipc.TCP:
		h, _, err := net.SplitHostPort(ep.Address)
		if err != nil {
			return ep.Address
		}
		host = h
	case ipc.WS, ipc.WSS:
		u, err := url.Parse(ep.URL)
		if err != nil {
			return ep.URL
		}
		host = u.Hostname()
	default:
		return ""
	}
	if strings.EqualFold(host, "localhost") {
		return ""
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return ""
	}
	return host
}
