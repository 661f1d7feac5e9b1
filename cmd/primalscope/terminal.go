package main

import (
	"encoding/json"
	"io"
	"os"

	"github.com/charmbracelet/colorprofile"
	"github.com/charmbracelet/x/term"

	"github.com/ecoPrimals/primalscope/internal/render"
)

// terminal reports whether w is a terminal: the one decision, per stream,
// behind colour (--color auto) and the escaping of peer text in JSON. The
// process asks the OS; a test sets stdio.terminal to stand in for one.
func (a *app) terminal(w io.Writer) bool {
	w = stream(w)
	if a.io.terminal != nil {
		return a.io.terminal(w)
	}
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(f.Fd())
}

// terminalSafe reports whether JSON written to w must be made safe for a
// terminal (render.Options.Terminal, render.TerminalJSON): w is a terminal,
// or w gets colour (--color always), which is only for a terminal further
// on (less -R). Otherwise JSON goes out as it is, byte for byte.
//
// Text for people (tables, error lines on stderr) is sanitized wherever it
// goes, with render.Sanitize.
func (a *app) terminalSafe(w io.Writer) bool {
	if a.terminal(w) {
		return true
	}
	p, err := a.colorProfile(w)
	return err == nil && p > colorprofile.Ascii
}

// writeJSON writes JSON text (from encoding/json, or as a peer sent it) to
// w: as it is, or made safe with render.TerminalJSON when terminalSafe(w).
func (a *app) writeJSON(w io.Writer, b []byte) error {
	if a.terminalSafe(w) {
		b = render.TerminalJSON(b)
	}
	_, err := w.Write(b)
	return err
}

// encodeJSON writes v as one JSON document and a newline, as json.Encoder
// does (indented by two spaces with indent), through writeJSON.
func (a *app) encodeJSON(w io.Writer, v any, indent bool) error {
	var b []byte
	var err error
	if indent {
		b, err = json.MarshalIndent(v, "", "  ")
	} else {
		b, err = json.Marshal(v)
	}
	if err != nil {
		return err
	}
	return a.writeJSON(w, append(b, '\n'))
}
