package history

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/ecoPrimals/primalscope/internal/render"
	"github.com/ecoPrimals/primalscope/ipc"
)

// Errors from the exporters.
var (
	// ErrParamsCut: the call's params were stored cut, so it cannot be sent
	// again or exported.
	ErrParamsCut = errors.New("the params of this call were stored cut")
	// ErrNoRawWire: the call's transport has no plain byte stream socat could
	// reproduce (WebSocket, stdio command, BTSP).
	ErrNoRawWire = errors.New("no raw wire to export")
)

// Envelope returns the request line for e as primalscope puts it on the
// wire (without the newline): JSON-RPC 2.0, the lean wire (no "jsonrpc") or
// Holon-RPC (a string id, params always present), with the stdio bus
// routing fields when e has them. id is the request id to use.
func Envelope(e Entry, id uint64) ([]byte, error) {
	if e.ParamsTruncated {
		return nil, ErrParamsCut
	}
	var b bytes.Buffer
	b.WriteByte('{')
	if e.Wire != "lean" {
		b.WriteString(`"jsonrpc":"2.0",`)
	}
	b.WriteString(`"id":`)
	if e.Wire == "holon" {
		b.WriteString(`"` + strconv.FormatUint(id, 10) + `"`)
	} else {
		b.WriteString(strconv.FormatUint(id, 10))
	}
	b.WriteString(`,"method":`)
	writeString(&b, e.Method)
	if len(e.Params) > 0 {
		var c bytes.Buffer
		if err := json.Compact(&c, e.Params); err != nil {
			return nil, fmt.Errorf("stored params: %w", err)
		}
		b.WriteString(`,"params":`)
		b.Write(c.Bytes())
	} else if e.Wire == "holon" {
		b.WriteString(`,"params":{}`)
	}
	if e.Session != "" {
		b.WriteString(`,"sessionId":`)
		writeString(&b, e.Session)
	}
	if e.Pool != "" {
		b.WriteString(`,"pool":`)
		writeString(&b, e.Pool)
	}
	b.WriteByte('}')
	return SafeJSON(b.Bytes()), nil
}

// Command is a call written as the primalscope command line that makes it
// again, pasted into a POSIX shell in any directory.
type Command struct {
	// Line is one shell line, every word quoted as it needs: params with
	// quotes, newlines or $(...) reach primalscope as they were sent.
	Line string
	// Notes say what the line needs that it cannot carry (the family seed)
	// or what it does on purpose; a front end shows them beside the line,
	// never in it.
	Notes []string
}

// CommandFor returns the command that makes the call e again from anywhere:
//
//	primalscope call [--family F] [--wire W] [--prefix on] [--btsp-cipher C]
//	    [--session S] [--pool P] [--] ENDPOINT METHOD ['PARAMS']
//
// It calls the recorded endpoint itself (absolute, as history records it;
// a bus pool as its bus with --pool), not the name, which may resolve to
// something else or nothing where the line is run; with the family id, wire
// and riboCipher prefix the call was made with, and a BTSP cipher other than
// the default when one was asked for. The family seed is never in the
// line: a note says FAMILY_SEED must be set when the call went through BTSP
// or the socket is family-scoped. A call recorded without an endpoint is
// exported by its name, with a note. Params stored cut cannot be exported
// (ErrParamsCut); words holding control characters are refused.
func CommandFor(e Entry) (Command, error) {
	if e.ParamsTruncated {
		return Command{}, ErrParamsCut
	}
	if (e.Target == "" && e.Endpoint == "") || e.Method == "" {
		return Command{}, errors.New("the call has no target or no method")
	}
	var c Command
	target := e.Endpoint
	ep, epErr := ipc.ParseEndpoint(e.Endpoint)
	switch {
	case e.Endpoint == "":
		target = e.Target
		c.Notes = append(c.Notes, fmt.Sprintf("the call's endpoint was not recorded: %q is looked up again where the line runs (add --socket-dir if it is not found there)", render.Sanitize(e.Target)))
	case epErr != nil:
		return Command{}, fmt.Errorf("recorded endpoint %q: %w", render.Sanitize(e.Endpoint), epErr)
	default:
		target = ep.String()
		if ep.Transport == ipc.Unix && !filepath.IsAbs(ep.Path) {
			c.Notes = append(c.Notes, fmt.Sprintf("the socket path %q is relative: run the line in the directory the call was made from", render.Sanitize(ep.Path)))
		}
	}
	args := []string{"primalscope", "call"}
	if e.Family != "" {
		args = append(args, "--family", e.Family)
	}
	if e.Wire == "lean" || e.Wire == "holon" {
		args = append(args, "--wire", e.Wire)
	}
	if e.Prefix {
		args = append(args, "--prefix", "on")
	}
	btspCall := strings.Contains(e.Transport, "+btsp")
	cleartext := strings.Contains(e.Transport, "CLEARTEXT") // to a BTSP endpoint, on purpose: no seed
	switch cipher := btspCipher(e.Transport); {
	case cleartext:
		args = append(args, "--btsp-cipher", "null")
		c.Notes = append(c.Notes, "the call was sent in cleartext to a BTSP endpoint on purpose (--btsp-cipher null), and so is this one")
	case cipher == "null" || cipher == "hmac_plain":
		args = append(args, "--btsp-cipher", cipher)
		c.Notes = append(c.Notes, "the call's BTSP session was not encrypted ("+cipher+", asked for with --btsp-cipher), and so is this one's")
	}
	if !cleartext && (btspCall || e.Outcome == OutcomeRefused || epErr == nil && ipc.FamilyScoped(ep, e.Family)) {
		c.Notes = append(c.Notes, "set FAMILY_SEED (or add --family-seed-file FILE) where the line runs: the call needs the family seed, which is never exported")
	}
	if e.Session != "" {
		args = append(args, "--session", e.Session)
	}
	if e.Pool != "" {
		args = append(args, "--pool", e.Pool)
	}
	// "--" keeps a target or method starting with "-" from reading as a flag.
	if strings.HasPrefix(target, "-") || strings.HasPrefix(e.Method, "-") {
		args = append(args, "--")
	}
	args = append(args, target, e.Method)
	if len(e.Params) > 0 {
		var b bytes.Buffer
		if err := json.Compact(&b, e.Params); err != nil {
			return Command{}, fmt.Errorf("stored params: %w", err)
		}
		args = append(args, string(SafeJSON(b.Bytes())))
	}
	for _, a := range args {
		if hasControl(a) {
			return Command{}, fmt.Errorf("cannot export %q: it holds control characters", render.Sanitize(a))
		}
	}
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = ipc.ShellQuote(a)
	}
	c.Line = strings.Join(q, " ")
	return c, nil
}

