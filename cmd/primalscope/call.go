package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/charmbracelet/colorprofile"
	"github.com/spf13/cobra"

	"github.com/ecoPrimals/primalscope/internal/human"
	"github.com/ecoPrimals/primalscope/internal/render"
	"github.com/ecoPrimals/primalscope/ipc"
)

// maxParamsFile bounds params read from a file or stdin.
const maxParamsFile = 64 << 20

type callFlags struct {
	raw     bool
	session string
	pool    string
	jq      jqFlag
}

func (a *app) callCmd() *cobra.Command {
	var f callFlags
	cmd := &cobra.Command{
		Use:   "call TARGET METHOD [PARAMS|@file|-]",
		Short: "Call one method and print the answer",
		Long: `Call one method on TARGET and print its result: pretty and highlighted on a
terminal, plain JSON when piped. PARAMS is JSON typed inline, @file to read a
file, or - to read standard input; none sends no params.

Exit codes: 0 ok; 1 the peer answered with an error (printed to stderr, the
envelope to stdout with --raw); 2 bad params (the position of the fault is
shown); 3 cannot connect; 4 no answer within --timeout; 5 BTSP required.`,
		Example: `  primalscope call beardog health.liveness
  primalscope call ai ai.complete '{"prompt":"hi"}'
  primalscope call /run/user/1000/biomeos/rhizocrypt.sock dag.session.create @params.json
  echo '{"n":1}' | primalscope call tcp://127.0.0.1:9200 ipc.list -`,
		Args: argsFor(cobra.RangeArgs(2, 3)),
		RunE: func(cmd *cobra.Command, args []string) error {
			var paramsArg string
			if len(args) == 3 {
				paramsArg = args[2]
			}
			return a.call(cmd.Context(), args[0], args[1], paramsArg, f)
		},
	}
	cmd.Flags().BoolVar(&f.raw, "raw", false, "print the whole response envelope as the peer sent it")
	cmd.Flags().StringVar(&f.session, "session", "", "stdio bus sessionId to send with the call")
	cmd.Flags().StringVar(&f.pool, "pool", "", "stdio bus pool to route the call to")
	f.jq.add(cmd)
	return cmd
}

func (a *app) call(ctx context.Context, targetArg, method, paramsArg string, f callFlags) error {
	if strings.TrimSpace(method) == "" {
		return usageErr(errors.New("METHOD is empty"))
	}
	params, err := a.readParams(paramsArg)
	if err != nil {
		return err
	}
	// Ready the history's journal while the call is made. The entry is
	// journalled (one file, no database) while the answer is rendered, and
	// no byte of the answer is printed before the record exists
	// (heldWriter), so a printed answer is never lost; rec.close folds
	// the journal into the database after printing only when that is free.
	recCh := make(chan *callRecorder, 1)
	go func() { recCh <- a.startRecording(ctx) }()
	rec := (*callRecorder)(nil)
	defer func() { rec.close() }()
	join := func() {
		if recCh != nil {
			rec, recCh = <-recCh, nil
		}
	}
	defer join()

	callCtx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	req := ipc.Request{Method: method, Params: params, SessionID: f.session, Pool: f.pool}
	start := time.Now()
	conn, t, err := a.dial(callCtx, targetArg, nil)
	if err != nil {
		var u *usageError
		if t.Arg != "" && !errors.As(err, &u) {
			join()
			rec.record(ctx, a.callEntry(t, nil, req, nil, err, start))
		}
		return err
	}
	defer closeConn(ctx, conn) // within the command's deadline (deadline.go)
	if req.Pool == "" {
		req.Pool = t.Pool // a bus pool named as ls names it (stdiobus/echo)
	}
	resp, err := conn.Send(callCtx, req)
	if resp != nil {
		a.warnUnmatched(conn)
	}
	join()
	entry := a.callEntry(t, conn, req, resp, err, start)
	if err != nil {
		rec.record(ctx, entry)
	}
	var re *ipc.RPCError
	switch {
	case err == nil:
	case errors.As(err, &re) && resp != nil:
		if f.raw {
			if perr := a.printJSON(a.io.out, resp.Raw, true, nil); perr != nil {
				return perr
			}
		}
		a.printPeerError(t, method, re)
		return &quietError{code: exitPeer, err: err}
	default:
		return fmt.Errorf("%s: %w", t.Name, err)
	}
	if resp.Warning != "" {
		fmt.Fprintf(a.io.err, "primalscope: warning: %s\n", render.Sanitize(resp.Warning))
	}
	// The answer is rendered while its record is written; out lets no byte
	// through before the record exists (or has failed: a warning).
	// Both waits end at the command's bound (boundWait), so a stuck record
	// never holds the answer back past --timeout.
	wctx, wcancel := boundWait(ctx)
	defer wcancel()
	pending := rec.recordAsync(entry)
	// The answer is held until the record is written or wctx ends (the
	// command's bound for waits other than the call): a record that
	// cannot be written in time (a stuck file system) must not cost the
	// user an answer the peer gave; it is then printed unrecorded and
	// pending.wait says so.
	out := newHeldWriter(a.io.out, pending.done, wctx.Done())
	perr := a.printAnswer(ctx, out, resp, f)
	if cerr := out.Close(); perr == nil {
		perr = cerr
	}
	pending.wait(wctx)
	return perr
}

