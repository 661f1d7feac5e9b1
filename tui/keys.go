package tui

import (
	"fmt"
	"reflect"
	"sort"
	"strings"

	"charm.land/bubbles/v2/key"
)

// KeyMap is every key the TUI answers to. Each field is one action; its
// toml tag is the action's name in the config file's [keys] table. The keys
// that focus a pane are in Panes, named by the pane. Every key handler,
// every hint the panes draw and the ? overlay read these bindings, so a
// remap changes what a key does and what the screen says about it together.
type KeyMap struct {
	// Everywhere (except while typing in a field).
	Quit     key.Binding `toml:"quit"`
	Help     key.Binding `toml:"help"`
	NextPane key.Binding `toml:"next_pane"`
	PrevPane key.Binding `toml:"prev_pane"`
	Zoom     key.Binding `toml:"zoom"`
	Theme    key.Binding `toml:"theme"`
	Cancel   key.Binding `toml:"cancel"`
	// Message shows the status line's message whole (or the last error).
	Message key.Binding `toml:"message"`
	// ForceQuit quits even while typing in a field.
	ForceQuit key.Binding `toml:"force_quit"`

	// Moving.
	Filter   key.Binding `toml:"filter"`
	Up       key.Binding `toml:"up"`
	Down     key.Binding `toml:"down"`
	PageUp   key.Binding `toml:"page_up"`
	PageDown key.Binding `toml:"page_down"`
	Top      key.Binding `toml:"top"`
	Bottom   key.Binding `toml:"bottom"`
	Select   key.Binding `toml:"select"`
	Fold     key.Binding `toml:"fold"`
	Unfold   key.Binding `toml:"unfold"`
	FoldAll  key.Binding `toml:"fold_all"`
	Left     key.Binding `toml:"scroll_left"`
	Right    key.Binding `toml:"scroll_right"`
	Group    key.Binding `toml:"group"`
	Refresh  key.Binding `toml:"refresh"`

	// Calls and answers.
	Send   key.Binding `toml:"send"`
	Editor key.Binding `toml:"editor"`
	// BookStep loads the runbook's next step into the composer (Config.Books).
	BookStep  key.Binding `toml:"book_step"`
	Complete  key.Binding `toml:"complete"`
	PrevField key.Binding `toml:"prev_field"`
	NextField key.Binding `toml:"next_field"`
	Jq        key.Binding `toml:"jq"`
	Search    key.Binding `toml:"search"`
	NextMatch key.Binding `toml:"next_match"`
	PrevMatch key.Binding `toml:"prev_match"`
	RawToggle key.Binding `toml:"raw"`
	Copy      key.Binding `toml:"copy"`
	CopyPart  key.Binding `toml:"copy_filtered"`
	CopyCmd   key.Binding `toml:"copy_command"`

	// Live panes and history.
	Pause     key.Binding `toml:"pause"`
	KindCycle key.Binding `toml:"kind"`
	SrcCycle  key.Binding `toml:"source"`
	Clear     key.Binding `toml:"clear"`
	Reply     key.Binding `toml:"reply"`
	Replay    key.Binding `toml:"replay"`
	Save      key.Binding `toml:"save"`
	Export    key.Binding `toml:"export"`
	// AddToBook adds the history pane's call to the runbook (Config.Books).
	AddToBook key.Binding `toml:"add_to_book"`
	// MockFaults turns a mock's faults off, or on again (mock.faults.toggle).
	MockFaults key.Binding `toml:"mock_faults"`

	// The composition map: show only what is within N hops of a node
	// (what it needs and what needs it), and change N.
	FocusNode key.Binding `toml:"focus_node"`
	MoreHops  key.Binding `toml:"more_hops"`
	FewerHops key.Binding `toml:"fewer_hops"`

	// Typing in a field (filters, search, jq, the composer).
	Back          key.Binding `toml:"back"`
	Accept        key.Binding `toml:"accept"`
	CharLeft      key.Binding `toml:"char_left"`
	CharRight     key.Binding `toml:"char_right"`
	WordLeft      key.Binding `toml:"word_left"`
	WordRight     key.Binding `toml:"word_right"`
	LineStart     key.Binding `toml:"line_start"`
	LineEnd       key.Binding `toml:"line_end"`
	DeleteBack    key.Binding `toml:"delete_back"`
	DeleteForward key.Binding `toml:"delete_forward"`
	DeleteWord    key.Binding `toml:"delete_word"`
	DeleteToEnd   key.Binding `toml:"delete_to_end"`
	DeleteToStart key.Binding `toml:"delete_to_start"`

	// Panes holds the key that focuses each pane, in the panes' order
	// (paneID); each is remapped under its pane's action name.
	Panes []PaneKey `toml:"-"`
}

// PaneKey is the key that focuses one pane.
type PaneKey struct {
	Action  string
	Binding key.Binding
}

