// What a one-shot call reads of the config file (the [history] section,
// the users trusted to serve sockets, the families' seed files), kept
// beside the cache so that a call does not parse the whole file (its
// targets, buses, keys) for the few settings it needs.

package config

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/ecoPrimals/primalscope/internal/paths"
	"github.com/ecoPrimals/primalscope/internal/readfile"
)

// HistoryCacheName is the file, in the cache directory, that keeps the
// call settings (CallSettings) of the last config file read whole without
// a warning.
const HistoryCacheName = "config-history"

// CallSettings is what a one-shot call reads of the config file: the
// [history] section, discovery.trust_uids, and the seed file of each
// family [families.<id>] names (as Config.SeedFile resolves it).
type CallSettings struct {
	History   History
	TrustUIDs Users
	SeedFiles map[string]string
}

// CallSettingsOf returns c's call settings.
func CallSettingsOf(c *Config) CallSettings {
	s := CallSettings{History: c.History, TrustUIDs: c.Discovery.TrustUIDs}
	for id := range c.Families {
		if s.SeedFiles == nil {
			s.SeedFiles = map[string]string{}
		}
		s.SeedFiles[id] = c.SeedFile(id)
	}
	return s
}

func callSettingsEqual(a, b CallSettings) bool {
	if !historyEqual(a.History, b.History) || len(a.TrustUIDs) != len(b.TrustUIDs) || len(a.SeedFiles) != len(b.SeedFiles) {
		return false
	}
	for i := range a.TrustUIDs {
		if a.TrustUIDs[i] != b.TrustUIDs[i] {
			return false
		}
	}
	for id, f := range a.SeedFiles {
		if g, ok := b.SeedFiles[id]; !ok || g != f {
			return false
		}
	}
	return true
}

// maxHistoryCache bounds the cache file read.
const maxHistoryCache = 64 << 10

// fileID identifies one version of a file: a write changes its change time
// (which no program can set back), a replacement its inode.
type fileID struct {
	Path  string
	Dev   uint64
	Ino   uint64
	Size  int64
	Mtime int64
	Ctime int64
}

// The cache file is lines of text, written and read without reflection (a
// call reads it before dialling; encoding/json's first use costs more than
// the rest of the read): the file's identity, then the settings, each
// value on its own line, in this order:
//
//	primalscope config-history 2
//	PATH (quoted as by strconv.Quote)
//	DEV INO SIZE MTIME_NS CTIME_NS
//	ENABLED (-, true or false) MAX_ROWS MAX_BYTES ENTRY_LIMIT
//	HISTORY_PATH (quoted)
//	TRUST_UIDS (each quoted, space-separated; the line may be empty)
//	FAMILY_ID SEED_FILE (both quoted), a line a family (none or more)
const historyCacheMagic = "primalscope config-history 2"

// maxCachedFamilies bounds the families a cache file may name.
const maxCachedFamilies = 256

