package tui

import (
	"strings"
	"unicode"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/ecoPrimals/primalscope/internal/render"
)

// lineEdit is a one-line text field: a rune buffer and a cursor.
//
// It is kept rather than bubbles' textinput because the composer needs what
// textinput cannot do: draw the rune where the params stop being JSON in
// the error style (errAt), and show peer text (params loaded from history
// or $EDITOR) escaped by render.Sanitize instead of having control
// characters dropped from the value. It does not blink (no ticker runs
// while the UI is idle), and its keys are the KeyMap's text-field actions,
// remappable like every other key.
type lineEdit struct {
	r   []rune
	pos int
}

func (e *lineEdit) String() string { return string(e.r) }

func (e *lineEdit) Set(s string) {
	e.r = []rune(s)
	e.pos = len(e.r)
}

func (e *lineEdit) Empty() bool { return len(e.r) == 0 }

// insert puts s at the cursor; newlines and tabs become spaces.
func (e *lineEdit) insert(s string) {
	s = strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' || r == '\t' {
			return ' '
		}
		return r
	}, s)
	rs := []rune(s)
	e.r = append(e.r[:e.pos], append(rs, e.r[e.pos:]...)...)
	e.pos += len(rs)
}

// Update edits the field for one key (through the KeyMap's text-field
// bindings) or a paste; it reports whether the field used it. Printable
// text is typed as it is.
func (e *lineEdit) Update(msg tea.Msg, k *KeyMap) bool {
	switch m := msg.(type) {
	case tea.PasteMsg:
		e.insert(m.Content)
		return true
	case tea.KeyPressMsg:
		switch {
		case key.Matches(m, k.CharLeft):
			if e.pos > 0 {
				e.pos--
			}
		case key.Matches(m, k.CharRight):
			if e.pos < len(e.r) {
				e.pos++
			}
		case key.Matches(m, k.LineStart):
			e.pos = 0
		case key.Matches(m, k.LineEnd):
			e.pos = len(e.r)
		case key.Matches(m, k.DeleteBack):
			if e.pos > 0 {
				e.r = append(e.r[:e.pos-1], e.r[e.pos:]...)
				e.pos--
			}
		case key.Matches(m, k.DeleteForward):
			if e.pos < len(e.r) {
				e.r = append(e.r[:e.pos], e.r[e.pos+1:]...)
			}
		case key.Matches(m, k.DeleteToEnd):
			e.r = e.r[:e.pos]
		case key.Matches(m, k.DeleteToStart):
			e.r = e.r[e.pos:]
			e.pos = 0
		case key.Matches(m, k.DeleteWord):
			i := e.pos
			for i > 0 && unicode.IsSpace(e.r[i-1]) {
				i--
			}
			for i > 0 && !unicode.IsSpace(e.r[i-1]) && !strings.ContainsRune(".,:{}[]\"", e.r[i-1]) {
				i--
			}
			if i == e.pos && i > 0 {
				i--
			}
			e.r = append(e.r[:i], e.r[e.pos:]...)
			e.pos = i
		case key.Matches(m, k.WordLeft):
			for e.pos > 0 && unicode.IsSpace(e.r[e.pos-1]) {
				e.pos--
			}
			for e.pos > 0 && !unicode.IsSpace(e.r[e.pos-1]) {
				e.pos--
			}
		case key.Matches(m, k.WordRight):
			for e.pos < len(e.r) && unicode.IsSpace(e.r[e.pos]) {
				e.pos++
			}
			for e.pos < len(e.r) && !unicode.IsSpace(e.r[e.pos]) {
				e.pos++
			}
		case m.Text != "" && m.Mod&^(tea.ModShift) == 0:
			e.insert(m.Text)
		default:
			return false
		}
		return true
	}
	return false
}

// View renders the field in width cells, scrolled so the cursor shows; the
// cursor is a reversed cell when focused. errAt (a rune index, -1 for none)
// is drawn in errStyle.
func (e *lineEdit) View(width int, focused bool, st *styles, errAt int) string {
	if width < 1 {
		return ""
	}
	// Horizontal scroll: keep the cursor within the window.
	start := 0
	if e.pos >= width {
		start = e.pos - width + 1
	}
	var sb strings.Builder
	w := 0
	for i := start; i <= len(e.r) && w < width; i++ {
		ch := " "
		if i < len(e.r) {
			ch = render.Sanitize(string(e.r[i]))
		} else if !focused || i != e.pos {
			break
		}
		cw := ansi.StringWidth(ch)
		if w+cw > width {
			break
		}
		switch {
		case focused && i == e.pos:
			sb.WriteString(st.cursor.Render(ch))
		case i == errAt:
			sb.WriteString(st.Err.Underline(true).Render(ch))
		default:
			sb.WriteString(ch)
		}
		w += cw
	}
	return sb.String()
}

// field is a text field a pane types into while it is active: a filter, a
// search, a name. Accept leaves it keeping the text; Back leaves it too,
// clearing a filter's text (a search keeps it); other keys edit it.
type field struct {
	lineEdit
	active bool
}

// edit is what one key did to a field.
type edit int

const (
	editNone    edit = iota // nothing
	editChanged             // the text changed
	editDone                // Accept: typing ended, the text kept
	editBack                // Back: typing ended (a filter's text cleared)
)

// Update handles one key or paste while the field is active; clear says
// Back clears the text (a filter's).
func (f *field) Update(msg tea.Msg, k *KeyMap, clear bool) edit {
	kp, _ := msg.(tea.KeyPressMsg)
	switch {
	case key.Matches(kp, k.Back):
		f.active = false
		if clear && !f.Empty() {
			f.Set("")
		}
		return editBack
	case key.Matches(kp, k.Accept):
		f.active = false
		return editDone
	case f.lineEdit.Update(msg, k):
		return editChanged
	}
	return editNone
}

// view draws the field after its label, in w cells.
func (f *field) view(st *styles, label string, w int) string {
	return st.Accent.Render(label) + f.View(w-ansi.StringWidth(label), f.active, st, -1)
}