func b(keys []string, helpKey, desc string) key.Binding {
	return key.NewBinding(key.WithKeys(keys...), key.WithHelp(helpKey, desc))
}

// DefaultKeyMap returns the built-in keys: vim keys and arrows.
func DefaultKeyMap() KeyMap { return defaultKeyMap(paneRegistry()) }

func defaultKeyMap(specs []paneSpec) KeyMap {
	k := KeyMap{
		Quit:      b([]string{"q"}, "q", "quit"),
		ForceQuit: b([]string{"ctrl+c"}, "^c", "force quit"),
		Help:      b([]string{"?"}, "?", "help"),
		NextPane:  b([]string{"tab"}, "tab", "next pane"),
		PrevPane:  b([]string{"shift+tab"}, "⇧tab", "previous pane"),
		Zoom:      b([]string{"z"}, "z", "zoom pane"),
		Theme:     b([]string{"T"}, "T", "next theme"),
		Cancel:    b([]string{"ctrl+x"}, "^x", "cancel call"),
		Message:   b([]string{"!"}, "!", "message"),

		Filter:   b([]string{"/"}, "/", "filter/search"),
		Up:       b([]string{"k", "up"}, "↑/k", "up"),
		Down:     b([]string{"j", "down"}, "↓/j", "down"),
		PageUp:   b([]string{"pgup", "ctrl+b", "ctrl+u"}, "pgup", "page up"),
		PageDown: b([]string{"pgdown", "ctrl+f", "ctrl+d", "space"}, "pgdn", "page down"),
		Top:      b([]string{"g", "home"}, "g", "top"),
		Bottom:   b([]string{"G", "end"}, "G", "bottom"),
		Select:   b([]string{"enter"}, "⏎", "open/select"),
		Fold:     b([]string{"h", "left"}, "←/h", "fold"),
		Unfold:   b([]string{"l", "right"}, "→/l", "unfold"),
		FoldAll:  b([]string{"Z"}, "Z", "fold/unfold all"),
		Left:     b([]string{"<", "shift+left"}, "<", "scroll left"),
		Right:    b([]string{">", "shift+right"}, ">", "scroll right"),
		Group:    b([]string{"o"}, "o", "group by"),
		Refresh:  b([]string{"ctrl+r"}, "^r", "refresh"),

		Send:      b([]string{"enter", "ctrl+s"}, "⏎", "send"),
		Editor:    b([]string{"ctrl+e"}, "^e", "$EDITOR"),
		BookStep:  b([]string{"ctrl+o"}, "^o", "book step"),
		Complete:  b([]string{"ctrl+n"}, "^n", "complete method"),
		PrevField: b([]string{"up"}, "↑", "previous field"),
		NextField: b([]string{"down"}, "↓", "next field"),
		Jq:        b([]string{":"}, ":", "jq filter"),
		Search:    b([]string{"/"}, "/", "search"),
		NextMatch: b([]string{"n"}, "n", "next match"),
		PrevMatch: b([]string{"N"}, "N", "previous match"),
		RawToggle: b([]string{"r"}, "r", "pretty/raw"),
		Copy:      b([]string{"y"}, "y", "copy answer"),
		CopyPart:  b([]string{"Y"}, "Y", "copy filtered"),
		CopyCmd:   b([]string{"c"}, "c", "copy as command"),

		Pause:      b([]string{"p"}, "p", "pause"),
		KindCycle:  b([]string{"K"}, "K", "filter kind"),
		SrcCycle:   b([]string{"S"}, "S", "filter source"),
		Clear:      b([]string{"C"}, "C", "clear"),
		Reply:      b([]string{"a"}, "a", "answer request"),
		Replay:     b([]string{"r"}, "r", "replay + diff"),
		Save:       b([]string{"s"}, "s", "save as…"),
		Export:     b([]string{"x"}, "x", "export command"),
		AddToBook:  b([]string{"b"}, "b", "add to book"),
		MockFaults: b([]string{"F"}, "F", "mock faults"),

		FocusNode: b([]string{"f"}, "f", "focus node"),
		MoreHops:  b([]string{"+", "="}, "+", "more hops"),
		FewerHops: b([]string{"-"}, "-", "fewer hops"),

		Back:          b([]string{"esc"}, "esc", "leave field"),
		Accept:        b([]string{"enter", "tab"}, "⏎/tab", "done typing"),
		CharLeft:      b([]string{"left", "ctrl+b"}, "←", "cursor left"),
		CharRight:     b([]string{"right", "ctrl+f"}, "→", "cursor right"),
		WordLeft:      b([]string{"alt+left", "ctrl+left"}, "⌥←", "word left"),
		WordRight:     b([]string{"alt+right", "ctrl+right"}, "⌥→", "word right"),
		LineStart:     b([]string{"home", "ctrl+a"}, "^a", "line start"),
		LineEnd:       b([]string{"end", "ctrl+e"}, "^e", "line end"),
		DeleteBack:    b([]string{"backspace", "ctrl+h"}, "⌫", "delete back"),
		DeleteForward: b([]string{"delete", "ctrl+d"}, "del", "delete"),
		DeleteWord:    b([]string{"ctrl+w", "alt+backspace"}, "^w", "delete word"),
		DeleteToEnd:   b([]string{"ctrl+k"}, "^k", "delete to end"),
		DeleteToStart: b([]string{"ctrl+u"}, "^u", "delete to start"),
	}
	for _, s := range specs {
		k.Panes = append(k.Panes, PaneKey{Action: s.action, Binding: s.focus})
	}
	return k
}

