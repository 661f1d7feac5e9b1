package history

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
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

// CommandLine returns the primalscope command that makes the call again,
// shell-quoted: primalscope call TARGET METHOD 'PARAMS' with --wire,
// --session and --pool when the call had them. TARGET is the name the call
// was made with (else its endpoint).
func CommandLine(e Entry) (string, error) {
	if e.ParamsTruncated {
		return "", ErrParamsCut
	}
	target := e.Target
	if target == "" {
		target = e.Endpoint
	}
	if target == "" || e.Method == "" {
		return "", errors.New("the call has no target or no method")
	}
	args := []string{"primalscope", "call"}
	if e.Wire == "lean" || e.Wire == "holon" {
		args = append(args, "--wire", e.Wire)
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
		var c bytes.Buffer
		if err := json.Compact(&c, e.Params); err != nil {
			return "", fmt.Errorf("stored params: %w", err)
		}
		args = append(args, string(SafeJSON(c.Bytes())))
	}
	for _, a := range args {
		if hasControl(a) {
			return "", fmt.Errorf("cannot export %q: it holds control characters", render.Sanitize(a))
		}
	}
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = ipc.ShellQuote(a)
	}
	return strings.Join(q, " "), nil
}

// SocatLine returns a shell line that sends e's request line raw with socat:
//
//	printf '%s\n' '<json line>' | socat - UNIX-CONNECT:<path>
//
// (TCP-CONNECT for TCP, ABSTRACT-CONNECT for abstract sockets; the printf
// format starts with the riboCipher bytes \354\001 when the call used the
// prefix). WebSocket, stdio and BTSP calls have no such line (ErrNoRawWire).
func SocatLine(e Entry) (string, error) {
	if strings.Contains(strings.ToLower(e.Transport), "btsp") {
		return "", fmt.Errorf("%w: the call went through a BTSP handshake, which socat cannot do", ErrNoRawWire)
	}
	ep, err := ipc.ParseEndpoint(e.Endpoint)
	if err != nil {
		return "", fmt.Errorf("%w: endpoint %q: %v", ErrNoRawWire, render.Sanitize(e.Endpoint), err)
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
		return "", fmt.Errorf("%w: %s endpoints are not a plain socket (use the command export)", ErrNoRawWire, ep.Transport)
	}
	if strings.ContainsAny(addr, ",!") || hasControl(addr) {
		return "", fmt.Errorf("%w: socat cannot take the address %q", ErrNoRawWire, render.Sanitize(addr))
	}
	line, err := Envelope(e, 1)
	if err != nil {
		return "", err
	}
	format := `%s\n`
	if e.Prefix {
		format = `\354\001%s\n`
	}
	return "printf " + ipc.ShellQuote(format) + " " + ipc.ShellQuote(string(line)) + " | socat - " + ipc.ShellQuote(addr), nil
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
