package tui

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"

	"charm.land/bubbles/v2/key"
	"github.com/BurntSushi/toml"
)

// KeyMap is every key the TUI answers to. Each field is one action; its
// toml tag is the action's name in the config file's [keys] table.
// KeyMap implements help.KeyMap, so the status bar and the ? overlay are
// generated from it.
type KeyMap struct {
	// Global.
	Quit      key.Binding `toml:"quit"`
	Help      key.Binding `toml:"help"`
	NextPane  key.Binding `toml:"next_pane"`
	PrevPane  key.Binding `toml:"prev_pane"`
	Zoom      key.Binding `toml:"zoom"`
	Targets   key.Binding `toml:"targets"`
	Caps      key.Binding `toml:"caps"`
	Composer  key.Binding `toml:"composer"`
	Response  key.Binding `toml:"response"`
	Events    key.Binding `toml:"events"`
	Trace     key.Binding `toml:"trace"`
	History   key.Binding `toml:"history"`
	Requests  key.Binding `toml:"requests"`
	Theme     key.Binding `toml:"theme"`
	Cancel    key.Binding `toml:"cancel"`
	Back      key.Binding `toml:"back"`
	Filter    key.Binding `toml:"filter"`
	Up        key.Binding `toml:"up"`
	Down      key.Binding `toml:"down"`
	PageUp    key.Binding `toml:"page_up"`
	PageDown  key.Binding `toml:"page_down"`
	Top       key.Binding `toml:"top"`
	Bottom    key.Binding `toml:"bottom"`
	Select    key.Binding `toml:"select"`
	Fold      key.Binding `toml:"fold"`
	Unfold    key.Binding `toml:"unfold"`
	FoldAll   key.Binding `toml:"fold_all"`
	Left      key.Binding `toml:"scroll_left"`
	Right     key.Binding `toml:"scroll_right"`
	Group     key.Binding `toml:"group"`
	Refresh   key.Binding `toml:"refresh"`
	Send      key.Binding `toml:"send"`
	Editor    key.Binding `toml:"editor"`
	Complete  key.Binding `toml:"complete"`
	Jq        key.Binding `toml:"jq"`
	Search    key.Binding `toml:"search"`
	NextMatch key.Binding `toml:"next_match"`
	PrevMatch key.Binding `toml:"prev_match"`
	RawToggle key.Binding `toml:"raw"`
	Copy      key.Binding `toml:"copy"`
	CopyPart  key.Binding `toml:"copy_filtered"`
	CopyCmd   key.Binding `toml:"copy_command"`
	Pause     key.Binding `toml:"pause"`
	KindCycle key.Binding `toml:"kind"`
	SrcCycle  key.Binding `toml:"source"`
	Reply     key.Binding `toml:"reply"`
	Replay    key.Binding `toml:"replay"`
	Save      key.Binding `toml:"save"`
	Export    key.Binding `toml:"export"`
	Clear     key.Binding `toml:"clear"`
}

func b(keys []string, helpKey, desc string) key.Binding {
	return key.NewBinding(key.WithKeys(keys...), key.WithHelp(helpKey, desc))
}

// DefaultKeyMap returns the built-in keys: vim keys and arrows.
func DefaultKeyMap() KeyMap {
	return KeyMap{
		Quit:      b([]string{"q", "ctrl+c"}, "q", "quit"),
		Help:      b([]string{"?"}, "?", "help"),
		NextPane:  b([]string{"tab"}, "tab", "next pane"),
		PrevPane:  b([]string{"shift+tab"}, "⇧tab", "previous pane"),
		Zoom:      b([]string{"z"}, "z", "zoom pane"),
		Targets:   b([]string{"1"}, "1", "targets"),
		Caps:      b([]string{"2"}, "2", "capabilities"),
		Composer:  b([]string{"3"}, "3", "composer"),
		Response:  b([]string{"4"}, "4", "response"),
		Events:    b([]string{"e", "5"}, "e", "events"),
		Trace:     b([]string{"t", "6"}, "t", "trace"),
		History:   b([]string{"H", "7"}, "H", "history"),
		Requests:  b([]string{"R", "8"}, "R", "server requests"),
		Theme:     b([]string{"T"}, "T", "next theme"),
		Cancel:    b([]string{"ctrl+x"}, "^x", "cancel call"),
		Back:      b([]string{"esc"}, "esc", "leave field"),
		Filter:    b([]string{"/"}, "/", "filter/search"),
		Up:        b([]string{"k", "up"}, "↑/k", "up"),
		Down:      b([]string{"j", "down"}, "↓/j", "down"),
		PageUp:    b([]string{"pgup", "ctrl+b", "ctrl+u"}, "pgup", "page up"),
		PageDown:  b([]string{"pgdown", "ctrl+f", "ctrl+d", "space"}, "pgdn", "page down"),
		Top:       b([]string{"g", "home"}, "g", "top"),
		Bottom:    b([]string{"G", "end"}, "G", "bottom"),
		Select:    b([]string{"enter"}, "⏎", "open/select"),
		Fold:      b([]string{"h", "left"}, "←/h", "fold"),
		Unfold:    b([]string{"l", "right"}, "→/l", "unfold"),
		FoldAll:   b([]string{"Z"}, "Z", "fold/unfold all"),
		Left:      b([]string{"<", "shift+left"}, "<", "scroll left"),
		Right:     b([]string{">", "shift+right"}, ">", "scroll right"),
		Group:     b([]string{"o"}, "o", "group by"),
		Refresh:   b([]string{"ctrl+r"}, "^r", "refresh"),
		Send:      b([]string{"enter", "ctrl+s"}, "⏎", "send"),
		Editor:    b([]string{"ctrl+e"}, "^e", "$EDITOR"),
		Complete:  b([]string{"ctrl+n"}, "^n", "complete method"),
		Jq:        b([]string{":"}, ":", "jq filter"),
		Search:    b([]string{"/"}, "/", "search"),
		NextMatch: b([]string{"n"}, "n", "next match"),
		PrevMatch: b([]string{"N"}, "N", "previous match"),
		RawToggle: b([]string{"r"}, "r", "pretty/raw"),
		Copy:      b([]string{"y"}, "y", "copy answer"),
		CopyPart:  b([]string{"Y"}, "Y", "copy filtered"),
		CopyCmd:   b([]string{"c"}, "c", "copy as command"),
		Pause:     b([]string{"p"}, "p", "pause"),
		KindCycle: b([]string{"K"}, "K", "filter kind"),
		SrcCycle:  b([]string{"S"}, "S", "filter source"),
		Reply:     b([]string{"a"}, "a", "answer request"),
		Replay:    b([]string{"r"}, "r", "replay + diff"),
		Save:      b([]string{"s"}, "s", "save as…"),
		Export:    b([]string{"x"}, "x", "export command"),
		Clear:     b([]string{"C"}, "C", "clear"),
	}
}