// focusKey is the key that focuses pane id.
func (k *KeyMap) focusKey(id paneID) key.Binding {
	if int(id) < len(k.Panes) {
		return k.Panes[id].Binding
	}
	return key.Binding{}
}

// ShortHelp is the status bar's key list when no pane has its own.
func (k KeyMap) ShortHelp() []key.Binding {
	return []key.Binding{k.Help, k.NextPane, k.Filter, k.Jq, k.Quit}
}

// FullHelp is the ? overlay, one column a group (titled by
// helpGroupTitles).
func (k KeyMap) FullHelp() [][]key.Binding {
	every := []key.Binding{k.Help, k.Quit, k.ForceQuit, k.NextPane, k.PrevPane, k.Zoom, k.Message}
	for _, p := range k.Panes {
		every = append(every, p.Binding)
	}
	every = append(every, k.Theme)
	return [][]key.Binding{
		every,
		{k.Up, k.Down, k.PageUp, k.PageDown, k.Top, k.Bottom, k.Left, k.Right, k.Select, k.Fold, k.Unfold, k.FoldAll, k.Filter, k.Group, k.Refresh},
		{k.Send, k.Editor, k.BookStep, k.Complete, k.PrevField, k.NextField, k.Cancel, k.Jq, k.Search, k.NextMatch, k.PrevMatch, k.RawToggle, k.Copy, k.CopyPart, k.CopyCmd},
		{k.Pause, k.KindCycle, k.SrcCycle, k.Clear, k.Reply, k.Replay, k.Save, k.Export, k.AddToBook, k.MockFaults, k.FocusNode, k.MoreHops, k.FewerHops},
		{k.Back, k.Accept, k.CharLeft, k.CharRight, k.WordLeft, k.WordRight, k.LineStart, k.LineEnd, k.DeleteBack, k.DeleteForward, k.DeleteWord, k.DeleteToEnd, k.DeleteToStart},
	}
}

// helpGroupTitles name the FullHelp columns.
var helpGroupTitles = [...]string{"Everywhere", "Moving", "Calls & answers", "Live panes & history", "Typing in a field"}

// helpKey is how the screen names a binding's key ("" when disabled).
func helpKey(b key.Binding) string {
	if !b.Enabled() {
		return ""
	}
	return b.Help().Key
}

// bindings lists the KeyMap's fields by action name.
func (k *KeyMap) bindings() map[string]*key.Binding {
	v := reflect.ValueOf(k).Elem()
	t := v.Type()
	out := map[string]*key.Binding{}
	for i := 0; i < t.NumField(); i++ {
		name := t.Field(i).Tag.Get("toml")
		if bd, ok := v.Field(i).Addr().Interface().(*key.Binding); ok && name != "" && name != "-" {
			out[name] = bd
		}
	}
	for i := range k.Panes {
		out[k.Panes[i].Action] = &k.Panes[i].Binding
	}
	return out
}

// Remap applies user bindings: action name (the toml tag, or a pane's
// name) → keys. Unknown actions are an error naming them; an empty key list
// disables an action.
func (k *KeyMap) Remap(m map[string][]string) error {
	byName := k.bindings()
	var unknown []string
	for name, keys := range m {
		bd, ok := byName[name]
		if !ok {
			unknown = append(unknown, name)
			continue
		}
		if len(keys) == 0 {
			bd.SetEnabled(false)
			continue
		}
		bd.SetKeys(keys...)
		bd.SetHelp(strings.Join(keys, "/"), bd.Help().Desc)
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return fmt.Errorf("unknown key actions in [keys]: %s (there are: %s)", strings.Join(unknown, ", "), strings.Join(ActionNames(), ", "))
	}
	return nil
}

// ActionNames lists the names the [keys] table accepts.
func ActionNames() []string {
	k := DefaultKeyMap()
	t := reflect.TypeOf(k)
	var out []string
	for i := 0; i < t.NumField(); i++ {
		if name := t.Field(i).Tag.Get("toml"); name != "" && name != "-" {
			out = append(out, name)
		}
	}
	for _, p := range k.Panes {
		out = append(out, p.Action)
	}
	return out
}
