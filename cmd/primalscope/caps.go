package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/ecoPrimals/primalscope/discovery"
	"github.com/ecoPrimals/primalscope/discovery/capability"
	"github.com/ecoPrimals/primalscope/internal/human"
	"github.com/ecoPrimals/primalscope/internal/render"
	"github.com/ecoPrimals/primalscope/ipc"
)

func (a *app) capsCmd() *cobra.Command {
	var (
		asJSON bool
		jq     jqFlag
	)
	cmd := &cobra.Command{
		Use:   "caps TARGET",
		Short: "Show what a target can do: identity, health and its capability tree",
		Long: `Ask TARGET for health.liveness, identity.get (or identity) and
capabilities.list (or capability.list), in any of the Capability Wire
Standard's shapes, and show the capability tree: domains, methods, cost
estimates, prerequisites, consumed capabilities, transport security and the
signed-announcement verdict. --json prints the parsed structure.`,
		Args: argsFor(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.caps(cmd.Context(), args[0], asJSON, jq)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the parsed structure as JSON")
	jq.add(cmd)
	return cmd
}

// capsDoc is the --json document of caps.
type capsDoc struct {
	Target   string `json:"target"`
	Endpoint string `json:"endpoint"`
	// Owner is who serves the socket when it is not the user, root or a
	// trusted user (calls to it are refused).
	Owner *ipc.PeerIdentity `json:"owner,omitempty"`
	*discovery.Description
}

func (a *app) caps(ctx context.Context, arg string, asJSON bool, jq jqFlag) error {
	ctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	// caps only probes (health, identity, capabilities): a socket another
	// user serves is shown, marked with its owner; call refuses it.
	conn, t, owner, err := a.dialProbe(ctx, arg)
	if err != nil {
		return err
	}
	if owner != nil {
		fmt.Fprintln(a.io.err, "primalscope: warning: "+render.Sanitize(t.Name)+": "+render.Sanitize(discovery.OwnerWarning(owner)))
	}
	defer closeConn(ctx, conn) // within the command's deadline (deadline.go)
	d, err := discovery.DescribePool(ctx, conn, t.Pool)
	if err != nil {
		return fmt.Errorf("%s: %w", t.Name, err)
	}
	if jq.set() {
		return a.emitDoc(ctx, jq, capsDoc{Target: t.Name, Endpoint: t.Endpoint.String(), Owner: owner, Description: d})
	}
	if asJSON {
		return a.encodeJSON(a.io.out, capsDoc{Target: t.Name, Endpoint: t.Endpoint.String(), Owner: owner, Description: d}, true)
	}
	a.printCaps(a.io.out, t, d, conn.Transport(), owner)
	if d.Capabilities == nil {
		return &quietError{code: exitPeer, err: fmt.Errorf("%s: no capabilities", t.Name)}
	}
	return nil
}

// printCaps prints a description; session is what the connection put on
// the wire ("unix+btsp(chacha20-poly1305 negotiated)"), shown for BTSP
// sessions and cleartext sent on purpose; owner, when set, is the other
// local user who serves the socket.
func (a *app) printCaps(w io.Writer, t target, d *discovery.Description, session string, owner *ipc.PeerIdentity) {
	s := render.Sanitize
	caps := d.Capabilities
	var head []string
	name, version := "", ""
	if caps != nil {
		name, version = caps.Primal, caps.Version
	}
	if d.Identity != nil {
		if name == "" {
			name = d.Identity.Primal
		}
		if version == "" {
			version = d.Identity.Version
		}
	}
	if name == "" {
		name = t.Name
	}
	head = append(head, s(name)+" "+s(version))
	if d.Identity != nil && d.Identity.Domain != "" {
		head = append(head, s(d.Identity.Domain))
	}
	if caps != nil {
		head = append(head, "format "+string(caps.Format))
		switch caps.Signature.State {
		case capability.Verified:
			head = append(head, "signed ✓")
		case capability.Invalid:
			head = append(head, "SIGNATURE INVALID ("+s(caps.Signature.Reason)+")")
		}
		if ts := caps.TransportSecurity; ts != nil && ts.BTSPRequired != nil && *ts.BTSPRequired {
			head = append(head, "BTSP required")
		}
	}
	fmt.Fprintln(w, strings.Join(head, " · "))
	fmt.Fprintf(w, "endpoint  %s\n", s(t.Endpoint.String()))
	if owner != nil {
		fmt.Fprintf(w, "owner     %s — not you: calls are refused unless you trust that user (--trust-uid)\n", s(owner.Owner()))
	}
	if strings.Contains(session, "+btsp(") || strings.Contains(session, "CLEARTEXT") {
		fmt.Fprintf(w, "session   %s\n", s(session))
	}
	if d.Health != nil {
		state := "not alive"
		if d.Health.Alive {
			state = "alive"
		}
		if d.Health.Status != "" && d.Health.Status != state {
			state += " (" + s(d.Health.Status) + ")"
		}
		fmt.Fprintf(w, "health    %s · %s\n", state, human.Duration(d.HealthLatency))
	}
	if d.Identity != nil {
		id := d.Identity
		parts := []string{"via " + id.Method}
		if id.License != "" {
			parts = append(parts, "license "+s(id.License))
		}
		if id.FamilyID != "" {
			parts = append(parts, "family "+s(id.FamilyID))
		}
		fmt.Fprintf(w, "identity  %s\n", strings.Join(parts, " · "))
	}
	if caps != nil {
		var meta []string
		if caps.Protocol != "" {
			meta = append(meta, "protocol "+s(caps.Protocol))
		}
		if len(caps.Transport) > 0 {
			meta = append(meta, "transport "+s(strings.Join(caps.Transport, ",")))
		}
		if len(meta) > 0 {
			fmt.Fprintf(w, "wire      %s\n", strings.Join(meta, " · "))
		}
		if ts := caps.TransportSecurity; ts != nil {
			fmt.Fprintf(w, "security  %s\n", transportSecurity(ts))
		}
	}
	for step, msg := range sortedMap(d.Errors) {
		fmt.Fprintf(w, "%-9s %s\n", step, "failed: "+s(msg))
	}
	if caps == nil {
		return
	}
	fmt.Fprintln(w)
	width := 0
	for _, dom := range d.Tree {
		for _, m := range dom.Methods {
			if n := len(m.Short); n > width {
				width = n
			}
		}
	}
	if width > 40 {
		width = 40
	}
	for _, dom := range d.Tree {
		line := fmt.Sprintf("▾ %s (%d)", s(dom.Name), len(dom.Methods))
		if dom.Description != "" {
			line += "  " + s(dom.Description)
		}
		fmt.Fprintln(w, line)
		for _, m := range dom.Methods {
			var notes []string
			if m.Cost != nil {
				notes = append(notes, m.Cost.Summary())
			}
			if len(m.Prerequisites) > 0 {
				notes = append(notes, "after "+s(strings.Join(m.Prerequisites, ", ")))
			}
			if m.Description != "" {
				notes = append(notes, s(m.Description))
			}
			fmt.Fprintf(w, "    %-*s  %s\n", width, s(m.Short), strings.Join(notes, " · "))
		}
	}
	if len(caps.Consumed) > 0 {
		fmt.Fprintf(w, "\nconsumes  %s\n", s(strings.Join(caps.Consumed, ", ")))
	}
	for _, warn := range caps.Warnings {
		fmt.Fprintf(w, "warning   %s\n", s(warn))
	}
}

func transportSecurity(ts *capability.TransportSecurity) string {
	var p []string
	b := func(name string, v *bool) {
		if v != nil {
			p = append(p, fmt.Sprintf("%s=%t", name, *v))
		}
	}
	b("btsp_required", ts.BTSPRequired)
	b("cleartext_available", ts.CleartextAvailable)
	b("btsp_server_available", ts.BTSPServerAvailable)
	if ts.BTSPVersion != "" {
		p = append(p, "btsp "+render.Sanitize(ts.BTSPVersion))
	}
	if ts.Note != "" {
		p = append(p, "“"+render.Sanitize(ts.Note)+"”")
	}
	return strings.Join(p, " · ")
}

// sortedMap iterates a string map in key order.
func sortedMap(m map[string]string) func(func(string, string) bool) {
	return func(yield func(string, string) bool) {
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if !yield(k, m[k]) {
				return
			}
		}
	}
}