// btspCipher returns the cipher named in a transport description
// ("unix+btsp(null, server not authenticated)" gives "null"), or "".
func btspCipher(transport string) string {
	_, rest, ok := strings.Cut(transport, "+btsp(")
	if !ok {
		return ""
	}
	end := strings.IndexAny(rest, ", )")
	if end < 0 {
		return rest
	}
	return rest[:end]
}

// SocatFor returns a shell line that sends e's request line raw with socat:
//
//	printf '%s\n' '<json line>' | socat - UNIX-CONNECT:<path>
//
// (TCP-CONNECT for TCP, ABSTRACT-CONNECT for abstract sockets; the printf
// format starts with the riboCipher bytes \354\001 when the call used the
// prefix, which a note says). A call that needs BTSP (it went through a
// handshake, was refused for security, or its socket is family-scoped) has
// no such line: socat cannot do the handshake, and cleartext would be
// refused (ErrNoRawWire); nor have WebSocket and stdio calls.
func SocatFor(e Entry) (Command, error) {
	ep, err := ipc.ParseEndpoint(e.Endpoint)
	if err != nil {
		return Command{}, fmt.Errorf("%w: endpoint %q: %v", ErrNoRawWire, render.Sanitize(e.Endpoint), err)
	}
	switch {
	case strings.Contains(strings.ToLower(e.Transport), "btsp"):
		return Command{}, fmt.Errorf("%w: the call went through a BTSP handshake, which socat cannot do (use --as command)", ErrNoRawWire)
	case e.Outcome == OutcomeRefused:
		return Command{}, fmt.Errorf("%w: the peer refused the call for security (BTSP): socat cannot do the handshake (use --as command)", ErrNoRawWire)
	case ipc.FamilyScoped(ep, e.Family):
		return Command{}, fmt.Errorf("%w: %s is family-scoped: it takes calls only through a BTSP handshake, which socat cannot do (use --as command)", ErrNoRawWire, render.Sanitize(ep.String()))
	}
	var addr string
	switch ep.Transport {
	case ipc.Unix:
		addr = "UNIX-CONNECT:" + ep.Path
	case ipc.Abstract:
		addr = "ABSTRACT-CONNECT:" + ep.Path
	case ipc.TCP:
		addr = "TCP-CONNECT:" + ep.Address
	default:
		return Command{}, fmt.Errorf("%w: %s endpoints are not a plain socket (use --as command)", ErrNoRawWire, ep.Transport)
	}
	if strings.ContainsAny(addr, ",!") || hasControl(addr) {
		return Command{}, fmt.Errorf("%w: socat cannot take the address %q", ErrNoRawWire, render.Sanitize(addr))
	}
	line, err := Envelope(e, 1)
	if err != nil {
		return Command{}, err
	}
	var c Command
	format := `%s\n`
	if e.Prefix {
		format = `\354\001%s\n`
		c.Notes = append(c.Notes, "the line sends the riboCipher prefix (bytes EC 01) before the request, as the call did")
	} else if e.Error != nil && e.Error.Code == -32002 {
		c.Notes = append(c.Notes, "the peer answered this call -32002 (riboCipher prefix required): the line, without the prefix, gets the same answer")
	}
	if ep.Transport == ipc.Unix && !filepath.IsAbs(ep.Path) {
		c.Notes = append(c.Notes, fmt.Sprintf("the socket path %q is relative: run the line in the directory the call was made from", render.Sanitize(ep.Path)))
	}
	c.Line = "printf " + ipc.ShellQuote(format) + " " + ipc.ShellQuote(string(line)) + " | socat - " + ipc.ShellQuote(addr)
	return c, nil
}

// SafeJSON rewrites valid JSON so that it holds no character a terminal acts
// on or that hides or reorders text: it is render.TerminalJSON (controls,
// DEL, C1, bidirectional controls, line separators and invisible characters
// inside strings become \uXXXX escapes, which mean the same; invalid UTF-8
// becomes \ufffd). JSON that needs no change is returned as it is.
func SafeJSON(b []byte) []byte { return render.TerminalJSON(b) }

func hasControl(s string) bool {
	return render.Sanitize(s) != s
}
