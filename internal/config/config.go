// Package config reads primalscope's user configuration file,
// $XDG_CONFIG_HOME/primalscope/config.toml (~/.config/primalscope/config.toml
// when XDG_CONFIG_HOME is unset).
//
// The file is TOML. Each concern owns one section; sections this version does
// not know are kept aside (see Config.Unknown) rather than rejected, so an
// older primalscope reads a newer file. To add a section, add a field with a
// toml tag to Config and a Validate step if it needs one.
//
//	[discovery]
//	socket_dirs   = ["/run/user/1000/biomeos"]
//	family        = "westgate-tower-155f"
//	stale_timeout = "2s"
//	known_primals = ["myprimal"]
//
//	[[target]]
//	name     = "tower-songbird"
//	endpoint = "tcp://10.0.0.5:9200"
//
//	[[target]]
//	name     = "holon"
//	endpoint = "ws://127.0.0.1:8080/rpc"
//	wire     = "holon"
//
//	[[bus]]
//	name   = "agents"
//	config = "/etc/stdiobus/agents.json"   # its pools become targets
//	unix   = "/run/stdiobus/agents.sock"   # where the daemon listens
//
//	[[bus]]
//	name    = "local-agents"
//	command = "stdio_bus --config agents.json --stdio"
package config

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/BurntSushi/toml"
)

// MaxFileSize bounds the configuration file; a larger one is refused.
const MaxFileSize = 1 << 20

// Limits on how many entries are kept from the file.
const (
	MaxTargets = 1024
	MaxBuses   = 256
)

// Config is the whole configuration file. The zero value is a valid,
// empty configuration.
type Config struct {
	Discovery Discovery `toml:"discovery" json:"discovery"`
	// Targets are extra endpoints to list and probe, with names.
	Targets []Target `toml:"target" json:"targets,omitempty"`
	// Buses are stdio Bus daemons or commands to list.
	Buses []Bus `toml:"bus" json:"buses,omitempty"`

	// Path is the file this configuration was read from ("" when none).
	Path string `toml:"-" json:"path,omitempty"`
	// Unknown lists keys in the file that this version does not read
	// (for a warning; they are not an error).
	Unknown []string `toml:"-" json:"unknown,omitempty"`
}

// Discovery configures where and how primalscope looks for targets.
type Discovery struct {
	// SocketDirs are searched in addition to the standard directories.
	SocketDirs []string `toml:"socket_dirs" json:"socket_dirs,omitempty"`
	// Family is the preferred family id (like --family or $FAMILY_ID).
	Family string `toml:"family" json:"family,omitempty"`
	// StaleTimeout is how long health.liveness may take before a target is
	// stale ("2s"; 0 means the default).
	StaleTimeout Duration `toml:"stale_timeout" json:"stale_timeout,omitempty"`
	// KnownPrimals extends the primal names used to split family-scoped
	// socket names (<primal>-<family>.sock).
	KnownPrimals []string `toml:"known_primals" json:"known_primals,omitempty"`
	// NoProc turns off finding stdio Bus daemons in the process table.
	NoProc bool `toml:"no_proc" json:"no_proc,omitempty"`
}

// Target is a named extra endpoint.
type Target struct {
	Name string `toml:"name" json:"name"`
	// Endpoint is any TARGET form ipc.ParseEndpoint reads: a path,
	// unix://, tcp://, host:port, ws://, wss://, stdio:"cmd", @abstract.
	Endpoint string `toml:"endpoint" json:"endpoint"`
	// Wire is "auto", "jsonrpc", "lean" or "holon" ("" means auto).
	Wire string `toml:"wire" json:"wire,omitempty"`
	// Pool is the stdio Bus pool to address, if the endpoint is a bus.
	Pool string `toml:"pool" json:"pool,omitempty"`
	// Aliases are other names for the same target.
	Aliases []string `toml:"aliases" json:"aliases,omitempty"`
	// Probe allows probing a stdio command target (spawning it);
	// socket targets are always probed.
	Probe bool `toml:"probe" json:"probe,omitempty"`
}