// printAnswer prints a successful call's answer to w as f asks.
func (a *app) printAnswer(ctx context.Context, w io.Writer, resp *ipc.Response, f callFlags) error {
	if f.jq.set() { // on the result (the envelope with --raw)
		doc := resp.Result
		if f.raw {
			doc = resp.Raw
		}
		return a.emitJSON(ctx, w, f.jq, doc, false)
	}
	if f.raw {
		return a.printJSON(w, resp.Raw, true, nil)
	}
	return a.printJSON(w, resp.Result, false, resp.ResultCuts)
}

// readParams reads PARAMS (inline JSON, @file or - for stdin) and checks it.
func (a *app) readParams(arg string) (json.RawMessage, error) {
	var data []byte
	source := "PARAMS"
	switch {
	case arg == "":
		return nil, nil
	case arg == "-":
		b, err := io.ReadAll(io.LimitReader(a.io.in, maxParamsFile+1))
		if err != nil {
			return nil, usageErr(fmt.Errorf("read params from stdin: %w", err))
		}
		data, source = b, "stdin"
	case strings.HasPrefix(arg, "@"):
		fh, err := os.Open(arg[1:])
		if err != nil {
			return nil, usageErr(fmt.Errorf("read params: %w", err))
		}
		defer fh.Close()
		b, err := io.ReadAll(io.LimitReader(fh, maxParamsFile+1))
		if err != nil {
			return nil, usageErr(fmt.Errorf("read params from %s: %w", arg[1:], err))
		}
		data, source = b, arg[1:]
	default:
		data = []byte(arg)
	}
	if len(data) > maxParamsFile {
		return nil, usageErr(fmt.Errorf("params from %s are larger than %s", source, human.Bytes(maxParamsFile)))
	}
	data = bytes.TrimSpace(data)
	// One pass when the params are valid (Compact checks them): big params
	// are checked within --timeout too. The slower CheckJSON says where a
	// fault is.
	var buf bytes.Buffer
	if err := json.Compact(&buf, data); err != nil || len(data) == 0 {
		if cerr := CheckJSON(data); cerr != nil {
			err = cerr
		}
		return nil, usageErr(fmt.Errorf("params from %s are not valid JSON: %w", source, err))
	}
	return buf.Bytes(), nil
}

// JSONError is a JSON syntax error with the position of the fault.
type JSONError struct {
	Line, Column int
	Offset       int64
	Msg          string
	Context      string // the faulty line with a caret under the fault
}

func (e *JSONError) Error() string {
	return fmt.Sprintf("line %d, column %d: %s\n%s", e.Line, e.Column, e.Msg, e.Context)
}

