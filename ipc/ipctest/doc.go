// Package ipctest runs in-process fake peers for tests of every wire
// primalscope speaks, like net/http/httptest. The compliant peers are those
// of internal/peer (the simulated ecosystem the demo serves), under the
// names tests use; this package adds the misbehaving ones real deployments
// show and that only tests need: hostile BTSP, WebSocket and riboCipher
// peers, peers that crash mid-line or answer with wrong ids, a crowd of
// thousands of sockets, a fake Songbird with a garbage mode, and peers whose
// text carries terminal control sequences. The production binary does not
// link this package.
package ipctest
