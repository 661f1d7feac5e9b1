package tui

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/ecoPrimals/primalscope/discovery"
	"github.com/ecoPrimals/primalscope/internal/events"
)

// DiscoveryWatcher runs discovery's live watcher for the TUI: added,
// changed and removed targets go out as they are (during a sweep, each
// one as it is found and again as it is judged: WatchOptions.Progress),
// and every sweep becomes a heartbeat line on the events tail.
type DiscoveryWatcher struct {
	D    *discovery.Discoverer
	Opts discovery.WatchOptions
	// Heartbeats, when set, receives one event per sweep (a liveness
	// event named "sweep"); sends never block.
	Heartbeats chan<- events.Event
}

// Dirs reports the socket directories discovery reads.
func (w *DiscoveryWatcher) Dirs() []string { return w.D.Dirs() }

// Watch streams discovery's events until ctx ends.
func (w *DiscoveryWatcher) Watch(ctx context.Context, out chan<- discovery.Event) error {
	opts := w.Opts
	opts.Progress = true
	for ev := range w.D.Watch(ctx, opts) {
		switch ev.Kind {
		case discovery.Added, discovery.Changed, discovery.Removed:
			if ev.Target == nil {
				continue
			}
			select {
			case out <- ev:
			case <-ctx.Done():
				return nil
			}
		case discovery.Synced:
			if w.Heartbeats != nil && ev.Sweep != nil {
				s := ev.Sweep
				payload := fmt.Sprintf(`{"live":%d,"targets":%d,"reason":%q,"took_ms":%.1f`, s.Live, s.Targets, s.Reason, float64(s.Took)/float64(time.Millisecond))
				if errs := sweepErrors(s.Errors); errs != "" {
					// What the sweep cut or could not read (a registry's
					// entries past the bound, probes past it): said here.
					payload += `,"errors":` + errs
				}
				hb := events.Event{Time: ev.Time, Source: "discovery", Kind: events.KindLiveness, Name: "sweep",
					Payload: []byte(payload + "}")}
				select {
				case w.Heartbeats <- hb:
				default:
				}
			}
		}
	}
	return nil
}

// sweepErrors is a sweep's source errors as a JSON list of "source: error"
// strings (at most 8; "" when none), for the sweep's heartbeat.
func sweepErrors(errs []discovery.SourceError) string {
	if len(errs) == 0 {
		return ""
	}
	var list []string
	for i, e := range errs {
		if i == 8 {
			list = append(list, fmt.Sprintf("… and %d more", len(errs)-8))
			break
		}
		list = append(list, e.Source+": "+e.Err)
	}
	b, err := json.Marshal(list)
	if err != nil {
		return ""
	}
	return string(b)
}
