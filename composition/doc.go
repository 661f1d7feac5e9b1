// Package composition builds the composition map: who consumes whom across
// every target discovery knows, with where each edge came from (declared
// capabilities, the orchestrator, deploy graphs, observed traffic), its
// state (ok, gap, degraded, unused, undeclared), its traffic over a
// sliding window, and the cycles among them.
//
// Build is pure: it turns plain Inputs into a Graph. Gather does the I/O
// that fills the orchestrator, graph and observed inputs. A Model keeps a
// Graph live as events arrive. Layout places a Graph in stable layers for
// drawing, and Neighborhood cuts out the hops around one node. The text
// tree, JSON contract, DOT and Mermaid renderings live here too, so that
// the CLI and the TUI show the same map.
package composition
