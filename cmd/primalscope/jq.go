package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/itchyny/gojq"
	"github.com/spf13/cobra"

	"github.com/ecoPrimals/primalscope/internal/render"
)

// jqFlag is --jq EXPR: a jq filter (gojq, the engine the TUI's filter uses)
// applied to a command's JSON output. It implies --json. The expression is
// compiled before the command does anything, so a bad one is a usage error
// (exit 2, with its position) and no request is sent.
type jqFlag struct {
	expr string
	code *gojq.Code
}

// add registers --jq on cmd and compiles it before cmd runs.
func (j *jqFlag) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&j.expr, "jq", "", "filter the JSON output with a jq expression (implies --json; strings print raw)")
	prev := cmd.PreRunE
	cmd.PreRunE = func(c *cobra.Command, args []string) error {
		if c.Flags().Changed("jq") {
			code, err := compileJQ(j.expr)
			if err != nil {
				return err
			}
			j.code = code
		}
		if prev != nil {
			return prev(c, args)
		}
		return nil
	}
}

// set reports whether --jq was given.
func (j *jqFlag) set() bool { return j.code != nil }

// JQError is a jq expression that does not parse, with where it fails.
type JQError struct {
	Expr   string
	Offset int // byte offset of the fault in Expr
	Msg    string
}

func (e *JQError) Error() string {
	line := render.Sanitize(e.Expr)
	col := len(render.Sanitize(e.Expr[:min(e.Offset, len(e.Expr))]))
	return fmt.Sprintf("--jq: %s at column %d\n  %s\n  %s^", e.Msg, col+1, line, strings.Repeat(" ", col))
}

// compileJQ parses and compiles a jq expression; a fault is a usage error.
func compileJQ(expr string) (*gojq.Code, error) {
	if strings.TrimSpace(expr) == "" {
		return nil, usageErr(errors.New("--jq: the expression is empty (use . for the whole document)"))
	}
	q, err := gojq.Parse(expr)
	if err != nil {
		var pe *gojq.ParseError
		if errors.As(err, &pe) {
			off := pe.Offset - len(pe.Token)
			if off < 0 {
				off = 0
			}
			return nil, usageErr(&JQError{Expr: expr, Offset: off, Msg: pe.Error()})
		}
		return nil, usageErr(fmt.Errorf("--jq: %w", err))
	}
	code, err := gojq.Compile(q)
	if err != nil {
		return nil, usageErr(fmt.Errorf("--jq %s: %w", render.Sanitize(expr), err))
	}
	return code, nil
}

// jqInput decodes a JSON document into the values gojq works on, as the
// TUI's filter does (render.JQInput).
func jqInput(data []byte) (any, error) { return render.JQInput(data) }

// emitJSON prints one JSON document: through --jq when it is set (each
// output on its own; a string raw, anything else as JSON), else as it is.
// line asks for one line per output (streams: tail, ls --watch); otherwise
// JSON is printed pretty (highlighted on a colour terminal).
func (a *app) emitJSON(ctx context.Context, w io.Writer, jq jqFlag, data []byte, line bool) error {
	if !jq.set() {
		if line {
			_, err := w.Write(append(render.AppendSanitized(nil, bytes.TrimSpace(data), false), '\n'))
			return err
		}
		return a.printJSON(w, data, false, nil)
	}
	in, err := jqInput(data)
	if err != nil {
		return fmt.Errorf("--jq: read the output to filter: %w", err)
	}
	iter := jq.code.RunWithContext(ctx, in)
	for {
		v, ok := iter.Next()
		if !ok {
			return nil
		}
		if e, isErr := v.(error); isErr {
			var he *gojq.HaltError
			if errors.As(e, &he) && he.Value() == nil {
				return nil
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return usageErr(fmt.Errorf("--jq %s: %s", render.Sanitize(jq.expr), render.Sanitize(e.Error())))
		}
		if err := a.emitJQValue(w, v, line); err != nil {
			return err
		}
	}
}

func (a *app) emitJQValue(w io.Writer, v any, line bool) error {
	if s, ok := v.(string); ok {
		clean := render.SanitizeMultiline(s)
		if line {
			clean = render.Sanitize(s)
		}
		_, err := io.WriteString(w, clean+"\n")
		return err
	}
	b, err := gojq.Marshal(v)
	if err != nil {
		return fmt.Errorf("--jq: %w", err)
	}
	if line {
		_, err := w.Write(append(render.AppendSanitized(nil, b, false), '\n'))
		return err
	}
	return a.printJSON(w, b, false, nil)
}

// emitDoc is emitJSON for a Go value (a command's --json document).
func (a *app) emitDoc(ctx context.Context, jq jqFlag, doc any) error {
	b, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	return a.emitJSON(ctx, a.io.out, jq, b, false)
}