// ShortHelp is the status bar's key list.
func (k KeyMap) ShortHelp() []key.Binding {
	return []key.Binding{k.Help, k.NextPane, k.Filter, k.Jq, k.Events, k.Trace, k.History, k.Copy, k.Quit}
}

// FullHelp is the ? overlay, one column a group.
func (k KeyMap) FullHelp() [][]key.Binding {
	return [][]key.Binding{
		{k.Help, k.Quit, k.NextPane, k.PrevPane, k.Zoom, k.Targets, k.Caps, k.Composer, k.Response, k.Events, k.Trace, k.History, k.Requests, k.Theme},
		{k.Up, k.Down, k.PageUp, k.PageDown, k.Top, k.Bottom, k.Left, k.Right, k.Select, k.Fold, k.Unfold, k.FoldAll, k.Filter, k.Group, k.Refresh, k.Back},
		{k.Send, k.Editor, k.Complete, k.Cancel, k.Jq, k.NextMatch, k.PrevMatch, k.RawToggle, k.Copy, k.CopyPart, k.CopyCmd},
		{k.Pause, k.KindCycle, k.SrcCycle, k.Clear, k.Reply, k.Replay, k.Save, k.Export},
	}
}

// helpGroupTitles name the FullHelp columns.
var helpGroupTitles = [...]string{"Everywhere", "Moving", "Calls & answers", "Live panes & history"}

// Remap applies user bindings: action name (the toml tag) → keys. Unknown
// actions are an error naming them; an empty key list disables an action.
func (k *KeyMap) Remap(m map[string][]string) error {
	v := reflect.ValueOf(k).Elem()
	t := v.Type()
	byName := map[string]int{}
	for i := 0; i < t.NumField(); i++ {
		byName[t.Field(i).Tag.Get("toml")] = i
	}
	var unknown []string
	for name, keys := range m {
		i, ok := byName[name]
		if !ok {
			unknown = append(unknown, name)
			continue
		}
		bd := v.Field(i).Addr().Interface().(*key.Binding)
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
	t := reflect.TypeOf(KeyMap{})
	out := make([]string, 0, t.NumField())
	for i := 0; i < t.NumField(); i++ {
		out = append(out, t.Field(i).Tag.Get("toml"))
	}
	return out
}

// ConfigPath is the config file the TUI reads keys from:
// $XDG_CONFIG_HOME/primalscope/config.toml, else ~/.config/primalscope/config.toml.
func ConfigPath(getenv func(string) string) string {
	if d := getenv("XDG_CONFIG_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "primalscope", "config.toml")
	}
	if h := getenv("HOME"); h != "" {
		return filepath.Join(h, ".config", "primalscope", "config.toml")
	}
	return ""
}

// LoadKeys reads the [keys] table of a config file (other tables are
// ignored). A missing file yields no bindings and no error.
func LoadKeys(path string) (map[string][]string, error) {
	if path == "" {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read config %s: %w", path, err)
	}
	if len(data) > 1<<20 {
		return nil, fmt.Errorf("read config %s: larger than 1 MiB", path)
	}
	var f struct {
		Keys map[string]any `toml:"keys"`
	}
	if err := toml.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("parse config %s: %w", path, err)
	}
	out := map[string][]string{}
	for name, v := range f.Keys {
		switch x := v.(type) {
		case string:
			out[name] = []string{x}
		case []any:
			var ks []string
			for _, e := range x {
				s, ok := e.(string)
				if !ok {
					return nil, fmt.Errorf("config %s: keys.%s: want strings", path, name)
				}
				ks = append(ks, s)
			}
			out[name] = ks
		default:
			return nil, fmt.Errorf("config %s: keys.%s: want a string or a list of strings", path, name)
		}
	}
	return out, nil
}
