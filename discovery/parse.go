package discovery

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ecoPrimals/primalscope/internal/human"
	"github.com/ecoPrimals/primalscope/internal/textsafe"
	"github.com/ecoPrimals/primalscope/ipc"
)

// Bounds on what is kept from registry answers and files.
const (
	// MaxEntries is the most targets kept from one registry answer or file
	// (answers are bounded in bytes by the connection's frame limit first).
	MaxEntries = 100_000
	// maxNameLen bounds a name kept from a peer or file.
	maxNameLen = 256
	// maxCaps bounds the capability names kept per entry.
	maxCaps = 256
)

// decodeAny decodes untrusted JSON into generic values (numbers as json.Number).
func decodeAny(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	return v, nil
}

// decodeObject is decodeAny for answers that must be a JSON object.
func decodeObject(b []byte) (map[string]any, error) {
	v, err := decodeAny(b)
	if err != nil {
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("not a JSON object")
	}
	return m, nil
}

// cleanName bounds and checks a name taken from a peer: valid UTF-8,
// nothing textsafe would escape (controls, bidi controls, invisible
// characters that make one name pass for another), no path separators, at
// most maxNameLen bytes. It returns "" for a name that cannot be used.
func cleanName(s string) string {
	s = strings.TrimSpace(s)
	if s == "" || !utf8.ValidString(s) {
		return ""
	}
	if len(s) > maxNameLen {
		s = s[:maxNameLen]
		for !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
	}
	if !textsafe.IsSafe(s, false) || strings.ContainsAny(s, `/\`) || s == "." || s == ".." {
		return "" // "." and ".." name directories: `call ..` would dial one
	}
	return s
}

func str(m map[string]any, keys ...string) string {
	for _, k := range keys {
		if s, ok := m[k].(string); ok && s != "" {
			return s
		}
	}
	return ""
}

func num(v any) (int64, bool) {
	switch n := v.(type) {
	case json.Number:
		i, err := n.Int64()
		return i, err == nil
	case string:
		i, err := strconv.ParseInt(n, 10, 64)
		return i, err == nil
	case float64:
		if n == float64(int64(n)) && n > -1<<53 && n < 1<<53 {
			return int64(n), true
		}
	}
	return 0, false
}

// capNames reads a capability list: strings, or objects with a type or
// name field (format E groups), bounded.
func capNames(v any) []string {
	arr, ok := v.([]any)
	if !ok {
		if m, ok := v.(map[string]any); ok { // {"crypto": [...]} map form
			var out []string
			for k := range m {
				if n := cleanName(k); n != "" && len(out) < maxCaps {
					out = append(out, n)
				}
			}
			sort.Strings(out)
			return out
		}
		return nil
	}
	var out []string
	seen := map[string]bool{}
	for _, e := range arr {
		var n string
		switch x := e.(type) {
		case string:
			n = x
		case map[string]any:
			n = str(x, "type", "name", "capability")
		}
		if n = cleanName(n); n != "" && !seen[n] && len(out) < maxCaps {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}

// ErrNoEndpoint is returned (wrapped) for an entry that names no address.
var ErrNoEndpoint = errors.New("no endpoint")

// endpointFrom reads an endpoint from a peer- or file-supplied value: an
// address string (a path, unix://, tcp://, host:port, ws://, @abstract) or an
// object {transport, path | host, port | peer_id}. A stdio command is never
// accepted from such a source: a registry must not make primalscope run
// programs.
func endpointFrom(v any) (ipc.Endpoint, error) {
	switch x := v.(type) {
	case string:
		s := strings.TrimSpace(x)
		if s == "" || len(s) > 4096 || strings.ContainsRune(s, 0) {
			return ipc.Endpoint{}, ErrNoEndpoint
		}
		ep, err := ipc.ParseEndpoint(s)
		if err != nil {
			return ipc.Endpoint{}, fmt.Errorf("%w: %q", ErrNoEndpoint, human.Clip(s, 80))
		}
		if ep.Transport == ipc.Stdio {
			return ipc.Endpoint{}, fmt.Errorf("%w: a command is not accepted from a registry", ErrNoEndpoint)
		}
		if ep.Transport == ipc.Unix && !filepath.IsAbs(ep.Path) {
			// Relative to whatever directory primalscope runs in.
			return ipc.Endpoint{}, fmt.Errorf("%w: relative path %q", ErrNoEndpoint, human.Clip(s, 80))
		}
		return ep, nil
	case map[string]any:
		tr := strings.ToLower(str(x, "transport", "type"))
		switch tr {
		case "uds", "unix", "":
			if p := str(x, "path", "socket", "socket_path"); p != "" {
				if !strings.HasPrefix(p, "/") && !strings.HasPrefix(p, "unix://") && !strings.HasPrefix(p, "@") {
					return ipc.Endpoint{}, fmt.Errorf("%w: relative path %q", ErrNoEndpoint, human.Clip(p, 80))
				}
				return endpointFrom(p)
			}
			if tr == "" {
				if h := str(x, "host", "address"); h != "" {
					return tcpFrom(h, x["port"])
				}
			}
		case "tcp":
			return tcpFrom(str(x, "host", "address"), x["port"])
		case "mesh_relay", "relay", "mesh":
			return ipc.Endpoint{}, fmt.Errorf("%w: reached through a mesh relay", ErrNoEndpoint)
		}
	}
	return ipc.Endpoint{}, ErrNoEndpoint
}

func tcpFrom(host string, port any) (ipc.Endpoint, error) {
	if host == "" {
		host = "127.0.0.1"
	}
	if strings.Contains(host, ":") && !strings.Contains(host, "]") {
		// host:port already, or a bare IPv6 address
		if _, _, err := net.SplitHostPort(host); err == nil && port == nil {
			return endpointFrom("tcp://" + host)
		}
	}
	p, ok := num(port)
	if !ok || p <= 0 || p > 65535 {
		return ipc.Endpoint{}, fmt.Errorf("%w: bad tcp port", ErrNoEndpoint)
	}
	if len(host) > 255 || strings.ContainsAny(host, "/ \x00") {
		return ipc.Endpoint{}, fmt.Errorf("%w: bad host", ErrNoEndpoint)
	}
	return ipc.Endpoint{Transport: ipc.TCP, Address: net.JoinHostPort(host, strconv.FormatInt(p, 10))}, nil
}

// ParseManifest reads a primal manifest ({"socket_path": ..., "primal"?,
// "family_id"?, "capabilities"?}). fallbackName (the file's base name) names
// the primal when the manifest does not.
func ParseManifest(b []byte, fallbackName string) (Found, error) {
	m, err := decodeObject(b)
	if err != nil {
		return Found{}, err
	}
	var ep ipc.Endpoint
	err = ErrNoEndpoint
	for _, k := range []string{"socket_path", "socket", "endpoint", "native_endpoint", "path"} {
		if x, ok := m[k]; ok {
			if ep, err = endpointFrom(x); err == nil {
				break
			}
		}
	}
	if err != nil {
		if p, ok := m["tcp_port"]; ok {
			ep, err = tcpFrom(str(m, "host", "address"), p)
		}
	}
	if err != nil {
		return Found{}, err
	}
	name := cleanName(str(m, "primal", "primal_id", "name"))
	if name == "" {
		name = cleanName(fallbackName)
	}
	f := Found{Endpoint: ep, Name: name, Family: cleanName(str(m, "family_id", "family")),
		Source: SrcManifest, Kind: kindForName(name)}
	f.Capabilities = capNames(m["capabilities"])
	if len(f.Capabilities) == 0 {
		f.Capabilities = capNames(m["provided_capabilities"])
	}
	return f, nil
}

// ParseSocketRegistry reads a socket-registry.json. Entries are taken from
// "entries", "primals", "services" or "sockets" (arrays of objects or
// name→endpoint maps), or from a flat top-level name→endpoint map; names
// that are capability domains become aliases. Entries with no usable
// endpoint are skipped; the error reports how many.
func ParseSocketRegistry(b []byte) ([]Found, error) {
	v, err := decodeAny(b)
	if err != nil {
		return nil, err
	}
	var out []Found
	skipped := 0
	add := func(name string, ev any, caps any, fam string) {
		if len(out) >= MaxEntries {
			skipped++
			return
		}
		ep, err := endpointFrom(ev)
		if err != nil {
			skipped++
			return
		}
		name = cleanName(name)
		f := Found{Endpoint: ep, Name: name, Source: SrcRegistry, Capabilities: capNames(caps),
			Family: cleanName(fam), Kind: kindForName(name)}
		if isDomainName(name) {
			f.Alias = true
		}
		out = append(out, f)
	}
	var walk func(v any, depth int)
	walk = func(v any, depth int) {
		switch x := v.(type) {
		case []any:
			for _, e := range x {
				if m, ok := e.(map[string]any); ok {
					ev := firstOf(m, "socket", "socket_path", "endpoint", "native_endpoint", "path")
					add(str(m, "primal", "primal_id", "name", "capability"), ev, m["capabilities"], str(m, "family_id", "family"))
				}
			}
		case map[string]any:
			keys := slices.Sorted(maps.Keys(x))
			for _, k := range keys {
				switch k {
				case "entries", "primals", "services", "sockets", "registry":
					if depth < 2 {
						walk(x[k], depth+1)
					}
					continue
				case "version", "updated", "updated_at", "timestamp", "family_id":
					continue
				}
				switch e := x[k].(type) {
				case string:
					add(k, e, nil, "")
				case map[string]any:
					ev := firstOf(e, "socket", "socket_path", "endpoint", "native_endpoint", "path")
					name := str(e, "primal", "primal_id", "name")
					if name == "" {
						name = k
					}
					add(name, ev, e["capabilities"], str(e, "family_id", "family"))
				}
			}
		}
	}
	walk(v, 0)
	if skipped > 0 {
		return out, fmt.Errorf("%d entries without a usable endpoint skipped", skipped)
	}
	return out, nil
}

func firstOf(m map[string]any, keys ...string) any {
	for _, k := range keys {
		if v, ok := m[k]; ok && v != nil {
			return v
		}
	}
	return nil
}
