package tui

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"

	"github.com/ecoPrimals/primalscope/internal/render"
)

const (
	fMethod = iota
	fParams
	fSession
	fPool
)

// composer is the call being written: method, params, and for buses the
// session and pool. In reply mode it answers a server-initiated request.
type composer struct {
	field   int
	method  lineEdit
	params  lineEdit
	session lineEdit
	pool    lineEdit

	// live JSON check of params
	paramsErr   string
	paramsErrAt int // rune index of the fault, -1 when none

	comps   []string // method completions
	compIdx int

	inflight   bool
	inflightAt string // method in flight
	seq        int

	reply *Event // answering this server request when set
}

// maxLiveCheck is the largest params checked as they are typed; larger
// ones (pasted or from $EDITOR) are checked in the command that sends them.
const maxLiveCheck = 64 << 10

func newComposer() composer {
	c := composer{paramsErrAt: -1}
	c.params.Set("{}")
	return c
}

func (c *composer) fieldEdit() *lineEdit {
	switch c.field {
	case fParams:
		return &c.params
	case fSession:
		return &c.session
	case fPool:
		return &c.pool
	}
	return &c.method
}

// checkParams validates the params as JSON and finds the fault's position.
func (c *composer) checkParams() {
	c.paramsErr, c.paramsErrAt = "", -1
	s := strings.TrimSpace(c.params.String())
	if s == "" {
		return
	}
	if len(s) > maxLiveCheck {
		return // checked when sent, off the UI's path
	}
	var v json.RawMessage
	err := json.Unmarshal([]byte(c.params.String()), &v)
	if err == nil {
		if t := strings.TrimSpace(c.params.String()); t[0] != '{' && t[0] != '[' {
			c.paramsErr = "params must be an object or an array"
		}
		return
	}
	var se *json.SyntaxError
	raw := c.params.String()
	if errors.As(err, &se) {
		off := int(se.Offset)
		switch {
		case strings.HasPrefix(se.Error(), "unexpected end") || off > len(raw):
			off = len(raw) // ran out of input: the fault is at the end
		case off > 0:
			off-- // Offset counts the byte that could not be read
		}
		c.paramsErrAt = utf8.RuneCountInString(raw[:off])
		c.paramsErr = fmt.Sprintf("col %d: %s", c.paramsErrAt+1, se.Error())
		return
	}
	c.paramsErrAt = utf8.RuneCountInString(raw)
	c.paramsErr = err.Error()
}

// complete recomputes the method completions for the typed prefix.
func (c *composer) complete(t *Target) {
	c.comps, c.compIdx = nil, 0
	if t == nil || t.Caps == nil {
		return
	}
	q := c.method.String()
	var prefix, fz []string
	for _, m := range t.Caps.Methods {
		switch {
		case m == q:
		case strings.HasPrefix(m, q):
			prefix = append(prefix, m)
		case q != "" && fuzzy(m, q):
			fz = append(fz, m)
		}
	}
	sort.Strings(prefix)
	sort.Strings(fz)
	c.comps = append(prefix, fz...)
	if len(c.comps) > 200 {
		c.comps = c.comps[:200]
	}
}

// View renders the composer's three body lines.
func (c *composer) View(st *styles, t *Target, w int, focused bool) []string {
	label := func(s string, f int) string {
		if focused && c.field == f {
			return st.Accent.Bold(true).Render(s)
		}
		return st.Dim.Render(s)
	}
	tgt := st.Dim.Render("no target")
	if t != nil {
		tgt = healthDot(st, t.Health) + " " + st.Accent.Render(render.Sanitize(t.Name))
	}
	var l1 string
	if c.reply != nil {
		l1 = st.WarnBadge.Render("reply") + " " + st.Accent.Render(render.Sanitize(c.reply.Source)) + " " +
			render.Sanitize(c.reply.Name) + st.Dim.Render(" id "+render.Sanitize(string(c.reply.ID)))
	} else {
		busW := 0
		var bus string
		if t != nil && t.Bus {
			bus = "  " + label("session ", fSession) + c.session.View(12, focused && c.field == fSession, st, -1) +
				"  " + label("pool ", fPool) + c.pool.View(10, focused && c.field == fPool, st, -1)
			busW = ansi.StringWidth(bus)
		}
		head := tgt + "  " + label("method ", fMethod)
		mw := w - ansi.StringWidth(head) - busW
		l1 = head + c.method.View(max(mw, 4), focused && c.field == fMethod, st, -1) + bus
	}
	plabel := "params "
	if c.reply != nil {
		plabel = "result "
	}
	head2 := label(plabel, fParams)
	l2 := head2 + c.params.View(max(w-ansi.StringWidth(head2), 4), focused && c.field == fParams, st, c.paramsErrAt)
	var l3 string
	switch {
	case c.inflight:
		l3 = st.Info.Render("sending "+render.Sanitize(c.inflightAt)+"…") + st.Dim.Render("  ^x cancel")
	case focused && c.field == fMethod && len(c.comps) > 0:
		var sb strings.Builder
		sb.WriteString(st.Dim.Render("⇥ "))
		for i, m := range c.comps {
			if i > 0 {
				sb.WriteString("  ")
			}
			if i == c.compIdx {
				sb.WriteString(st.Selected.Render(render.Sanitize(m)))
			} else {
				sb.WriteString(render.Sanitize(m))
			}
			if sb.Len() > w*4 {
				break
			}
		}
		l3 = sb.String()
	case c.paramsErr != "":
		l3 = st.Err.Render("✗ " + render.Sanitize(c.paramsErr))
	default:
		l3 = st.OK.Render("✓ JSON") + st.Dim.Render("  ⏎ send  ^e $EDITOR  ↑↓ field  ^n complete")
	}
	return []string{l1, l2, l3}
}
