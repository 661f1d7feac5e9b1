package composition

import (
	"time"

	"github.com/ecoPrimals/primalscope/ipc"
)

// Gathered is what Gather learned from the ecosystem, as plain data for
// Build (Inputs) or a Model (SetGathered).
type Gathered struct {
	// Registered maps a consumed capability to the primals a registry
	// says provide it (ipc.discover).
	Registered map[string][]string
	// Orchestrated and Links are what the biomeOS Neural API said
	// (lifecycle.get depends_on, topology.get).
	Orchestrated []Orchestrated
	Links        []Link
	// Graphs are the deploy graphs (graph.list).
	Graphs []DeployGraph
	// Routes are the traffic figures the Neural API reported
	// (lifecycle.get metrics, capability.call routes).
	Routes []Route
	// TrafficReported is true when a traffic source answered.
	TrafficReported bool
	// Remote are the federation's other nodes, probed through their own
	// registries (nil when there are none or none was asked).
	Remote []RemoteNode
	// Errs says what could not be asked, per source; the rest still counts.
	Errs []error
}

// GatherOptions bound and shape Gather.
type GatherOptions struct {
	// Timeout bounds each call (default 2 s); ctx bounds the whole.
	Timeout time.Duration
	// Security is how to speak to family-scoped sockets.
	Security ipc.Security
	// MaxGet bounds lifecycle.get calls per Neural API (default 64).
	MaxGet int
	// Federation asks each other node's registry (discovery.peers) for
	// its targets and probes them.
	Federation bool
}
