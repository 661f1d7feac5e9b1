package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/charmbracelet/colorprofile"
	"github.com/spf13/cobra"

	"github.com/ecoPrimals/primalscope/internal/dial"
	"github.com/ecoPrimals/primalscope/internal/events"
	"github.com/ecoPrimals/primalscope/internal/human"
	"github.com/ecoPrimals/primalscope/internal/render"
	"github.com/ecoPrimals/primalscope/ipc"
	"github.com/ecoPrimals/primalscope/themes"
)

// maxTailPayload bounds the payload shown on one text line.
const maxTailPayload = 2000

type tailFlags struct {
	json     bool
	interval time.Duration
	buffer   int
	noProc   bool
	jq       jqFlag
}

func (a *app) tailCmd() *cobra.Command {
	var f tailFlags
	cmd := &cobra.Command{
		Use:   "tail [TARGET...]",
		Short: "Show what targets push, live: events, notifications, requests and heartbeats",
		Long: `Hold a connection open to every TARGET (every discovered target when none is
given) and show, one line each as they happen: JSON-RPC notifications, lean
{type,data} events, requests the peer sends (holon heartbeats are answered
automatically), Songbird registry changes (ipc.watch), the biomeOS API's
server-sent events, and a liveness heartbeat polled per target with its
latency and state changes (alive, stale, gone). Lost connections are
re-established with backoff. Ctrl-C ends it.

--json prints one object a line: {"source","time","kind","name","payload"}.
When the output cannot keep up, the oldest events are dropped and a
"dropped" line says how many.`,
		Example: `  primalscope tail
  primalscope tail rhizocrypt songbird --json
  primalscope tail ws://127.0.0.1:8080/rpc
  primalscope tail /run/user/1000/biomeos/biomeos-api-myfamily.sock`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.tail(cmd.Context(), args, f)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&f.json, "json", false, "one JSON object a line")
	fl.DurationVar(&f.interval, "interval", events.DefaultInterval, "how often liveness (and ipc.watch) is polled")
	fl.IntVar(&f.buffer, "buffer", 1024, "events held for a slow output before the oldest are dropped")
	fl.BoolVar(&f.noProc, "no-proc", false, "do not look for stdio Bus daemons in the process table")
	f.jq.add(cmd)
	return cmd
}

// holonFlags adds --insecure; when set, the one dialer skips TLS
// verification of wss:// peers (dial.Settings.Insecure), and a warning is
// printed once.
func (a *app) holonFlags(root *cobra.Command) {
	root.PersistentFlags().BoolVar(&a.insecure, "insecure", false, "do not verify TLS certificates of wss:// peers (dangerous)")
	prev := root.PersistentPreRunE
	root.PersistentPreRunE = func(cmd *cobra.Command, args []string) error {
		if a.insecure {
			fmt.Fprintln(a.io.err, "primalscope: WARNING: --insecure: TLS certificates of wss:// peers are NOT verified; anyone on the path can read and change this traffic")
		}
		if prev != nil {
			return prev(cmd, args)
		}
		return nil
	}
}