// Bus is a stdio Bus the user names: either a daemon listening on a socket
// (Unix or TCP) or a command that speaks the bus on its stdio.
type Bus struct {
	Name string `toml:"name" json:"name"`
	// Config is the bus's JSON config; each of its pools becomes a target.
	Config string `toml:"config" json:"config,omitempty"`
	// Unix and TCP say where the daemon listens.
	Unix string `toml:"unix" json:"unix,omitempty"`
	TCP  string `toml:"tcp" json:"tcp,omitempty"`
	// Command starts the bus in --stdio mode (a stdio:"..." target).
	Command string `toml:"command" json:"command,omitempty"`
	// Pools names pools when there is no config file to read them from.
	Pools []string `toml:"pools" json:"pools,omitempty"`
}

// Duration is a time.Duration written as text in TOML ("1.5s", "300ms").
type Duration time.Duration

// UnmarshalText reads a duration such as "2s".
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(strings.TrimSpace(string(b)))
	if err != nil {
		return err
	}
	if v < 0 {
		return fmt.Errorf("negative duration %s", v)
	}
	*d = Duration(v)
	return nil
}

// MarshalText writes the duration as text.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// DefaultPath returns where the configuration file lives:
// $XDG_CONFIG_HOME/primalscope/config.toml, else
// $HOME/.config/primalscope/config.toml; "" when neither is set.
func DefaultPath(getenv func(string) string) string {
	if d := getenv("XDG_CONFIG_HOME"); d != "" {
		return filepath.Join(d, "primalscope", "config.toml")
	}
	if h := getenv("HOME"); h != "" {
		return filepath.Join(h, ".config", "primalscope", "config.toml")
	}
	return ""
}

// Load reads the configuration file at path. A missing file is not an
// error: it yields an empty Config.
func Load(path string) (*Config, error) {
	if path == "" {
		return &Config{}, nil
	}
	// Non-blocking: a named pipe in place of the file must not hang startup.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if errors.Is(err, os.ErrNotExist) {
		return &Config{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("config %s: not a regular file", path)
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("read config %s: %w", path, err)
	}
	if len(b) > MaxFileSize {
		return nil, fmt.Errorf("config %s: larger than %d bytes", path, MaxFileSize)
	}
	c, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	c.Path = path
	return c, nil
}

// Parse reads a configuration from TOML text and checks it.
func Parse(b []byte) (*Config, error) {
	if len(b) > MaxFileSize {
		return nil, fmt.Errorf("larger than %d bytes", MaxFileSize)
	}
	var c Config
	md, err := toml.Decode(string(b), &c)
	if err != nil {
		return nil, err
	}
	for _, k := range md.Undecoded() {
		c.Unknown = append(c.Unknown, k.String())
		if len(c.Unknown) >= 64 {
			break
		}
	}
	sort.Strings(c.Unknown)
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &c, nil
}

// Validate checks the values that have rules: every target has a name and
// an endpoint, every bus a name and somewhere to reach it, and the lists are
// bounded.
func (c *Config) Validate() error {
	if len(c.Targets) > MaxTargets {
		return fmt.Errorf("%d targets; at most %d", len(c.Targets), MaxTargets)
	}
	if len(c.Buses) > MaxBuses {
		return fmt.Errorf("%d buses; at most %d", len(c.Buses), MaxBuses)
	}
	for i, t := range c.Targets {
		if strings.TrimSpace(t.Name) == "" {
			return fmt.Errorf("target %d: no name", i+1)
		}
		if strings.TrimSpace(t.Endpoint) == "" {
			return fmt.Errorf("target %q: no endpoint", t.Name)
		}
		switch t.Wire {
		case "", "auto", "jsonrpc", "lean", "holon":
		default:
			return fmt.Errorf("target %q: unknown wire %q (auto, jsonrpc, lean or holon)", t.Name, t.Wire)
		}
	}
	for i, b := range c.Buses {
		if strings.TrimSpace(b.Name) == "" {
			return fmt.Errorf("bus %d: no name", i+1)
		}
		if b.Unix == "" && b.TCP == "" && b.Command == "" {
			return fmt.Errorf("bus %q: needs unix, tcp or command", b.Name)
		}
	}
	return nil
}
