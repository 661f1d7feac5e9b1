package ipc

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"hash/fnv"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ecoPrimals/primalscope/internal/statedir"
)

// EndpointFacts is what primalscope learned about reaching one endpoint.
// Facts only: nothing here is secret.
type EndpointFacts struct {
	// Prefix is whether the riboCipher prefix EC 01 worked (true) or was
	// refused (false); nil when unknown.
	Prefix *bool `json:"prefix,omitempty"`
	// BTSPRequired: the peer demanded a BTSP handshake (or completed one).
	// Nothing ever clears it but a new socket file at the path.
	BTSPRequired bool `json:"btsp_required,omitempty"`
	// Framing is the BTSP handshake framing that worked: "json-line" or
	// "length-prefixed".
	Framing string `json:"btsp_framing,omitempty"`
	// BTSPPrefix is whether the handshake worked with its riboCipher prefix
	// (EC 03 / EC 02) or without; nil when unknown.
	BTSPPrefix *bool `json:"btsp_prefix,omitempty"`
	// Socket identifies the socket file these facts are about (inode and
	// change time of a Unix socket); facts about another file at the same
	// path are not used.
	Socket string `json:"socket_id,omitempty"`
	// Updated is when these facts last changed.
	Updated time.Time `json:"updated"`
}

// The memory kept on disk is one small file per endpoint (a record),
// RecordsDir/<bb>/<hash>.json in the state folder, where hash is the
// 128-bit FNV-1a hash of the endpoint's key, in hex, and bb its first
// byte: 256 buckets.
//
// Why one file per endpoint rather than one file, or a fixed-slot index:
// a call needs the facts of the one endpoint it dials, so it opens one
// file by name (O(1) whatever is remembered: the kernel looks the name up,
// it is not scanned) and never decodes the others; a write replaces that
// one file (a temporary file renamed over it), so processes learning
// different endpoints never touch the same file and lose nothing, and two
// learning the same one keep the newer facts. A fixed-slot index would need
// a lock (or compare-and-swap on slots) for the same, and collisions
// handled by hand.
//
// The buckets keep the count bounded cheaply: after writing a record, the
// writer sweeps that record's bucket only (its age limit, then its share
// of the cap, oldest first by the files' times), which costs a listing of
// at most about bucketCap names; a call that only reads never sweeps.
const (
	// RecordsDir is the folder of the records, in the state folder.
	RecordsDir = "endpoints.d"
	// legacyMemoryFile is the single file of earlier versions: a cache of
	// facts learned again on the next contact, so it is not read; the
	// first write of a record removes it.
	legacyMemoryFile = "endpoints.json"
)

// maxMemoryEntries bounds the endpoints remembered (the oldest go first):
// well above a crowded socket directory, so a run over one does not evict
// and re-learn its endpoints.
const maxMemoryEntries = 16384

// memoryBuckets is how many bucket folders the records are spread over;
// bucketCap is how many records one keeps: its share of maxMemoryEntries
// and a quarter more, since the hash fills buckets unevenly (with 16,000
// endpoints, a bucket holds 62 on average and more than 80 about once in
// 70). At most memoryBuckets*bucketCap (20,480) records are kept.
const (
	memoryBuckets = 256
	bucketCap     = maxMemoryEntries / memoryBuckets * 5 / 4
)

// memorySlack is how far past maxMemoryEntries the in-process memory may
// grow between trims.
const memorySlack = maxMemoryEntries / 8

// maxRecord bounds a record file read (a record takes ~200 bytes; an
// endpoint's key is at most maxKey).
const maxRecord = 8 << 10

// maxKey bounds an endpoint's key kept on disk.
const maxKey = 4096

// MaxMemoryAge is how long facts are kept after they last changed: older
// records are not used and are removed by the next sweep of their bucket.
// They are learned again on the next contact (at worst one refused
// request, resent as the peer asked). That an endpoint demanded BTSP does
// not age out (see expired).
const MaxMemoryAge = 30 * 24 * time.Hour

// staleTemp is the age after which a temporary record file (its writer died
// before the rename) is removed by a sweep.
const staleTemp = time.Hour