// CheckJSON validates data and says where the first fault is.
func CheckJSON(data []byte) error {
	if len(bytes.TrimSpace(data)) == 0 {
		return &JSONError{Line: 1, Column: 1, Msg: "empty input"}
	}
	if json.Valid(data) {
		// One pass, nothing built: large params cost little before the call.
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	if err == nil {
		if dec.More() || dec.InputOffset() < int64(len(bytes.TrimRight(data, " \t\r\n"))) {
			return positioned(data, dec.InputOffset(), "unexpected text after the JSON value")
		}
		return nil
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return positioned(data, se.Offset-1, se.Error())
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return positioned(data, int64(len(data)), "unexpected end of JSON (unclosed string, object or array?)")
	}
	return positioned(data, 0, err.Error())
}

func positioned(data []byte, off int64, msg string) *JSONError {
	if off < 0 {
		off = 0
	}
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	line := 1 + bytes.Count(data[:off], []byte("\n"))
	start := bytes.LastIndexByte(data[:off], '\n') + 1
	end := bytes.IndexByte(data[off:], '\n')
	if end < 0 {
		end = len(data)
	} else {
		end += int(off)
	}
	col := int(off) - start + 1
	text := string(data[start:end])
	caretAt := col - 1
	if len(text) > 120 { // show a window around the fault
		from := caretAt - 60
		if from < 0 {
			from = 0
		}
		to := from + 120
		if to > len(text) {
			to = len(text)
		}
		text = text[from:to]
		caretAt -= from
	}
	return &JSONError{Line: line, Column: col, Offset: off, Msg: msg,
		Context: "  " + render.Sanitize(text) + "\n  " + strings.Repeat(" ", caretAt) + "^"}
}

// printJSON writes a JSON value: highlighted and pretty on a colour terminal,
// plain and pretty otherwise. exact (for --raw) prints the bytes as the
// peer sent them when there is no colour. On a terminal what a terminal
// would act on, or that hides or reorders text, is escaped as JSON \u
// escapes (the same value); piped, the JSON is written as it came. cuts,
// when the caller has them (ipc.Response.ResultCuts), let a large value be
// printed on several cores (render.Options.Cuts).
func (a *app) printJSON(w io.Writer, data json.RawMessage, exact bool, cuts []int) error {
	prof, err := a.colorProfile(w)
	if err != nil {
		return err
	}
	if exact && prof <= colorprofile.Ascii {
		if err := a.writeJSON(w, data); err != nil {
			return err
		}
		_, err := io.WriteString(w, "\n")
		return err
	}
	growPipe(w, len(data))
	opts := render.Options{Indent: render.DefaultIndent, Profile: prof, Terminal: a.terminalSafe(w), Cuts: cuts}
	if prof > colorprofile.Ascii {
		th, err := a.themeFor()
		if err != nil {
			return err
		}
		opts.Colors = &th.JSON
	}
	err = render.JSONBytes(w, data, opts)
	var se *render.SyntaxError
	if errors.As(err, &se) {
		fmt.Fprintf(a.io.err, "primalscope: warning: the peer's answer is not valid JSON: %v\n", se)
		return nil
	}
	return err
}

// printPeerError reports a peer's error object on stderr.
func (a *app) printPeerError(t target, method string, re *ipc.RPCError) {
	var b strings.Builder
	fmt.Fprintf(&b, "primalscope: %s answered %s with error %d: %s", render.Sanitize(t.Name), render.Sanitize(method), re.Code, render.Sanitize(re.Message))
	if m := re.Meaning(); m != "" {
		fmt.Fprintf(&b, " (%s)", m)
	}
	b.WriteByte('\n')
	if len(re.Data) > 0 && string(re.Data) != "null" {
		b.WriteString("data: ")
		var pretty bytes.Buffer
		if render.JSONBytes(&pretty, re.Data, render.Options{Indent: render.DefaultIndent, Terminal: true}) == nil {
			b.Write(pretty.Bytes())
		} else {
			b.WriteString(render.Sanitize(string(re.Data)) + "\n")
		}
	}
	io.WriteString(a.io.err, b.String())
}

// maxUnmatchedWarnings bounds the lines warnUnmatched prints.
const maxUnmatchedWarnings = 5

// warnUnmatched says on stderr what the peer sent before the call's answer
// that answered nothing: answers of another session or pool, for ids never
// sent, frames with their id twice. None of them is ever printed as the
// answer; a peer sending them is broken or hostile, and the user is told.
func (a *app) warnUnmatched(conn *ipc.Conn) {
	n := 0
	for {
		select {
		case m, ok := <-conn.Incoming():
			if !ok {
				return
			}
			if (m.Kind != ipc.KindUnmatched && m.Kind != ipc.KindInvalid) || m.Warning == "" {
				continue
			}
			n++
			if n <= maxUnmatchedWarnings {
				fmt.Fprintf(a.io.err, "primalscope: warning: the peer sent a frame that is not this call's answer (ignored): %s\n", render.Sanitize(human.Clip(m.Warning, 300)))
			}
		default:
			if n > maxUnmatchedWarnings {
				fmt.Fprintf(a.io.err, "primalscope: warning: and %d more such frames\n", n-maxUnmatchedWarnings)
			}
			return
		}
	}
}