func (a *app) tail(ctx context.Context, args []string, f tailFlags) error {
	if f.interval <= 0 {
		return usageErr(errors.New("--interval must be positive"))
	}
	if f.buffer <= 0 {
		return usageErr(errors.New("--buffer must be positive"))
	}
	if a.maxFrame <= 0 {
		return usageErr(errors.New("--max-frame must be positive"))
	}
	specs, targets, err := a.tailSpecs(ctx, args, f)
	if err != nil {
		return err
	}
	// The sources dial from their own goroutines, each through the one
	// dialer (made here, once).
	d, err := a.dialer()
	if err != nil {
		return err
	}
	trusted, err := a.trustedUIDs() // an event stream's socket: owner checked as calls' are
	if err != nil {
		return err
	}
	cfg := events.Config{
		Interval:  f.interval,
		Insecure:  a.insecure,
		MaxFrame:  a.maxFrame,
		TrustUIDs: trusted,
		Dial: func(ctx context.Context, s events.Spec, trace func(ipc.TraceEvent)) (*ipc.Conn, error) {
			// The target as it was resolved or discovered: the family its
			// name carries and a BTSP demand decide what it may be sent.
			t := targets[specKey(s)]
			t.Name = s.Name
			return d.Dial(ctx, t, dial.Options{Trace: trace, IncomingBuffer: 256})
		},
	}
	sources := make([]events.Source, 0, len(specs))
	for _, s := range specs {
		sources = append(sources, cfg.Source(s))
	}
	f.json = f.json || f.jq.set()
	p, err := a.tailPrinter(f.json)
	if err != nil {
		return err
	}
	if f.jq.set() {
		p.filter = func(w io.Writer, line []byte) error { return a.emitJSON(ctx, w, f.jq, line, true) }
	}
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	stream := events.Merge(sctx, sources, events.Options{Buffer: f.buffer})
	if !f.json {
		names := make([]string, len(specs))
		for i, s := range specs {
			names[i] = render.Sanitize(s.Name)
		}
		fmt.Fprintf(a.io.err, "primalscope: tailing %d target(s): %s (Ctrl-C ends)\n", len(specs), strings.Join(names, ", "))
	}
	var refused []string // targets refused for security: the exit is 5
	for {
		ev, err := stream.Next(ctx)
		if err != nil {
			break
		}
		if ev.Kind == events.KindLiveness && ev.Name == events.StateRefused && len(refused) < 8 {
			refused = append(refused, render.Sanitize(ev.Source))
		}
		if werr := p.print(ev); werr != nil && ctx.Err() == nil {
			stop()
			stream.Wait()
			if _, bad := werr.(*usageError); bad {
				return werr // --jq failed on a line: said as it is
			}
			return fmt.Errorf("write: %w", werr)
		}
	}
	stop()
	stream.Wait() // every connection is closed when this returns
	if len(refused) > 0 {
		// Said on the stream as it happened (state "refused"); the exit
		// says it too, as call's would.
		return &securityError{err: fmt.Errorf("refused for security (a BTSP handshake or session frame failed, or another local user serves the socket; not reconnected): %s", strings.Join(refused, ", "))}
	}
	return nil
}

// specKey identifies a tailed target: its endpoint and pool.
func specKey(s events.Spec) string { return s.Endpoint.String() + "#" + s.Pool }

// tailSpecs resolves the TARGET arguments through the one dialer, or
// discovers every target. Each spec's target, as resolved or discovered
// (with the family its name carries and whether it demands BTSP), is what
// its connections are dialled as, keyed by specKey.
func (a *app) tailSpecs(ctx context.Context, args []string, f tailFlags) ([]events.Spec, map[string]dial.Target, error) {
	var specs []events.Spec
	targets := map[string]dial.Target{}
	add := func(s events.Spec, t dial.Target) {
		k := specKey(s)
		if _, seen := targets[k]; !seen {
			targets[k] = t
			specs = append(specs, s)
		}
	}
	if len(args) > 0 {
		for _, arg := range args {
			t, err := a.resolve(ctx, arg)
			if err != nil {
				return nil, nil, err
			}
			s := events.SpecForEndpoint(t.Name, t.Endpoint)
			s.Pool, s.Wire = t.Pool, t.Wire
			add(s, t)
		}
		return specs, targets, nil
	}
	d, err := a.discoverer(discoverFlags{noProc: f.noProc}, nil)
	if err != nil {
		return nil, nil, err
	}
	snap, err := d.Sweep(ctx, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("discover targets: %w", err)
	}
	names := map[string]int{}
	for _, t := range snap.Targets {
		names[t.Name]++
	}
	for _, t := range snap.Targets {
		if s, ok := events.SpecFor(t); ok {
			switch {
			case names[t.Name] > 1 && t.Family != "":
				s.Name = t.Name + "-" + t.Family // beardog and beardog-<family>
			case names[t.Name] > 1 && t.Pool != "" && !strings.Contains(t.Name, t.Pool):
				s.Name = t.Name + "/" + t.Pool
			}
			add(s, dial.FromDiscovery(t))
		}
	}
	// Names still shared (the same primal in two socket directories, say)
	// get their directory, so lines can be told apart.
	count := map[string]int{}
	for _, s := range specs {
		count[s.Name]++
	}
	for i, s := range specs {
		if count[s.Name] > 1 {
			if s.Endpoint.Transport == ipc.Unix {
				specs[i].Name = s.Name + "@" + filepath.Base(filepath.Dir(s.Endpoint.Path))
			} else {
				specs[i].Name = s.Name + "@" + s.Endpoint.String()
			}
		}
	}
	if len(specs) == 0 {
		return nil, nil, &connectError{fmt.Errorf("no targets found to tail (looked in %s); name one, or pass --socket-dir", strings.Join(snap.Dirs, ", "))}
	}
	return specs, targets, nil
}