// EndpointMemory remembers per endpoint what worked: the riboCipher prefix,
// BTSP required, the handshake framing. It is safe for concurrent use.
//
// An EndpointMemory opened on a state folder reads an endpoint's record the
// first time it is asked about that endpoint (one small file, whatever the
// number remembered) and changes only in memory on Update and Forget; the
// records are written by Flush, which its owner calls when done (and, for
// a long-lived owner, AutoFlush in between). A process that ends without
// flushing loses what it learned since the last flush: facts about
// reaching endpoints, never secrets, learned again on the next contact.
// Several processes may share the folder: each flush writes only the
// records of the endpoints changed here, each merged with what the record
// holds then, newest first (see Flush). A failed write is kept in Err and
// does not stop calls.
type EndpointMemory struct {
	mu sync.Mutex
	// m holds the facts known here; known marks the keys whose record has
	// been read (present or not), so it is read once.
	m     map[string]EndpointFacts
	known map[string]struct{}
	// seen holds every key asked about or learned here (up to the cap),
	// for ForgetUnder.
	seen map[string]struct{}
	// read holds, for the keys whose facts in m (or absence) are what
	// their record file said, that file's identity when it was read; a
	// flush moves them to recheck, where the next Get of the key finds
	// them: the file is still the one read (one lstat) or it is read
	// again.
	read    map[string]recordID
	recheck map[string]rechecked
	dir     string // the state folder ("" in this process only)
	err     error
	clock   func() time.Time
	// Changes not yet flushed (kept only for a memory with a folder): the
	// endpoints updated, and those forgotten with the time they were.
	dirty  map[string]struct{}
	forgot map[string]time.Time
	// ephemeral lists folders whose Unix endpoints are never written.
	ephemeral []string
	// flushing is held by the flush in progress.
	flushing chan struct{}
	// bucketCap is how many records a sweep keeps in a bucket (bucketCap;
	// tests lower it).
	bucketCap int
	// stats counts what was read from the state folder (tests).
	stats memoryStats
}

// recordID identifies one version of a record file, or its absence: a
// write changes its change time (which no program sets back), a
// replacement (rename, link, chown, chmod) its inode or change time.
type recordID struct {
	absent       bool
	dev, ino     uint64
	size         int64
	mtime, ctime unix.Timespec
}

func recordIDOf(st *unix.Stat_t) recordID {
	return recordID{dev: st.Dev, ino: st.Ino, size: st.Size, mtime: st.Mtim, ctime: st.Ctim}
}

// rechecked is what a key's record file said when read (facts, or none),
// and which file that was.
type rechecked struct {
	f  EndpointFacts
	ok bool
	id recordID
}

// memoryStats counts the state folder's reads.
type memoryStats struct {
	recordOpens atomic.Int64 // record files opened for reading
	rechecks    atomic.Int64 // records found unchanged by a lstat, not read
	recordBytes atomic.Int64 // bytes read from them
	dirEntries  atomic.Int64 // names listed by sweeps
}

// NewEndpointMemory returns an empty memory that lives in this process only.
func NewEndpointMemory() *EndpointMemory {
	return &EndpointMemory{
		m: map[string]EndpointFacts{}, known: map[string]struct{}{}, seen: map[string]struct{}{}, clock: time.Now,
		read: map[string]recordID{}, recheck: map[string]rechecked{},
		dirty: map[string]struct{}{}, forgot: map[string]time.Time{},
		flushing: make(chan struct{}, 1), bucketCap: bucketCap,
	}
}

// OpenEndpointMemory returns the memory kept in the state folder dir (in
// RecordsDir there). Nothing is read until an endpoint is asked about; a
// missing folder is an empty memory, made by the first Flush that has
// something to write. The error is always nil (kept for callers that warn).
func OpenEndpointMemory(dir string) (*EndpointMemory, error) {
	m := NewEndpointMemory()
	m.dir = dir
	return m, nil
}

// memoryKey names an endpoint in the memory.
func memoryKey(ep Endpoint) string {
	if ep.Transport == Unix {
		if abs, err := filepath.Abs(ep.Path); err == nil {
			return "unix://" + filepath.Clean(abs)
		}
	}
	return ep.String()
}

// recordName is the record file of key, relative to the state folder.
// The hash is FNV-1a (128 bits), not SHA-256: a call computes it before it
// dials, and the first SHA-256 of a process runs the FIPS module's
// self-test, 470,000 instructions (callgrind), a seventh of a whole call.
// Nothing rests on collisions being hard to make: a record names its
// endpoint and one that names another is not used.
func recordName(key string) (bucket, name string) {
	f := fnv.New128a()
	f.Write([]byte(key))
	h := hex.EncodeToString(f.Sum(nil))
	bucket = RecordsDir + "/" + h[:2]
	return bucket, bucket + "/" + h + ".json"
}

