// The [history] section of the config file, kept beside the cache so that a
// one-shot call does not parse the whole file (its targets, buses, keys)
// for the few settings it needs.

package config

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/ecoPrimals/primalscope/internal/paths"
	"github.com/ecoPrimals/primalscope/internal/readfile"
)

// HistoryCacheName is the file, in the cache directory, that keeps the
// [history] section of the last config file read whole without a warning.
const HistoryCacheName = "config-history"

// maxHistoryCache bounds the cache file read.
const maxHistoryCache = 16 << 10

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
// the rest of the read): the file's identity, then the section, each value
// on its own line, in this order:
//
//	primalscope config-history 1
//	PATH (quoted as by strconv.Quote)
//	DEV INO SIZE MTIME_NS CTIME_NS
//	ENABLED (-, true or false) MAX_ROWS MAX_BYTES ENTRY_LIMIT
//	HISTORY_PATH (quoted)
const historyCacheMagic = "primalscope config-history 1"

func encodeHistoryCache(id fileID, h History) []byte {
	enabled := "-"
	if h.Enabled != nil {
		enabled = strconv.FormatBool(*h.Enabled)
	}
	return fmt.Appendf(nil, "%s\n%s\n%d %d %d %d %d\n%s %d %d %d\n%s\n", historyCacheMagic,
		strconv.Quote(id.Path), id.Dev, id.Ino, id.Size, id.Mtime, id.Ctime,
		enabled, h.MaxRows, int64(h.MaxBytes), int64(h.EntryLimit), strconv.Quote(h.Path))
}

func decodeHistoryCache(b []byte) (fileID, History, bool) {
	var id fileID
	var h History
	lines := strings.Split(string(b), "\n")
	if len(lines) != 6 || lines[0] != historyCacheMagic || lines[5] != "" {
		return id, h, false
	}
	var err error
	if id.Path, err = strconv.Unquote(lines[1]); err != nil {
		return id, h, false
	}
	nums := strings.Fields(lines[2])
	hist := strings.Fields(lines[3])
	if len(nums) != 5 || len(hist) != 4 {
		return id, h, false
	}
	var v [8]int64
	for i, f := range append(nums, hist[1:]...) {
		if v[i], err = strconv.ParseInt(f, 10, 64); err != nil {
			return id, h, false
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
		return id, h, false
	}
	if h.Path, err = strconv.Unquote(lines[4]); err != nil {
		return id, h, false
	}
	return id, h, true
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

// HistoryDefault returns the [history] section of the config file where it
// lives (paths.ConfigFile) without parsing the file when it can: when there
// is no file (the empty section), or when the cache (HistoryCacheName)
// holds the section of this very version of the file, read whole earlier
// without an error or a warning. ok is false otherwise: the caller then
// loads the file whole (LoadDefault), which says its errors and warnings,
// and calls SaveHistoryCache. The cost is a stat and a read of a small file,
// whatever the size of the config file.
func HistoryDefault(getenv func(string) string) (h History, ok bool) {
	path := paths.ConfigFile(getenv)
	if path == "" {
		return History{}, true
	}
	id, err := idOf(path)
	if errors.Is(err, fs.ErrNotExist) {
		return History{}, true
	}
	if err != nil {
		return History{}, false
	}
	cache := paths.CacheDir(getenv)
	if cache == "" {
		return History{}, false
	}
	b, err := readfile.Regular(filepath.Join(cache, HistoryCacheName), maxHistoryCache)
	if err != nil {
		return History{}, false
	}
	cid, h, ok := decodeHistoryCache(b)
	if !ok || cid != id {
		return History{}, false
	}
	return h, true
}

// SaveHistoryCache keeps c's [history] section for HistoryDefault, when c
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
	if h, ok := HistoryDefault(getenv); ok && historyEqual(h, c.History) {
		return
	}
	b := encodeHistoryCache(id, c.History)
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
