// Package config reads primalscope's user configuration file,
// $XDG_CONFIG_HOME/primalscope/config.toml (~/.config/primalscope/config.toml
// when XDG_CONFIG_HOME is unset or relative; see internal/paths). It is the
// one reader of that file: the CLI loads it once and hands each consumer its
// section (discovery, the TUI's [keys], the history's [history]).
//
// The file is TOML. Each concern owns one section. Sections and keys this
// version does not know are not an error, so an older primalscope reads a
// newer file, but they are not silently ignored either: they are listed in
// Config.Unknown and Config.Warnings says them (with the nearest known name,
// for a misspelling). To add a section, add a field with a toml tag to
// Config and a Validate step if it needs one.
//
//	[discovery]
//	socket_dirs   = ["/run/user/1000/biomeos"]
//	family        = "westgate-tower-155f"
//	stale_timeout = "2s"
//	known_primals = ["myprimal"]
//	trust_uids    = [1001, "alice"]  # may serve the sockets primalscope calls
//	federation    = false            # reach other nodes and families registries name
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
//
//	[keys]                       # TUI action = key or [keys]; checked by the TUI
//	quit = ["q", "ctrl+c"]
//	send = "ctrl+g"
//
//	[families.westgate-tower-155f]  # another family's BTSP seed (mode 0600)
//	seed_file = "/home/me/.config/primalscope/westgate.seed"
//
//	[history]
//	enabled     = true           # false: record nothing (like --no-history)
//	path        = "/data/primalscope-history.db"
//	max_rows    = 100000
//	max_bytes   = "512MiB"       # or a number of bytes
//	entry_limit = "4MiB"
package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/ecoPrimals/primalscope/internal/paths"
	"github.com/ecoPrimals/primalscope/internal/readfile"
)

// MaxFileSize bounds the configuration file; a larger one is refused.
const MaxFileSize = 1 << 20

// Limits on how many entries are kept from the file.
const (
	MaxTargets = 1024
	MaxBuses   = 256
	// MaxFamilies bounds the [families.<id>] tables.
	MaxFamilies = 256
	// MaxKeyActions and MaxKeysPerAction bound the [keys] table;
	// MaxKeyName bounds one key name in bytes.
	MaxKeyActions    = 256
	MaxKeysPerAction = 16
	MaxKeyName       = 64
	// maxUnknown bounds how many unknown keys are listed.
	maxUnknown = 64
)

// Config is the whole configuration file. The zero value is a valid,
// empty configuration.
type Config struct {
	Discovery Discovery `toml:"discovery" json:"discovery"`
	// Targets are extra endpoints to list and probe, with names.
	Targets []Target `toml:"target" json:"targets,omitempty"`
	// Buses are stdio Bus daemons or commands to list.
	Buses []Bus `toml:"bus" json:"buses,omitempty"`
	// Keys remaps TUI actions: action name -> key names, as written (a
	// single string is a list of one). The names are checked by the TUI
	// (its KeyMap), not here.
	Keys Keys `toml:"keys" json:"keys,omitempty"`
	// History configures the call history.
	History History `toml:"history" json:"history"`
	// Families gives the BTSP seeds of families other than the user's own
	// ([families.<id>] seed_file = ...), by family id. The user's own
	// family's seed comes from --family-seed-file or $FAMILY_SEED, which
	// win for that family.
	Families map[string]Family `toml:"families" json:"families,omitempty"`

	// Path is the file this configuration was read from ("" when none).
	Path string `toml:"-" json:"path,omitempty"`
	// Unknown lists the keys in the file that this version does not read,
	// dotted ("keymap", "discovery.socket_dir"), sorted; see Warnings.
	Unknown []string `toml:"-" json:"unknown,omitempty"`
}

// Family is a [families.<id>] table: what primalscope knows of a family
// that is not (necessarily) the user's own.
type Family struct {
	// SeedFile holds the family's BTSP seed; it must be readable by its
	// owner only (mode 0600), as --family-seed-file. A relative path is
	// taken from the config file's directory (see SeedFile).
	SeedFile string `toml:"seed_file" json:"seed_file,omitempty"`
}

// SeedFile is where the seed of family id lives, as the config file says
// ("" when it says nothing): a relative seed_file is taken from the config
// file's directory, not from wherever primalscope runs.
func (c *Config) SeedFile(id string) string {
	f := c.Families[id].SeedFile
	if f == "" || filepath.IsAbs(f) || c.Path == "" {
		return f
	}
	return filepath.Join(filepath.Dir(c.Path), f)
}

// Keys is the [keys] table: TUI action name -> key names.
type Keys map[string][]string