// tailPrinter writes events: text lines or JSON objects.
type tailPrinter struct {
	w      *bufio.Writer
	json   bool
	safe   bool // escape JSON for a terminal (app.terminalSafe)
	colors *themes.JSONColors
	prof   colorprofile.Profile
	hl     *render.Highlighter
	buf    bytes.Buffer
	// filter, when set, prints each JSON line through --jq instead.
	filter func(w io.Writer, line []byte) error
}

func (a *app) tailPrinter(asJSON bool) (*tailPrinter, error) {
	p := &tailPrinter{w: bufio.NewWriterSize(a.io.out, 64<<10), json: asJSON, safe: a.terminalSafe(a.io.out)}
	if asJSON {
		return p, nil
	}
	prof, err := a.colorProfile(a.io.out)
	if err != nil {
		return nil, err
	}
	p.prof = prof
	if prof > colorprofile.Ascii {
		th, err := a.themeFor()
		if err != nil {
			return nil, err
		}
		p.colors = &th.JSON
		p.hl = render.NewHighlighter(p.colors, prof)
	}
	return p, nil
}

func (p *tailPrinter) print(ev events.Event) error {
	if p.json {
		b, err := json.Marshal(ev)
		if err != nil {
			return err
		}
		if p.filter != nil {
			if err := p.filter(p.w, b); err != nil {
				return err
			}
			return p.w.Flush()
		}
		if p.safe {
			b = render.TerminalJSON(b)
		}
		p.w.Write(b)
		p.w.WriteByte('\n')
		return p.w.Flush()
	}
	p.w.WriteString(p.paint("2", ev.Time.Local().Format("15:04:05.000")))
	p.w.WriteByte(' ')
	p.w.WriteString(p.paint("1;36", render.Sanitize(ev.Source)))
	p.w.WriteByte(' ')
	p.w.WriteString(p.paint(kindColor(ev), kindLabel(ev)))
	if ev.Name != "" {
		p.w.WriteByte(' ')
		p.w.WriteString(p.paint("1", render.Sanitize(ev.Name)))
	}
	if detail := p.detail(ev); detail != "" {
		p.w.WriteByte(' ')
		p.w.WriteString(detail)
	}
	p.w.WriteByte('\n')
	return p.w.Flush()
}

// detail is the line's payload: liveness and notes in words, the rest as
// compact, highlighted JSON.
func (p *tailPrinter) detail(ev events.Event) string {
	switch ev.Kind {
	case events.KindLiveness:
		var l struct {
			Latency *float64 `json:"latency_ms"`
			Was     string   `json:"was"`
			Reason  string   `json:"reason"`
		}
		_ = json.Unmarshal(ev.Payload, &l)
		var parts []string
		if l.Latency != nil {
			parts = append(parts, fmt.Sprintf("%.2f ms", *l.Latency))
		}
		if l.Was != "" {
			parts = append(parts, "(was "+render.Sanitize(l.Was)+")")
		}
		if l.Reason != "" {
			parts = append(parts, render.Sanitize(l.Reason))
		}
		return strings.Join(parts, " ")
	case events.KindNote:
		var n struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(ev.Payload, &n) == nil && n.Message != "" {
			return p.paint("2", render.Sanitize(n.Message))
		}
	case events.KindDropped:
		var d struct{ Dropped, Total uint64 }
		_ = json.Unmarshal(ev.Payload, &d)
		return p.paint("1;31", fmt.Sprintf("%d event(s) dropped: the output was too slow (%d in all)", d.Dropped, d.Total))
	}
	p.buf.Reset()
	if err := json.Compact(&p.buf, ev.Payload); err != nil {
		return render.Sanitize(string(ev.Payload))
	}
	s := human.Clip(render.Sanitize(p.buf.String()), maxTailPayload)
	if p.hl != nil {
		return p.hl.Line(s)
	}
	return s
}

func (p *tailPrinter) paint(code, s string) string {
	if p.prof <= colorprofile.Ascii || s == "" {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

func kindLabel(ev events.Event) string {
	if ev.Kind == events.KindLiveness {
		return "♥"
	}
	return ev.Kind
}

func kindColor(ev events.Event) string {
	switch ev.Kind {
	case events.KindLiveness:
		switch ev.Name {
		case events.StateAlive:
			return "32"
		case events.StateStale:
			return "33"
		}
		return "31"
	case events.KindRequest:
		return "35"
	case events.KindRegistry:
		return "34"
	case events.KindSSE:
		return "36"
	case events.KindNote:
		return "2"
	case events.KindDropped:
		return "1;31"
	}
	return "32"
}
