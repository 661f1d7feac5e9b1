package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHistoryCache: the [history] section is taken from the cache only for
// the very version of the file it was read from, whole and without a
// warning; any change to the file (even one that keeps its size and its
// modification time) is read again.
func TestHistoryCache(t *testing.T) {
	home := t.TempDir()
	getenv := func(k string) string { return map[string]string{"HOME": home}[k] }
	if h, ok := HistoryDefault(getenv); !ok || !h.On() {
		t.Fatalf("no config file: %+v %v", h, ok)
	}
	path := filepath.Join(home, ".config", "primalscope", "config.toml")
	os.MkdirAll(filepath.Dir(path), 0o700)
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("[history]\nenabled = false\nmax_rows = 10\n")
	if _, ok := HistoryDefault(getenv); ok {
		t.Fatal("a config file never read whole was taken from a cache")
	}
	c, err := LoadDefault(getenv)
	if err != nil {
		t.Fatal(err)
	}
	SaveHistoryCache(getenv, c)
	h, ok := HistoryDefault(getenv)
	if !ok || h.On() || h.MaxRows != 10 {
		t.Fatalf("cached: %+v %v", h, ok)
	}
	// Same size, same modification time, other content.
	fi, _ := os.Stat(path)
	write("[history]\nenabled = true \nmax_rows = 10\n")
	os.Chtimes(path, fi.ModTime(), fi.ModTime())
	if _, ok := HistoryDefault(getenv); ok {
		t.Fatal("a changed config file was taken from the cache")
	}
	// A file with a warning is not cached: every command reads it whole
	// and says the warning.
	write("[history]\nenabled = false\n[nonsense]\nx = 1\n")
	c, err = LoadDefault(getenv)
	if err != nil || len(c.Warnings()) == 0 {
		t.Fatalf("%+v %v", c, err)
	}
	SaveHistoryCache(getenv, c)
	if _, ok := HistoryDefault(getenv); ok {
		t.Fatal("a config file with a warning was cached")
	}
}

// TestHistoryCacheFormat: what is written reads back the same, a path with
// any bytes included; anything else is not taken.
func TestHistoryCacheFormat(t *testing.T) {
	off := false
	for _, h := range []History{{}, {Enabled: &off, Path: "/a b/\"q\"\n\x1b[31m.db", MaxRows: 7, MaxBytes: 1 << 20, EntryLimit: 4096}} {
		id := fileID{Path: "/c/config.toml\n", Dev: 1, Ino: 2, Size: 3, Mtime: -4, Ctime: 5}
		gid, gcs, ok := decodeHistoryCache(encodeHistoryCache(id, CallSettings{History: h}))
		gh := gcs.History
		if !ok || gid != id || !historyEqual(gh, h) || gh.Path != h.Path {
			t.Fatalf("%+v %+v %v", gid, gh, ok)
		}
	}
	for _, bad := range []string{"", "{}", historyCacheMagic + "\n\"/c\"\n1 2 3 4\n- 0 0 0\n\"\"\n", historyCacheMagic + "\n\"/c\"\n1 2 3 4 5\nmaybe 0 0 0\n\"\"\n"} {
		if _, _, ok := decodeHistoryCache([]byte(bad)); ok {
			t.Errorf("%q taken", bad)
		}
	}
}

// TestCallCacheKeepsTrustAndSeeds: the users trusted to serve sockets and
// the families' seed files are kept with [history], read back the same
// (any bytes in a path), and a cache with a malformed line is not taken.
func TestCallCacheKeepsTrustAndSeeds(t *testing.T) {
	id := fileID{Path: "/c/config.toml", Dev: 1, Ino: 2, Size: 3, Mtime: 4, Ctime: 5}
	cs := CallSettings{TrustUIDs: Users{"1001", "ada lovelace", "\"q\""},
		SeedFiles: map[string]string{"eastgate": "/k/east seed\n", "west\x1b": "/k/w"}}
	gid, got, ok := decodeHistoryCache(encodeHistoryCache(id, cs))
	if !ok || gid != id || !callSettingsEqual(got, cs) {
		t.Fatalf("read back %+v %v, want %+v", got, ok, cs)
	}
	if _, got, ok := decodeHistoryCache(encodeHistoryCache(id, CallSettings{})); !ok || len(got.TrustUIDs) != 0 || len(got.SeedFiles) != 0 {
		t.Fatalf("empty settings read back as %+v %v", got, ok)
	}
	enc := string(encodeHistoryCache(id, cs))
	for _, bad := range []string{
		strings.Replace(enc, `"eastgate" `, `"eastgate"`, 1),
		strings.Replace(enc, `"1001" `, `1001 `, 1),
		strings.Replace(enc, "config-history 2", "config-history 1", 1),
	} {
		if _, _, ok := decodeHistoryCache([]byte(bad)); ok {
			t.Errorf("taken: %q", bad)
		}
	}
}

// TestCallDefaultFromAWholeRead: once the file was read whole, a call's
// settings (trust_uids, families' seed files resolved beside the file)
// come from the cache, equal to the file's; a big config file of targets
// costs a call no parse.
func TestCallDefaultFromAWholeRead(t *testing.T) {
	home := t.TempDir()
	getenv := func(k string) string { return map[string]string{"HOME": home}[k] }
	path := filepath.Join(home, ".config", "primalscope", "config.toml")
	os.MkdirAll(filepath.Dir(path), 0o700)
	var b strings.Builder
	b.WriteString("[discovery]\ntrust_uids = [1001, \"ada\"]\n[families.eastgate]\nseed_file = \"east.seed\"\n")
	for i := range 200 {
		fmt.Fprintf(&b, "[[target]]\nname = \"t%d\"\nendpoint = \"/run/t%d.sock\"\n", i, i)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, ok := CallDefault(getenv); ok {
		t.Fatal("settings taken before the file was ever read whole")
	}
	c, err := LoadDefault(getenv)
	if err != nil || len(c.Warnings()) > 0 {
		t.Fatalf("%v %v", err, c.Warnings())
	}
	SaveHistoryCache(getenv, c)
	cs, ok := CallDefault(getenv)
	if !ok || !callSettingsEqual(cs, CallSettingsOf(c)) {
		t.Fatalf("cached %+v %v, want %+v", cs, ok, CallSettingsOf(c))
	}
	if cs.SeedFiles["eastgate"] != filepath.Join(filepath.Dir(path), "east.seed") || len(cs.TrustUIDs) != 2 {
		t.Fatalf("settings %+v", cs)
	}
}