// Get returns what is known about ep: for a memory with a folder, its
// record is read the first time ep is asked about.
func (m *EndpointMemory) Get(ep Endpoint) (EndpointFacts, bool) {
	if m == nil {
		return EndpointFacts{}, false
	}
	key := memoryKey(ep)
	m.mu.Lock()
	f, ok := m.m[key]
	_, known := m.known[key]
	m.mu.Unlock()
	if ok || known || m.dir == "" {
		return f, ok
	}
	rf, rok, id, idOK := m.recheckRecord(key)
	if !idOK {
		rf, rok, id, idOK = m.readRecord(key)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, k := m.known[key]; k { // learned or forgotten here meanwhile
		f, ok = m.m[key]
		return f, ok
	}
	m.known[key] = struct{}{}
	m.see(key)
	if rok {
		m.m[key] = rf
	}
	if idOK && len(m.read) < maxMemoryEntries+memorySlack {
		m.read[key] = id
	}
	if len(m.m) > maxMemoryEntries+memorySlack {
		m.trimLocked(maxMemoryEntries)
	}
	return rf, rok
}

// readRecord reads key's record: its facts, unless the record is missing,
// unusable, about another key or older than MaxMemoryAge. idOK says that
// id identifies the file read (or its absence), so that what was read may
// be kept until the file changes: not for a file refused or unreadable.
func (m *EndpointMemory) readRecord(key string) (f EndpointFacts, ok bool, id recordID, idOK bool) {
	if len(key) > maxKey {
		return EndpointFacts{}, false, id, false
	}
	_, name := recordName(key)
	b, st, err := statedir.ReadFileStat(m.dir, name, maxRecord)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return EndpointFacts{}, false, recordID{absent: true}, true
	case err != nil:
		return EndpointFacts{}, false, id, false
	}
	m.stats.recordOpens.Add(1)
	m.stats.recordBytes.Add(int64(len(b)))
	id, idOK = recordIDOf(&st), true
	rk, f, ok := decodeRecord(b)
	if !ok || rk != key {
		return EndpointFacts{}, false, id, idOK
	}
	if expired(f, m.clock()) {
		return EndpointFacts{}, false, id, false // not kept: it expires by age
	}
	return f, true, id, idOK
}

// recheckRecord answers for key, when a flush let go of what its record
// said (so that other processes' writes are seen), without reading the
// record again while the file is the one read (or still absent): one
// lstat, not the state folder's walk (seven system calls, ~a fifth of a
// liveness probe's CPU in the TUI, which flushes every second when
// anything changed). The file's identity is only compared: a file that
// matches is the very one read by statedir.ReadFile's rule, with the same
// content, owner and mode (any write, rename over it, link, chmod or
// chown moves its change time or inode); anything else, a link or a
// folder swapped on the way included, is read again by that rule. The
// facts are checked for age again. idOK is false when the record must be
// read.
func (m *EndpointMemory) recheckRecord(key string) (f EndpointFacts, ok bool, id recordID, idOK bool) {
	m.mu.Lock()
	c, has := m.recheck[key]
	delete(m.recheck, key)
	m.mu.Unlock()
	if !has {
		return f, false, id, false
	}
	_, name := recordName(key)
	var st unix.Stat_t
	err := unix.Lstat(filepath.Join(m.dir, filepath.FromSlash(name)), &st)
	switch {
	case err == unix.ENOENT || err == unix.ENOTDIR:
		id = recordID{absent: true}
	case err != nil:
		return f, false, id, false
	default:
		id = recordIDOf(&st)
	}
	if id != c.id || c.ok && expired(c.f, m.clock()) {
		return f, false, id, false
	}
	m.stats.rechecks.Add(1)
	return c.f, c.ok, c.id, true
}

// expired says whether facts are past MaxMemoryAge. That an endpoint
// demanded BTSP never expires by age (only a new socket file at its path, or
// the count, ends it): forgetting it would send the next request there in
// cleartext first.
func expired(f EndpointFacts, now time.Time) bool {
	return !f.BTSPRequired && now.Sub(f.Updated) > MaxMemoryAge
}

// readRecordFile reads the record file name (relative to the state folder)
// whole, at most maxRecord bytes, by the state-folder rule of
// internal/statedir (statedir.ReadFile: no symbolic link followed at any
// step below the state folder, every folder and the record the user's or
// root's, no named pipe waited on): in another user's folder the records
// could be swapped for older ones of the user's (facts rolled back, a BTSP
// demand forgotten). A call pays seven system calls.
func (m *EndpointMemory) readRecordFile(name string) ([]byte, error) {
	b, err := statedir.ReadFile(m.dir, name, maxRecord)
	if err == nil {
		m.stats.recordOpens.Add(1)
		m.stats.recordBytes.Add(int64(len(b)))
	}
	return b, err
}

// record is a record file's content: the endpoint's key and its facts.
type record struct {
	Endpoint string `json:"endpoint"`
	EndpointFacts
}

// decodeRecord decodes a record file (without reflection when it is as
// writeRecord writes it), dropping one with implausible fields.
func decodeRecord(b []byte) (key string, f EndpointFacts, ok bool) {
	key, f, ok = decodeRecordFast(b)
	if !ok {
		var r record
		if json.Unmarshal(b, &r) != nil {
			return "", EndpointFacts{}, false
		}
		key, f = r.Endpoint, r.EndpointFacts
	}
	if key == "" || len(key) > maxKey || len(f.Framing) > 32 || len(f.Socket) > 64 {
		return "", EndpointFacts{}, false
	}
	return key, f, true
}

