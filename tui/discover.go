package tui

import (
	"context"
	"fmt"
	"time"

	"github.com/ecoPrimals/primalscope/discovery"
	"github.com/ecoPrimals/primalscope/internal/events"
)

// DiscoveryWatcher adapts discovery's live watcher to the TUI: added,
// changed and removed targets become TargetEvents, and every sweep becomes a
// heartbeat line on the events tail.
type DiscoveryWatcher struct {
	D    *discovery.Discoverer
	Opts discovery.WatchOptions
	// Heartbeats, when set, receives one event per sweep; sends never block.
	Heartbeats chan<- Event
}

// Dirs reports the socket directories discovery reads.
func (w *DiscoveryWatcher) Dirs() []string { return w.D.Dirs() }

// Watch streams discovery's events until ctx ends.
func (w *DiscoveryWatcher) Watch(ctx context.Context, out chan<- TargetEvent) error {
	for ev := range w.D.Watch(ctx, w.Opts) {
		var te TargetEvent
		switch ev.Kind {
		case discovery.Added:
			te.Kind = TargetAdded
		case discovery.Changed:
			te.Kind = TargetChanged
		case discovery.Removed:
			te.Kind = TargetRemoved
		case discovery.Synced:
			if w.Heartbeats != nil && ev.Sweep != nil {
				s := ev.Sweep
				hb := Event{Time: ev.Time, Source: "discovery", Kind: EvHeartbeat, Name: "sweep",
					Data: []byte(fmt.Sprintf(`{"live":%d,"targets":%d,"reason":%q,"took_ms":%.1f}`, s.Live, s.Targets, s.Reason, float64(s.Took)/float64(time.Millisecond)))}
				select {
				case w.Heartbeats <- hb:
				default:
				}
			}
			continue
		default:
			continue
		}
		if ev.Target == nil {
			continue
		}
		te.Target = fromDiscovery(ev.Target)
		select {
		case out <- te:
		case <-ctx.Done():
			return nil
		}
	}
	return nil
}

// fromDiscovery converts a discovery snapshot (computing its capability
// tree here, off the UI's path).
func fromDiscovery(d *discovery.Target) Target {
	t := Target{
		Key: d.ID, Name: d.Name, Aliases: d.Aliases, Endpoint: d.Address, Wire: d.Wire(),
		Family: d.Family, Level: d.Level, BTSP: d.BTSP(), Bus: d.Kind == discovery.KindBus,
		Pool: d.Pool, Kind: string(d.Kind), Latency: d.Latency(),
	}
	seen := map[string]bool{}
	for _, s := range d.Sources {
		if !seen[s.Source] {
			seen[s.Source] = true
			t.Sources = append(t.Sources, s.Source)
		}
	}
	switch d.State() {
	case discovery.StateLive:
		t.Health = HealthLive
	case discovery.StateLocked:
		t.Health = HealthLive
		t.BTSP = true
	case discovery.StateStale:
		t.Health = HealthStale
	case discovery.StateDead, discovery.StateError:
		t.Health = HealthDown
	default:
		t.Health = HealthUnknown
	}
	if p := d.Probe; p != nil {
		t.Err = p.Err
		t.Session = p.Session
		t.Identity = p.Identity
		if p.Capabilities != nil {
			t.Caps = p.Capabilities
			t.Tree = p.Capabilities.Tree()
		}
	}
	if t.Endpoint == "" {
		t.Endpoint = d.Endpoint.String()
	}
	t.stream, t.hasStream = events.SpecFor(d)
	return t
}
