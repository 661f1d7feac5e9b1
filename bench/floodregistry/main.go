// Command floodregistry is a hostile Songbird registry for whole-process
// measurements of issue 22 (ipctest.FloodRegistry, written from the
// ecosystem's registry wire): ipc.list answers -entries registrations
// (100,000 make a 12 MB answer) and discovery.peers -peers nodes on
// consecutive loopback ports from -peer-port.
//
//	go run ./bench/floodregistry -socket /tmp/flood/songbird.sock &
//	/usr/bin/time -v primalscope ls --socket-dir /tmp/flood --no-proc --timeout 2s
//
// It prints the socket path once listening and serves until SIGINT or
// SIGTERM.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/ecoPrimals/primalscope/ipc/ipctest"
)

func main() {
	sock := flag.String("socket", "", "Unix socket path to listen on (required; name it songbird.sock for discovery to find it)")
	entries := flag.Int("entries", 100_000, "registrations ipc.list answers")
	peers := flag.Int("peers", 0, "nodes discovery.peers answers")
	port := flag.Int("peer-port", 20000, "first loopback port of the nodes")
	flag.Parse()
	if *sock == "" {
		fmt.Fprintln(os.Stderr, "floodregistry: -socket is required")
		os.Exit(2)
	}
	r, err := ipctest.ListenFloodRegistry(*sock, &ipctest.FloodRegistry{Entries: *entries, Peers: *peers, PeerPort: *port})
	if err != nil {
		fmt.Fprintln(os.Stderr, "floodregistry:", err)
		os.Exit(1)
	}
	fmt.Println(*sock)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	<-sig
	r.Close()
}
