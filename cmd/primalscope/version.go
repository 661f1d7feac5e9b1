package main

import (
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// buildVersion says which build this is: what `--version` and
// `primalscope version --json` print.
type buildVersion struct {
	// Version is the module version ("v1.2.3", a pseudo-version), or
	// "(devel)" for a build from a source tree.
	Version string `json:"version"`
	// Commit is the VCS revision, "" when the build did not record it
	// (go build -buildvcs=false, a build outside a checkout).
	Commit string `json:"commit,omitempty"`
	// Modified is true when the checkout had uncommitted changes.
	Modified bool `json:"modified,omitempty"`
	// Date is the commit's time (vcs.time, RFC 3339): builds are
	// reproducible, so the commit's date stands for the build's.
	Date      string `json:"date,omitempty"`
	GoVersion string `json:"go"`
	Platform  string `json:"platform"`
	Module    string `json:"module,omitempty"`
	// Static is true when the binary was built with CGO_ENABLED=0: linked
	// statically, no C library loaded at start (what README installs). nil
	// when the build did not record it.
	Static *bool `json:"static,omitempty"`
}

// readVersion reads the running binary's build information.
func readVersion() buildVersion {
	bi, ok := debug.ReadBuildInfo()
	return versionFrom(bi, ok)
}

// versionFrom turns build information into a buildVersion; missing pieces
// are said as such, never invented.
func versionFrom(bi *debug.BuildInfo, ok bool) buildVersion {
	v := buildVersion{Version: "unknown", GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if !ok || bi == nil {
		return v
	}
	if bi.GoVersion != "" {
		v.GoVersion = bi.GoVersion
	}
	v.Module = bi.Main.Path
	if bi.Main.Version != "" {
		v.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Commit = s.Value
		case "vcs.time":
			v.Date = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		case "CGO_ENABLED":
			static := s.Value == "0"
			v.Static = &static
		case "GOOS":
			v.Platform = s.Value + v.Platform[strings.IndexByte(v.Platform, '/'):]
		case "GOARCH":
			v.Platform = v.Platform[:strings.IndexByte(v.Platform, '/')+1] + s.Value
		}
	}
	return v
}

// String is the one line of `--version`.
func (v buildVersion) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "primalscope %s", v.Version)
	if v.Commit != "" {
		c := v.Commit
		if len(c) > 12 {
			c = c[:12]
		}
		b.WriteString(" (commit " + c)
		if v.Modified {
			b.WriteString(", modified")
		}
		if v.Date != "" {
			b.WriteString(", " + v.Date)
		}
		b.WriteString(")")
	} else if v.Version == "(devel)" || v.Version == "unknown" {
		b.WriteString(" (commit unknown: built without VCS information)")
	}
	fmt.Fprintf(&b, " %s %s", v.GoVersion, v.Platform)
	if v.Static != nil {
		if *v.Static {
			b.WriteString(" static (CGO_ENABLED=0)")
		} else {
			b.WriteString(" dynamic (CGO_ENABLED=1)")
		}
	}
	return b.String()
}

// versionFlag turns on cobra's --version on root with our one line.
func versionFlag(root *cobra.Command) {
	v := readVersion()
	root.Version = v.Version
	root.SetVersionTemplate(strings.ReplaceAll(v.String(), "{{", "{{`{{`}}") + "\n")
}

func (a *app) versionCmd() *cobra.Command {
	var (
		asJSON bool
		jq     jqFlag
	)
	cmd := &cobra.Command{
		Use:   "version [--json]",
		Short: "Say which build this is: version, commit, date, Go version, static or not",
		Long: `Print the module version, the VCS commit and its date (the build's date:
builds are reproducible), whether the checkout had changes, the Go version
and platform, and whether the binary is static (built with CGO_ENABLED=0,
as README installs it: it starts faster, loading no C library) or dynamic,
from the binary's own build information. A build from a source tree says
"(devel)"; one without VCS information says so.`,
		Example: `  primalscope version
  primalscope --version
  primalscope version --json
  primalscope version --jq .commit`,
		Args: argsFor(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := readVersion()
			if !asJSON && !jq.set() {
				_, err := fmt.Fprintln(a.io.out, v.String())
				return err
			}
			b, err := json.Marshal(v)
			if err != nil {
				return err
			}
			return a.emitJSON(cmd.Context(), a.io.out, jq, b, false)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	jq.add(cmd)
	return cmd
}
