// Package tui is primalscope's terminal UI, a bubbletea program.
//
// The screen is made of panes (targets, capability tree, composer, response
// viewer, and the side panes: events, trace, history, server requests, and
// the composition map, which takes the screen while it has the keyboard),
// each a component in its own file (pane_*.go) behind the small pane
// interface: Update, View, SetSize and KeyMap. A thin root model (model.go)
// owns the layout, the focus and the zoom, and routes: keys to the focused
// pane, the mouse to the pane under it, everything else to every pane. The
// panes share a programContext (context.go): the configuration, the theme's
// styles, the keys, the screen's size, the targets and the current one, the
// status line. What one pane asks of another (focus a pane, make a target
// current, put a call in the composer) is a message the root handles at
// once.
//
// Adding a pane is a file with its type and a paneSpec, and one line in
// paneRegistry (pane.go); its focus key joins the KeyMap, the [keys]
// table, the tabs and the ? overlay by itself.
//
// Every key goes through the KeyMap (keys.go): handlers, the hints the
// panes draw and the ? overlay read the same bindings, so a remap in the
// config file's [keys] table changes them together.
//
// Live data arrives through a feed (service.go) that coalesces a frame's
// worth of items; the listener (listen.go) decides which targets the TUI
// holds a connection to. All I/O runs in commands or in goroutines owned by
// Run; Update only applies messages.
package tui
