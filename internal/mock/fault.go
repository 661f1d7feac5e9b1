package mock

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// FaultKind is what a fault does to an answer.
type FaultKind string

// The faults.
const (
	FaultError   FaultKind = "error"   // answer a JSON-RPC error instead
	FaultDelay   FaultKind = "delay"   // answer late
	FaultDrop    FaultKind = "drop"    // never answer
	FaultClose   FaultKind = "close"   // hang up after reading the request
	FaultCut     FaultKind = "cut"     // hang up in the middle of the answer
	FaultGarbage FaultKind = "garbage" // answer with a line that is not JSON
)

// Fault is one --fault rule: for requests of Method ("*" for any, or a
// prefix ending in ".*"), do Kind, Percent of the time.
type Fault struct {
	Spec    string
	Method  string
	Kind    FaultKind
	Code    int64
	Message string
	Delay   time.Duration
	Percent float64 // 0 < Percent <= 100
	// Off turns the rule off without removing it (the TUI's toggle).
	Off bool
}

// On reports whether the rule is on (read it where no toggle runs).
func (f *Fault) On() bool { return !f.Off }

// Applies reports whether the rule names method.
// A wildcard never takes the mock's own control method or its
// capability list: with --fault '*=drop' the TUI could neither tell it is
// a mock nor turn the faults off; naming either method does.
func (f *Fault) Applies(method string) bool {
	wild := f.Method == "*" || strings.HasSuffix(f.Method, ".*")
	if wild && (method == ControlMethod || method == "capabilities.list") {
		return false
	}
	switch {
	case f.Method == "*":
		return true
	case strings.HasSuffix(f.Method, ".*"):
		return strings.HasPrefix(method, strings.TrimSuffix(f.Method, "*"))
	}
	return f.Method == method
}

// SpecError is a --fault that does not parse; Offset is where (a caret goes
// under it).
type SpecError struct {
	Spec   string
	Offset int
	Msg    string
}

func (e *SpecError) Error() string {
	return fmt.Sprintf("--fault %s: %s\n  %s\n  %s^", e.Spec, e.Msg, e.Spec, strings.Repeat(" ", e.Offset))
}

// ParseFault reads METHOD=KIND[:ARGS][@P%]:
//
//	ledger.entry.create=error:-32000:busy@25%
//	*=delay:2s        dag.*=drop        x.y=close        x.y=cut        x.y=garbage
func ParseFault(spec string) (*Fault, error) {
	bad := func(off int, format string, args ...any) error {
		return &SpecError{Spec: spec, Offset: off, Msg: fmt.Sprintf(format, args...)}
	}
	eq := strings.IndexByte(spec, '=')
	if eq < 0 {
		return nil, bad(len(spec), "want METHOD=KIND (error:CODE:MESSAGE, delay:D, drop, close, cut, garbage)")
	}
	f := &Fault{Spec: spec, Method: strings.TrimSpace(spec[:eq]), Percent: 100}
	if f.Method == "" || strings.ContainsAny(f.Method, " \t") {
		return nil, bad(0, "no method before =")
	}
	rest := spec[eq+1:]
	base := eq + 1
	if at := strings.LastIndexByte(rest, '@'); at >= 0 {
		pct := rest[at+1:]
		p, err := strconv.ParseFloat(strings.TrimSuffix(pct, "%"), 64)
		if !strings.HasSuffix(pct, "%") || err != nil || p <= 0 || p > 100 {
			return nil, bad(base+at+1, "after @ comes a percentage from 0 to 100, as @25%%")
		}
		f.Percent = p
		rest = rest[:at]
	}
	kind, args, _ := strings.Cut(rest, ":")
	f.Kind = FaultKind(kind)
	argOff := base + len(kind) + 1
	switch f.Kind {
	case FaultError:
		codeText, msg, _ := strings.Cut(args, ":")
		code, err := strconv.ParseInt(codeText, 10, 64)
		if err != nil {
			return nil, bad(argOff, "error:CODE[:MESSAGE]: CODE is an integer, as -32000")
		}
		f.Code, f.Message = code, msg
		if f.Message == "" {
			f.Message = "mock fault"
		}
	case FaultDelay:
		d, err := time.ParseDuration(args)
		if err != nil || d <= 0 {
			return nil, bad(argOff, "delay:D: D is a positive duration, as 2s")
		}
		f.Delay = d
	case FaultDrop, FaultClose, FaultCut, FaultGarbage:
		if args != "" {
			return nil, bad(argOff, "%s takes no argument", f.Kind)
		}
	default:
		return nil, bad(base, "unknown fault %q (error, delay, drop, close, cut, garbage)", kind)
	}
	return f, nil
}
