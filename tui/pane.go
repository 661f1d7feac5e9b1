package tui

import (
	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
)

// pane is one box of the screen: a component in the spirit of soft-serve's
// common.Component. The root model owns the layout, the focus and the zoom,
// and routes messages: keys and pastes to the focused pane, mouse events
// (as clickMsg and wheelMsg, in the pane's own coordinates) to the pane
// under the pointer, and everything else to every pane, which ignores what
// is not its business. What a pane shares with the others (the targets, the
// current one, the theme, the keys, the status line) is in the
// programContext it was made with; what it asks of the others (focus a
// pane, make a target current, put a call in the composer) it asks by
// handing the root a message through programContext.do, handled at once.
type pane interface {
	// Update handles one message and returns the pane and what to do next.
	Update(msg tea.Msg) (pane, tea.Cmd)
	// View draws the pane's box, exactly as large as SetSize said,
	// rendering only the rows that show. It changes nothing (no scroll,
	// no cache): it may clamp a copy for drawing, never the pane.
	View() string
	// SetSize says how large the pane's box is (borders included); the
	// pane fits its scroll to it, as it does at the end of every Update.
	SetSize(w, h int)
	// KeyMap is the keys the status bar lists while the pane has focus.
	KeyMap() help.KeyMap
}

// typist is a pane that can hold the keyboard for a text field: while
// Typing, every key goes to it, the global keys included (only ForceQuit
// is not).
type typist interface {
	Typing() bool
}

// paneID names a pane: its place in paneRegistry.
type paneID int

// The built-in panes, in paneRegistry's order. The first four have fixed
// places in the layout; the others share the top right corner, where the
// last one focused shows.
const (
	pTargets paneID = iota
	pCaps
	pComposer
	pResponse
	pEvents
	pTrace
	pHistory
	pRequests
	pMap
)

// paneSpec registers a pane: adding one is a file with its type and its
// spec, and a line in paneRegistry.
type paneSpec struct {
	// action names the pane's focus key in the [keys] table.
	action string
	// tab is the word on the pane's tab (narrow screens), after its key.
	tab string
	// focus is the default key that focuses the pane.
	focus key.Binding
	// make builds the pane.
	make func(id paneID, pc *programContext) pane
	// whole says the pane takes the whole body while it has the keyboard
	// (as zoom does): a picture that needs the room.
	whole bool
}

// paneRegistry lists every pane in focus order; a pane's index is its
// paneID. Panes after pResponse are side panes.
func paneRegistry() []paneSpec {
	return []paneSpec{
		targetsSpec(),
		capsSpec(),
		composerSpec(),
		responseSpec(),
		eventsSpec(),
		traceSpec(),
		historySpec(),
		requestsSpec(),
		mapSpec(),
	}
}

// paneBase is what every pane has: who it is, the shared context, and its
// size. Panes embed it.
type paneBase struct {
	id   paneID
	pc   *programContext
	w, h int
}

// SetSize records the pane's size.
func (b *paneBase) SetSize(w, h int) { b.w, b.h = w, h }

// focused reports whether the pane has the keyboard.
func (b *paneBase) focused() bool { return b.pc.focus == b.id }

// keys is the program's key map.
func (b *paneBase) keys() *KeyMap { return b.pc.keys }

// box draws the pane's frame around body, with a title and a right-hand
// note in the top border.
func (b *paneBase) box(title, right string, body []string) string {
	return joinLines(b.pc.st.box(b.w, b.h, title, right, b.focused(), body))
}

// inner is the size inside the pane's border.
func (b *paneBase) inner() (int, int) { return b.w - 2, b.h - 2 }

// hints is a help.KeyMap of one row of bindings: a pane's status bar keys.
type hints []key.Binding

// ShortHelp is the row.
func (h hints) ShortHelp() []key.Binding { return h }

// FullHelp is the row as one group.
func (h hints) FullHelp() [][]key.Binding { return [][]key.Binding{h} }

// Messages between the root and the panes. Intents (focusMsg, selectMsg,
// composeMsg) are asked through programContext.do and handled at once; the
// others are broadcast to every pane.
type (
	// focusMsg asks the root to focus a pane.
	focusMsg struct{ id paneID }
	// focusedMsg tells a pane it has just been given the focus.
	focusedMsg struct{}
	// selectMsg asks the root to make a target the current one; listen
	// has it listened to at once (not on the next frame).
	selectMsg struct {
		key    string
		listen bool
	}
	// targetsMsg says the targets (programContext.targets) changed;
	// reorder says targets came or went, or changed what they are listed
	// by (else only their state did).
	targetsMsg struct{ reorder bool }
	// currentMsg says the current target changed, or what is known of it.
	currentMsg struct{ changed bool }
	// liveMsg is a frame's worth of what live targets pushed. The slice is
	// the root's, reused for the next frame: panes copy what they keep.
	liveMsg struct {
		lines  []line
		frames []TraceFrame
		// feedDropped counts the events (tail lines) the feed dropped so
		// far: received, never shown (the program could not keep up).
		feedDropped uint64
	}
	// cancelMsg asks whatever is in flight to stop.
	cancelMsg struct{}
	// clickMsg is a click inside a pane's border: x and y count from the
	// first cell inside it.
	clickMsg struct {
		x, y   int
		button tea.MouseButton
	}
	// wheelMsg scrolls a pane by delta rows.
	wheelMsg struct{ delta int }
)

// moveBy is how many rows a moving key moves the cursor of a list of n
// rows (a page is 10); ok is false for any other key.
func moveBy(kp tea.KeyPressMsg, k *KeyMap, n int) (d int, ok bool) {
	switch {
	case key.Matches(kp, k.Up):
		return -1, true
	case key.Matches(kp, k.Down):
		return 1, true
	case key.Matches(kp, k.PageUp):
		return -10, true
	case key.Matches(kp, k.PageDown):
		return 10, true
	case key.Matches(kp, k.Top):
		return -n, true
	case key.Matches(kp, k.Bottom):
		return n, true
	}
	return 0, false
}