// UnmarshalTOML reads the table: each value a key name or a list of them.
func (k *Keys) UnmarshalTOML(v any) error {
	m, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("keys: want a table of action = key or [keys], not %T", v)
	}
	if len(m) > MaxKeyActions {
		return fmt.Errorf("keys: %d actions; at most %d", len(m), MaxKeyActions)
	}
	out := make(Keys, len(m))
	for name, x := range m {
		var ks []string
		switch x := x.(type) {
		case string:
			ks = []string{x}
		case []any:
			if len(x) > MaxKeysPerAction {
				return fmt.Errorf("keys.%s: %d keys; at most %d", name, len(x), MaxKeysPerAction)
			}
			for _, e := range x {
				s, ok := e.(string)
				if !ok {
					return fmt.Errorf("keys.%s: want key names (strings), not %T", name, e)
				}
				ks = append(ks, s)
			}
		default:
			return fmt.Errorf("keys.%s: want a key name or a list of key names, not %T", name, x)
		}
		for _, s := range ks {
			if len(s) > MaxKeyName {
				return fmt.Errorf("keys.%s: key name longer than %d bytes", name, MaxKeyName)
			}
		}
		out[name] = ks
	}
	*k = out
	return nil
}

// History is the [history] section. Zero values mean the history's
// defaults; --history, --no-history and $PRIMALSCOPE_HISTORY win over it.
type History struct {
	// Enabled false records nothing, like --no-history (unset means on).
	Enabled *bool `toml:"enabled" json:"enabled,omitempty"`
	// Path is the history database (default under $XDG_STATE_HOME).
	Path string `toml:"path" json:"path,omitempty"`
	// MaxRows and MaxBytes bound the database; older calls are trimmed.
	MaxRows  int64 `toml:"max_rows" json:"max_rows,omitempty"`
	MaxBytes Size  `toml:"max_bytes" json:"max_bytes,omitempty"`
	// EntryLimit bounds a stored result, error data or params.
	EntryLimit Size `toml:"entry_limit" json:"entry_limit,omitempty"`
}

// On reports whether calls are recorded (Enabled unset or true).
func (h History) On() bool { return h.Enabled == nil || *h.Enabled }

// Size is a size in bytes, written in TOML as a number of bytes or a
// string like "512MiB".
type Size int64

// UnmarshalTOML reads a number of bytes or a size string (see ParseSize).
func (b *Size) UnmarshalTOML(v any) error {
	switch x := v.(type) {
	case int64:
		if x < 0 {
			return fmt.Errorf("negative size %d", x)
		}
		*b = Size(x)
		return nil
	case string:
		n, err := ParseSize(x)
		*b = Size(n)
		return err
	}
	return fmt.Errorf("size must be a number of bytes or a string like \"512MiB\", not %T", v)
}

