package ipc

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/ecoPrimals/primalscope/internal/paths"
)

// Transport names how an endpoint is reached.
type Transport string

// The transports primalscope dials.
const (
	Unix     Transport = "unix"     // a filesystem Unix socket
	Abstract Transport = "abstract" // a Linux abstract-namespace socket (@name)
	TCP      Transport = "tcp"
	WS       Transport = "ws"
	WSS      Transport = "wss"
	Stdio    Transport = "stdio" // a spawned command speaking NDJSON on stdin/stdout
)

// Endpoint is a parsed address of a peer.
type Endpoint struct {
	Transport Transport `json:"transport"`
	// Path is the socket path (Unix) or the name without "@" (Abstract).
	Path string `json:"path,omitempty"`
	// Address is host:port (TCP).
	Address string `json:"address,omitempty"`
	// URL is the full WebSocket URL (WS, WSS).
	URL string `json:"url,omitempty"`
	// Argv is the command and its arguments (Stdio).
	Argv []string `json:"argv,omitempty"`
}

// String renders the endpoint in a form ParseEndpoint reads back.
func (e Endpoint) String() string {
	switch e.Transport {
	case Unix:
		p := e.Path
		if strings.HasPrefix(p, "@") {
			return "unix://./" + p
		}
		if strings.ContainsRune(p, '/') || strings.HasPrefix(p, ".") || strings.HasPrefix(p, "~") || strings.HasSuffix(p, ".sock") {
			if strings.HasPrefix(strings.ToLower(p), "unix:") || strings.HasPrefix(strings.ToLower(p), "stdio:") || strings.Contains(p, "://") {
				return "unix://" + p
			}
			return p
		}
		return "unix://" + p
	case Abstract:
		return "@" + e.Path
	case TCP:
		return "tcp://" + e.Address
	case WS, WSS:
		return e.URL
	case Stdio:
		q := make([]string, len(e.Argv))
		for i, a := range e.Argv {
			q[i] = ShellQuote(a)
		}
		inner := strings.Join(q, " ")
		var b strings.Builder
		b.WriteString(`stdio:"`)
		for _, r := range inner {
			if strings.ContainsRune(`"\$`+"`", r) {
				b.WriteByte('\\')
			}
			b.WriteRune(r)
		}
		b.WriteByte('"')
		return b.String()
	}
	return "?"
}

// Network returns the net.Dial network and address for socket transports.
func (e Endpoint) Network() (network, address string) {
	switch e.Transport {
	case Unix:
		return "unix", e.Path
	case Abstract:
		return "unix", "@" + e.Path
	case TCP:
		return "tcp", e.Address
	}
	return "", ""
}

// ParseEndpoint reads every TARGET form that names an address: a socket path,
// unix:///path, tcp://host:port, host:port, @abstract, ws://host:port/path,
// wss://..., and stdio:"command args". A string that names no address (such as
// a primal name or capability domain) returns an error wrapping ErrNotAddress,
// so callers can resolve it by name instead.
func ParseEndpoint(s string) (Endpoint, error) { return parseEndpoint(s, false) }

// ParseListenEndpoint reads an address to serve at: every form
// ParseEndpoint reads, and TCP port 0 (tcp://127.0.0.1:0: the system
// picks a free port; the listener's own address says which).
func ParseListenEndpoint(s string) (Endpoint, error) { return parseEndpoint(s, true) }

