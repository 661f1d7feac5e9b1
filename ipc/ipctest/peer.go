package ipctest

import (
	"bufio"
	"net"

	"github.com/ecoPrimals/primalscope/internal/peer"
	"github.com/ecoPrimals/primalscope/ipc"
	"github.com/ecoPrimals/primalscope/ipc/btsp"
)

// The compliant peers are those of internal/peer; ipctest gives them the
// names its tests use, so a test that pits a fake against a hostile peer
// needs one import. Nothing here adds behaviour.
type (
	HandlerFunc  = peer.HandlerFunc
	Behavior     = peer.Behavior
	Config       = peer.Config
	Server       = peer.Server
	ServerConn   = peer.ServerConn
	CapFormat    = peer.CapFormat
	Group        = peer.Group
	Primal       = peer.Primal
	PrefixPolicy = peer.PrefixPolicy
	NeuralEntry  = peer.NeuralEntry
	Neural       = peer.Neural
	HolonConfig  = peer.HolonConfig
	HolonServer  = peer.HolonServer
	HolonConn    = peer.HolonConn
	BiomeOS      = peer.BiomeOS
	BusConfig    = peer.BusConfig
	BusPool      = peer.BusPool
	BusLimits    = peer.BusLimits
	StdioBus     = peer.StdioBus

	Registry           = peer.Registry
	Registration       = peer.Registration
	RegistryPeer       = peer.RegistryPeer
	Stall              = peer.Stall
	Graph              = peer.Graph
	GraphNode          = peer.GraphNode
	GraphRun           = peer.GraphRun
	Composition        = peer.Composition
	CompositionOptions = peer.CompositionOptions
	FederationNode     = peer.FederationNode
)

// Constants of internal/peer under the names tests use.
const (
	FormatStandard = peer.FormatStandard
	FormatA        = peer.FormatA
	FormatB        = peer.FormatB
	FormatC        = peer.FormatC
	FormatD        = peer.FormatD
	FormatE        = peer.FormatE

	PrefixRequired    = peer.PrefixRequired
	PrefixRejected    = peer.PrefixRejected
	PrefixDropWithout = peer.PrefixDropWithout

	BTSPRequiredLine   = peer.BTSPRequiredLine
	PrefixRequiredLine = peer.PrefixRequiredLine
	ParseErrorLine     = peer.ParseErrorLine
	BiomeOSPrefix      = peer.BiomeOSPrefix

	WorkerEnv             = peer.WorkerEnv
	DaemonEnv             = peer.DaemonEnv
	DefaultBusInputBuffer = peer.DefaultBusInputBuffer
)

// Listen starts a peer.Server on a new Unix socket at path.
func Listen(path string, cfg Config) (*Server, error) { return peer.Listen(path, cfg) }

// ListenTCP starts a peer.Server on a loopback TCP port.
func ListenTCP(addr string, cfg Config) (*Server, error) { return peer.ListenTCP(addr, cfg) }

// StartPrimal listens on path and answers as p.
func StartPrimal(path string, p *Primal) (*Server, error) { return peer.StartPrimal(path, p) }

// LeanDaemon is peer.LeanDaemon: a lean NDJSON daemon's config.
func LeanDaemon() Config { return peer.LeanDaemon() }

// Error returns a handler that always answers with the given error object.
func Error(code int64, msg string) HandlerFunc { return peer.Error(code, msg) }

// BTSPGate is peer.BTSPGate: the Accept hook of a family-scoped primal.
func BTSPGate(cfg btsp.ServerConfig, cleartext bool) func(net.Conn, *bufio.Reader) (ipc.Framer, bool) {
	return peer.BTSPGate(cfg, cleartext)
}

// RiboCipher is peer.RiboCipher: the Accept hook of a prefix policy.
func RiboCipher(policy PrefixPolicy, name string, next func(net.Conn, *bufio.Reader) (ipc.Framer, bool)) func(net.Conn, *bufio.Reader) (ipc.Framer, bool) {
	return peer.RiboCipher(policy, name, next)
}

// NewNeural returns a simulated Neural API managing entries.
func NewNeural(entries ...NeuralEntry) *Neural { return peer.NewNeural(entries...) }

// NewRegistry returns an empty Songbird-like registry state (peer.Registry).
func NewRegistry() *Registry { return peer.NewRegistry() }

// StartComposition starts peer's two-node test composition.
func StartComposition(opts CompositionOptions) (*Composition, error) {
	return peer.StartComposition(opts)
}

// ListenHolon starts a peer.HolonServer on addr.
func ListenHolon(addr string, cfg HolonConfig) (*HolonServer, error) {
	return peer.ListenHolon(addr, cfg)
}

// ListenBiomeOS starts a simulated biomeOS API socket at path.
func ListenBiomeOS(path string) (*BiomeOS, error) { return peer.ListenBiomeOS(path) }

// StartStdioBus runs a simulated stdio Bus daemon on a socket at path.
func StartStdioBus(path string, cfg BusConfig) (*StdioBus, error) {
	return peer.StartStdioBus(path, cfg)
}

// WorkerMain is peer.WorkerMain: call it first in TestMain so the test
// binary can serve as a stdio Bus worker.
func WorkerMain() { peer.WorkerMain() }