// Update changes what is known about ep, in memory only: the next Flush
// writes it.
func (m *EndpointMemory) Update(ep Endpoint, change func(f *EndpointFacts)) {
	if m == nil {
		return
	}
	old, _ := m.Get(ep) // the record, if not read yet
	key := memoryKey(ep)
	m.mu.Lock()
	defer m.mu.Unlock()
	old = m.m[key]
	f := old
	if old.Prefix != nil {
		p := *old.Prefix
		f.Prefix = &p
	}
	if old.BTSPPrefix != nil {
		p := *old.BTSPPrefix
		f.BTSPPrefix = &p
	}
	change(&f)
	if factsEqual(old, f) {
		return
	}
	f.Updated = m.clock().UTC()
	m.m[key] = f
	m.known[key] = struct{}{}
	delete(m.read, key) // no longer what the file says
	m.see(key)
	if m.dir != "" {
		m.dirty[key] = struct{}{}
		delete(m.forgot, key)
	}
	if len(m.m) > maxMemoryEntries+memorySlack {
		m.trimLocked(maxMemoryEntries)
	}
}

// Forget drops what is known about ep, in memory only: the next Flush
// removes its record.
func (m *EndpointMemory) Forget(ep Endpoint) {
	if m == nil {
		return
	}
	key := memoryKey(ep)
	m.mu.Lock()
	defer m.mu.Unlock()
	_, had := m.m[key]
	delete(m.m, key)
	delete(m.read, key)
	m.known[key] = struct{}{}
	delete(m.dirty, key)
	if m.dir != "" && (had || len(m.forgot) < maxMemoryEntries) {
		m.forgot[key] = m.clock().UTC()
	}
}

// Ephemeral says that what is learned about Unix endpoints under dir (a
// demo's temporary socket folder) is kept in this process only: never
// written, and their records are removed by the next Flush, so they do not
// outlive the folder.
func (m *EndpointMemory) Ephemeral(dir string) {
	if m == nil {
		return
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ephemeral = append(m.ephemeral, "unix://"+filepath.Clean(abs)+"/")
}

// ForgetUnder forgets every Unix endpoint under dir this memory knows of
// (see Forget).
func (m *EndpointMemory) ForgetUnder(dir string) {
	if m == nil {
		return
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return
	}
	prefix := "unix://" + filepath.Clean(abs) + "/"
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock().UTC()
	for k := range m.seen {
		if strings.HasPrefix(k, prefix) {
			delete(m.m, k)
			delete(m.read, k)
			delete(m.dirty, k)
			if m.dir != "" {
				m.forgot[k] = now
			}
		}
	}
}

// see adds key to m.seen, while it is under the cap.
func (m *EndpointMemory) see(key string) {
	if len(m.seen) < maxMemoryEntries+memorySlack {
		m.seen[key] = struct{}{}
	}
}

// ephemeralLocked says whether key is under an Ephemeral folder.
func (m *EndpointMemory) ephemeralLocked(key string) bool {
	for _, p := range m.ephemeral {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}

// Err reports the last failure to write the memory, if any (a later
// successful flush clears it).
func (m *EndpointMemory) Err() error {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.err
}

// Path is the state folder the memory is kept in ("" for a memory in this
// process only); the records are in RecordsDir there.
func (m *EndpointMemory) Path() string {
	if m == nil {
		return ""
	}
	return m.dir
}

func factsEqual(a, b EndpointFacts) bool {
	return boolPtrEqual(a.Prefix, b.Prefix) && boolPtrEqual(a.BTSPPrefix, b.BTSPPrefix) &&
		a.BTSPRequired == b.BTSPRequired && a.Framing == b.Framing && a.Socket == b.Socket
}

func boolPtrEqual(a, b *bool) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}

// trimLocked keeps the max most recently updated endpoints of m.m (in this
// process; what is on disk is the sweeps' business).
func (m *EndpointMemory) trimLocked(max int) {
	if len(m.m) <= max {
		return
	}
	keys := make([]string, 0, len(m.m))
	for k := range m.m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := m.m[keys[i]].Updated, m.m[keys[j]].Updated
		if !a.Equal(b) {
			return a.Before(b)
		}
		return keys[i] < keys[j]
	})
	for _, k := range keys[:len(keys)-max] {
		delete(m.m, k)
		delete(m.known, k)
		delete(m.read, k)
		delete(m.dirty, k) // learned again on the next contact
	}
}

// EndpointRecordPath is the file in which the memory kept in the state
// folder dir keeps what it knows about ep.
func EndpointRecordPath(dir string, ep Endpoint) string {
	_, name := recordName(memoryKey(ep))
	return filepath.Join(dir, filepath.FromSlash(name))
}