func parseEndpoint(s string, listen bool) (Endpoint, error) {
	orig := s
	s = strings.TrimSpace(s)
	if s == "" {
		return Endpoint{}, errors.New("empty endpoint")
	}
	if strings.ContainsRune(s, 0) {
		return Endpoint{}, fmt.Errorf("endpoint %q contains a NUL byte", orig)
	}
	lower := strings.ToLower(s)
	switch {
	case strings.HasPrefix(lower, "unix://"):
		p := s[len("unix://"):]
		if p == "" {
			return Endpoint{}, fmt.Errorf("endpoint %q: no socket path after unix://", orig)
		}
		if strings.HasPrefix(p, "@") {
			return parseAbstract(p[1:], orig)
		}
		return Endpoint{Transport: Unix, Path: expandHome(p)}, nil
	case strings.HasPrefix(lower, "unix:"):
		return parseEndpoint("unix://"+s[len("unix:"):], listen)
	case strings.HasPrefix(lower, "tcp://"):
		return parseHostPort(s[len("tcp://"):], orig, listen)
	case strings.HasPrefix(lower, "ws://"), strings.HasPrefix(lower, "wss://"):
		u, err := url.Parse(s)
		if err != nil {
			return Endpoint{}, fmt.Errorf("endpoint %q: %w", orig, err)
		}
		if u.Host == "" {
			return Endpoint{}, fmt.Errorf("endpoint %q: no host", orig)
		}
		if u.Path == "" {
			u.Path = "/rpc"
		}
		t := WS
		if strings.EqualFold(u.Scheme, "wss") {
			t = WSS
		}
		u.Scheme = string(t)
		return Endpoint{Transport: t, URL: u.String()}, nil
	case strings.HasPrefix(lower, "stdio:"):
		// stdio:"cmd args" and stdio:cmd args both work: a command given as
		// one quoted word is split again, shell-style.
		argv, err := SplitCommand(s[len("stdio:"):])
		if err == nil && len(argv) == 1 {
			argv, err = SplitCommand(argv[0])
		}
		if err != nil {
			return Endpoint{}, fmt.Errorf("endpoint %q: %w", orig, err)
		}
		if len(argv) == 0 {
			return Endpoint{}, fmt.Errorf("endpoint %q: no command after stdio:", orig)
		}
		return Endpoint{Transport: Stdio, Argv: argv}, nil
	case strings.HasPrefix(s, "@"):
		return parseAbstract(s[1:], orig)
	}
	if i := strings.Index(s, "://"); i > 0 && !strings.ContainsAny(s[:i], "/.") {
		return Endpoint{}, fmt.Errorf("endpoint %q: unsupported scheme %q (want unix, tcp, ws, wss or stdio)", orig, s[:i])
	}
	if s == "." || s == ".." {
		// Neither a socket (a directory) nor a name: `call ..` must not
		// dial whatever directory it runs in, nor find a peer so named.
		return Endpoint{}, fmt.Errorf("endpoint %q names a directory, not a socket or a name", orig)
	}
	if strings.ContainsRune(s, '/') || strings.HasPrefix(s, ".") || strings.HasPrefix(s, "~") || strings.HasSuffix(s, ".sock") {
		return Endpoint{Transport: Unix, Path: expandHome(s)}, nil
	}
	if strings.Contains(s, ":") {
		return parseHostPort(s, orig, listen)
	}
	if validName(s) {
		return Endpoint{}, fmt.Errorf("%q: %w", s, ErrNotAddress)
	}
	return Endpoint{}, fmt.Errorf("endpoint %q is neither an address nor a name", orig)
}

func parseAbstract(name, orig string) (Endpoint, error) {
	if name == "" {
		return Endpoint{}, fmt.Errorf("endpoint %q: no name after @", orig)
	}
	if len(name) > 107 {
		return Endpoint{}, fmt.Errorf("endpoint %q: abstract name longer than 107 bytes", orig)
	}
	return Endpoint{Transport: Abstract, Path: name}, nil
}

func parseHostPort(hp, orig string, listen bool) (Endpoint, error) {
	host, port, err := net.SplitHostPort(hp)
	if err != nil {
		return Endpoint{}, fmt.Errorf("endpoint %q: want host:port: %w", orig, err)
	}
	n, err := strconv.ParseUint(port, 10, 16)
	if err != nil || n == 0 && !listen { // port 0 to listen on: the system picks one
		return Endpoint{}, fmt.Errorf("endpoint %q: port %q is not a number from 1 to 65535", orig, port)
	}
	if host == "" {
		host = "localhost"
	}
	return Endpoint{Transport: TCP, Address: net.JoinHostPort(host, port)}, nil
}

// validName reports whether s could be a primal name, capability domain or
// family-scoped name.
func validName(s string) bool {
	if len(s) > 255 {
		return false
	}
	for _, r := range s {
		if !(r == '-' || r == '_' || r == '.' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return true
}

func expandHome(p string) string {
	if p == "~" || strings.HasPrefix(p, "~/") {
		if h := paths.Home(os.Getenv); h != "" {
			return filepath.Join(h, p[1:])
		}
	}
	return p
}

// SplitCommand splits a command line into words the way a POSIX shell would
// for plain words, 'single' and "double" quotes and backslash escapes. It does
// not expand variables or globs.
func SplitCommand(s string) ([]string, error) {
	var (
		args  []string
		cur   strings.Builder
		inArg bool
		quote rune
	)
	rs := []rune(s)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case quote == '\'':
			if r == '\'' {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case quote == '"':
			switch {
			case r == '"':
				quote = 0
			case r == '\\' && i+1 < len(rs) && strings.ContainsRune(`"\$`+"`", rs[i+1]):
				i++
				cur.WriteRune(rs[i])
			default:
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote = r
			inArg = true
		case r == '\\':
			if i+1 >= len(rs) {
				return nil, errors.New("command ends with a lone backslash")
			}
			i++
			cur.WriteRune(rs[i])
			inArg = true
		case r == ' ' || r == '\t' || r == '\n':
			if inArg {
				args = append(args, cur.String())
				cur.Reset()
				inArg = false
			}
		default:
			cur.WriteRune(r)
			inArg = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unterminated %c quote in command", quote)
	}
	if inArg {
		args = append(args, cur.String())
	}
	return args, nil
}

// ShellQuote quotes s for a POSIX shell when it needs quoting.
func ShellQuote(s string) string {
	if s == "" {
		return "''"
	}
	safe := true
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:@%+=,", r)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