func encodeHistoryCache(id fileID, cs CallSettings) []byte {
	h := cs.History
	enabled := "-"
	if h.Enabled != nil {
		enabled = strconv.FormatBool(*h.Enabled)
	}
	b := fmt.Appendf(nil, "%s\n%s\n%d %d %d %d %d\n%s %d %d %d\n%s\n", historyCacheMagic,
		strconv.Quote(id.Path), id.Dev, id.Ino, id.Size, id.Mtime, id.Ctime,
		enabled, h.MaxRows, int64(h.MaxBytes), int64(h.EntryLimit), strconv.Quote(h.Path))
	for i, u := range cs.TrustUIDs {
		if i > 0 {
			b = append(b, ' ')
		}
		b = strconv.AppendQuote(b, u)
	}
	b = append(b, '\n')
	ids := make([]string, 0, len(cs.SeedFiles))
	for id := range cs.SeedFiles {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, fid := range ids {
		b = strconv.AppendQuote(b, fid)
		b = append(b, ' ')
		b = strconv.AppendQuote(b, cs.SeedFiles[fid])
		b = append(b, '\n')
	}
	return b
}

// unquoteFields reads a line of strconv.Quote'd strings separated by one
// space.
func unquoteFields(line string) ([]string, bool) {
	var out []string
	for line != "" {
		q, err := strconv.QuotedPrefix(line)
		if err != nil {
			return nil, false
		}
		v, err := strconv.Unquote(q)
		if err != nil {
			return nil, false
		}
		out = append(out, v)
		line = line[len(q):]
		if line != "" {
			if line[0] != ' ' || len(line) == 1 {
				return nil, false
			}
			line = line[1:]
		}
	}
	return out, true
}

func decodeHistoryCache(b []byte) (fileID, CallSettings, bool) {
	var id fileID
	var cs CallSettings
	var h History
	lines := strings.Split(string(b), "\n")
	if len(lines) < 7 || len(lines) > 7+maxCachedFamilies || lines[0] != historyCacheMagic || lines[len(lines)-1] != "" {
		return id, cs, false
	}
	trust, ok := unquoteFields(lines[5])
	if !ok {
		return id, cs, false
	}
	for _, l := range lines[6 : len(lines)-1] {
		f, ok := unquoteFields(l)
		if !ok || len(f) != 2 {
			return id, cs, false
		}
		if cs.SeedFiles == nil {
			cs.SeedFiles = map[string]string{}
		}
		cs.SeedFiles[f[0]] = f[1]
	}
	if len(trust) > 0 {
		cs.TrustUIDs = trust
	}
	var err error
	if id.Path, err = strconv.Unquote(lines[1]); err != nil {
		return id, cs, false
	}
	nums := strings.Fields(lines[2])
	hist := strings.Fields(lines[3])
	if len(nums) != 5 || len(hist) != 4 {
		return id, cs, false
	}
	var v [8]int64
	for i, f := range append(nums, hist[1:]...) {
		if v[i], err = strconv.ParseInt(f, 10, 64); err != nil {
			return id, cs, false
		}
	}
	id.Dev, id.Ino, id.Size, id.Mtime, id.Ctime = uint64(v[0]), uint64(v[1]), v[2], v[3], v[4]
	h.MaxRows, h.MaxBytes, h.EntryLimit = v[5], Size(v[6]), Size(v[7])
	switch hist[0] {
	case "true", "false":
		on := hist[0] == "true"
		h.Enabled = &on
	case "-":
	default:
		return id, cs, false
	}
	if h.Path, err = strconv.Unquote(lines[4]); err != nil {
		return id, cs, false
	}
	cs.History = h
	return id, cs, true
}

// idOf returns the identity of the file at path (followed, as Load reads it).
func idOf(path string) (fileID, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileID{}, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || !fi.Mode().IsRegular() {
		return fileID{}, fmt.Errorf("%s: %w", path, readfile.ErrNotRegular)
	}
	return fileID{Path: path, Dev: uint64(st.Dev), Ino: st.Ino, Size: fi.Size(),
		Mtime: fi.ModTime().UnixNano(), Ctime: st.Ctim.Sec*1e9 + st.Ctim.Nsec}, nil
}

// HistoryDefault returns the [history] section of the config file as
// CallDefault does.
func HistoryDefault(getenv func(string) string) (h History, ok bool) {
	cs, ok := CallDefault(getenv)
	return cs.History, ok
}

// CallDefault returns the call settings of the config file where it lives
// (paths.ConfigFile) without parsing the file when it can: when there is
// no file (no settings), or when the cache (HistoryCacheName) holds the
// settings of this very version of the file, read whole earlier without
// an error or a warning. ok is false otherwise: the caller then loads the
// file whole (LoadDefault), which says its errors and warnings, and calls
// SaveHistoryCache. The cost is a stat and a read of a small file,
// whatever the size of the config file.
func CallDefault(getenv func(string) string) (cs CallSettings, ok bool) {
	path := paths.ConfigFile(getenv)
	if path == "" {
		return CallSettings{}, true
	}
	id, err := idOf(path)
	if errors.Is(err, fs.ErrNotExist) {
		return CallSettings{}, true
	}
	if err != nil {
		return CallSettings{}, false
	}
	cache := paths.CacheDir(getenv)
	if cache == "" {
		return CallSettings{}, false
	}
	b, err := readfile.Regular(filepath.Join(cache, HistoryCacheName), maxHistoryCache)
	if err != nil {
		return CallSettings{}, false
	}
	cid, cs, ok := decodeHistoryCache(b)
	if !ok || cid != id {
		return CallSettings{}, false
	}
	return cs, true
}

// SaveHistoryCache keeps c's call settings for CallDefault, when c
// was read from the config file where it lives, without a warning, and the
// cache does not hold it already. A failure is ignored: the next call
// parses the file again.
func SaveHistoryCache(getenv func(string) string, c *Config) {
	path := paths.ConfigFile(getenv)
	cache := paths.CacheDir(getenv)
	if c == nil || path == "" || cache == "" || c.Path != path || len(c.Warnings()) > 0 {
		return
	}
	id, err := idOf(path)
	if err != nil {
		return
	}
	cs := CallSettingsOf(c)
	if have, ok := CallDefault(getenv); ok && callSettingsEqual(have, cs) {
		return
	}
	b := encodeHistoryCache(id, cs)
	if os.MkdirAll(cache, 0o700) != nil {
		return
	}
	tmp := filepath.Join(cache, fmt.Sprintf(".%s-%08x", HistoryCacheName, rand.Uint32()))
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		os.Remove(tmp)
		return
	}
	if os.Rename(tmp, filepath.Join(cache, HistoryCacheName)) != nil {
		os.Remove(tmp)
	}
}

func historyEqual(a, b History) bool {
	return a.On() == b.On() && (a.Enabled == nil) == (b.Enabled == nil) && a.Path == b.Path &&
		a.MaxRows == b.MaxRows && a.MaxBytes == b.MaxBytes && a.EntryLimit == b.EntryLimit
}