// ParseSize reads "4096", "4KiB", "512MiB", "1GiB" (KB, MB, GB and K, M, G
// are taken as powers of 1024 too; case does not matter).
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		m      int64
	}{{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"kb", 1 << 10}, {"mb", 1 << 20}, {"gb", 1 << 30}, {"k", 1 << 10}, {"m", 1 << 20}, {"g", 1 << 30}, {"b", 1}} {
		if strings.HasSuffix(strings.ToLower(t), u.suffix) {
			t, mult = strings.TrimSpace(t[:len(t)-len(u.suffix)]), u.m
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 0 || n > (1<<62)/mult {
		return 0, fmt.Errorf("bad size %q", s)
	}
	return n * mult, nil
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
	// TrustUIDs are local users (uids or user names) trusted to serve the
	// Unix sockets primalscope calls, besides the user and root; the CLI's
	// --trust-uid adds to them.
	TrustUIDs Users `toml:"trust_uids" json:"trust_uids,omitempty"`
	// Federation lets discovery reach what registries name on other nodes
	// and of other families (discovery.peers, remote addresses), like
	// --federation.
	Federation bool `toml:"federation" json:"federation,omitempty"`
}

// MaxTrustUIDs bounds discovery.trust_uids.
const MaxTrustUIDs = 64

// Users is a list of users written as uids (numbers) or user names
// (strings), in any mix: trust_uids = [1001, "alice"].
type Users []string

// UnmarshalTOML reads a list of uids and user names (or one of them).
func (u *Users) UnmarshalTOML(v any) error {
	list, ok := v.([]any)
	if !ok {
		list = []any{v}
	}
	if len(list) > MaxTrustUIDs {
		return fmt.Errorf("%d users; at most %d", len(list), MaxTrustUIDs)
	}
	out := make(Users, 0, len(list))
	for _, e := range list {
		switch x := e.(type) {
		case int64:
			if x < 0 || x > 1<<32-1 {
				return fmt.Errorf("uid %d out of range", x)
			}
			out = append(out, strconv.FormatInt(x, 10))
		case string:
			if strings.TrimSpace(x) == "" || len(x) > 256 {
				return fmt.Errorf("user name %q: empty or too long", x)
			}
			out = append(out, strings.TrimSpace(x))
		default:
			return fmt.Errorf("want uids or user names, not %T", e)
		}
	}
	*u = out
	return nil
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

// LoadDefault reads the configuration file where it lives
// (paths.ConfigFile); getenv is os.Getenv in production.
func LoadDefault(getenv func(string) string) (*Config, error) {
	return Load(paths.ConfigFile(getenv))
}

// Load reads the configuration file at path. A missing file is not an
// error: it yields an empty Config. A file that is not a regular file (a
// named pipe, a device, a directory) is refused without reading from it.
func Load(path string) (*Config, error) {
	if path == "" {
		return &Config{}, nil
	}
	// A named pipe in place of the file must not hang startup.
	b, err := readfile.Regular(path, MaxFileSize)
	if errors.Is(err, os.ErrNotExist) {
		return &Config{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
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
	seen := map[string]bool{}
undecoded:
	for _, k := range md.Undecoded() {
		if len(k) > 1 && k[0] == "keys" {
			continue // the table is read whole by Keys.UnmarshalTOML
		}
		for i := 1; i < len(k); i++ {
			if seen[k[:i].String()] {
				continue undecoded // inside an unknown table: that one is said
			}
		}
		seen[k.String()] = true
		c.Unknown = append(c.Unknown, k.String())
		if len(c.Unknown) >= maxUnknown {
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
	if len(c.Families) > MaxFamilies {
		return fmt.Errorf("%d families; at most %d", len(c.Families), MaxFamilies)
	}
	for id, f := range c.Families {
		switch strings.TrimSpace(id) {
		case "", "default":
			return fmt.Errorf("families.%q: not a family id (a family-scoped socket is <primal>-<id>.sock)", id)
		}
		if strings.ContainsAny(id, "/\x00") {
			return fmt.Errorf("families.%q: a family id has no slash", id)
		}
		if strings.TrimSpace(f.SeedFile) == "" {
			return fmt.Errorf("families.%s: no seed_file", id)
		}
	}
	if c.History.MaxRows < 0 {
		return fmt.Errorf("history.max_rows: negative (%d)", c.History.MaxRows)
	}
	if c.History.MaxBytes < 0 || c.History.EntryLimit < 0 {
		return errors.New("history: negative size")
	}
	if len(c.Keys) > MaxKeyActions {
		return fmt.Errorf("keys: %d actions; at most %d", len(c.Keys), MaxKeyActions)
	}
	return nil
}

// Warnings says what in the file this version does not read, one line
// each, naming the nearest known section or key when the name looks
// misspelled: "unknown section [keymap] in /path (ignored; did you mean
// [keys]?)". The CLI writes them on stderr.
func (c *Config) Warnings() []string {
	var out []string
	where := ""
	if c.Path != "" {
		where = " in " + c.Path
	}
	for _, k := range c.Unknown {
		sec, key, nested := strings.Cut(k, ".")
		if !nested {
			w := fmt.Sprintf("unknown section or key %q%s (ignored", sec, where)
			if near := nearest(sec, tomlKeys(reflect.TypeOf(Config{}))); near != "" {
				w += fmt.Sprintf("; did you mean %q?", near)
			}
			out = append(out, w+")")
			continue
		}
		prefix := sec
		if mapSection(sec) {
			// [families.<id>]: the key after the id is the one to match.
			if id, rest, ok := strings.Cut(key, "."); ok {
				prefix, key = sec+"."+id, rest
			}
		}
		w := fmt.Sprintf("unknown key %q%s (ignored", k, where)
		if near := nearest(key, sectionKeys(sec)); near != "" {
			w += fmt.Sprintf("; did you mean %q?", prefix+"."+near)
		}
		out = append(out, w+")")
	}
	return out
}

// tomlKeys lists the toml names of a struct type's fields, for the
// warnings' suggestions: read from the tags, so they cannot drift.
func tomlKeys(t reflect.Type) []string {
	for t.Kind() == reflect.Slice || t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	var out []string
	for i := range t.NumField() {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("toml"), ","); name != "" && name != "-" {
			out = append(out, name)
		}
	}
	return out
}

// sectionKeys lists the keys a known section reads (none for [keys],
// which takes any action name); for a table of tables ([families.<id>])
// the keys each inner table reads.
func sectionKeys(section string) []string {
	t := reflect.TypeOf(Config{})
	for i := range t.NumField() {
		if f := t.Field(i); f.Tag.Get("toml") == section && f.Type != reflect.TypeOf(Keys{}) {
			if f.Type.Kind() == reflect.Map {
				return tomlKeys(f.Type.Elem())
			}
			return tomlKeys(f.Type)
		}
	}
	return nil
}

// mapSection reports whether a section is a table of tables keyed by an
// id of the user's ([families.<id>]).
func mapSection(section string) bool {
	t := reflect.TypeOf(Config{})
	for i := range t.NumField() {
		if f := t.Field(i); f.Tag.Get("toml") == section {
			return f.Type.Kind() == reflect.Map && f.Type != reflect.TypeOf(Keys{})
		}
	}
	return false
}

// nearest is the name in known closest to s, if it is close enough to be
// a misspelling (an edit distance of at most a third of its length, and
// at least 1, or the same first three letters); "" otherwise.
func nearest(s string, known []string) string {
	best, bestD := "", 0
	s = strings.ToLower(s)
	for _, k := range known {
		d := editDistance(s, k)
		near := d <= max(1, len(k)/3) || len(s) >= 3 && len(k) >= 3 && s[:3] == k[:3]
		if near && (best == "" || d < bestD) {
			best, bestD = k, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of two short names (anything
// longer than 64 bytes is far from every known name).
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 1 << 20
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
