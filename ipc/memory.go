package ipc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/ecoPrimals/primalscope/internal/human"
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

// maxMemoryEntries bounds the endpoints remembered (the oldest go first):
// well above a crowded socket directory, so a run over one does not evict
// and re-learn its endpoints.
const maxMemoryEntries = 16384

// memorySlack is how far past maxMemoryEntries the memory may grow between
// trims: trimming (one sort) happens when it is reached and on every
// flush, not on every insert.
const memorySlack = maxMemoryEntries / 8

// maxMemoryFile bounds the memory file read (an entry takes ~150 bytes, so
// a full memory is ~2.5 MiB).
const maxMemoryFile = 4 << 20

// EndpointMemory remembers per endpoint what worked: the riboCipher prefix,
// BTSP required, the handshake framing. It is safe for concurrent use.
//
// An EndpointMemory opened on a file changes only in memory on Update and
// Forget; the file (mode 0600) is written by Flush, which its owner calls
// when done (and, for a long-lived owner, AutoFlush in between). A process
// that ends without flushing loses what it learned since the last flush:
// facts about reaching endpoints, never secrets, learned again on the next
// contact. Several processes may share the file: each flush merges the
// file's current content with this memory's changes, newest first (see
// Flush). A failed write is kept in Err and does not stop calls.
type EndpointMemory struct {
	mu    sync.Mutex
	m     map[string]EndpointFacts
	path  string
	err   error
	clock func() time.Time
	// Changes not yet flushed (kept only for a memory with a file): the
	// endpoints updated, and those forgotten with the time they were.
	dirty  map[string]struct{}
	forgot map[string]time.Time
	// flushing is held by the flush in progress.
	flushing chan struct{}
}

// NewEndpointMemory returns an empty memory that lives in this process only.
func NewEndpointMemory() *EndpointMemory {
	return &EndpointMemory{
		m: map[string]EndpointFacts{}, clock: time.Now,
		dirty: map[string]struct{}{}, forgot: map[string]time.Time{},
		flushing: make(chan struct{}, 1),
	}
}

// OpenEndpointMemory loads the memory kept in path (a missing file is an
// empty memory); Flush writes it back there. A file that cannot be parsed
// is set aside: the memory starts empty and the error is returned along
// with the usable memory (the next flush replaces the file).
func OpenEndpointMemory(path string) (*EndpointMemory, error) {
	m := NewEndpointMemory()
	m.path = path
	doc, err := readMemoryFile(path)
	if err != nil {
		return m, err
	}
	m.m = doc
	m.trimLocked(maxMemoryEntries)
	return m, nil
}

// readMemoryFile reads the endpoints kept in path: an empty map for a
// missing file, an error for one that cannot be read or parsed. Entries
// with implausible fields are dropped.
func readMemoryFile(path string) (map[string]EndpointFacts, error) {
	out := map[string]EndpointFacts{}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return out, fmt.Errorf("endpoint memory %s: %w", path, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxMemoryFile+1))
	if err != nil {
		return out, fmt.Errorf("endpoint memory %s: %w", path, err)
	}
	if len(b) > maxMemoryFile {
		return out, fmt.Errorf("endpoint memory %s: larger than %s, ignored", path, human.Bytes(maxMemoryFile))
	}
	endpoints, ok := decodeMemoryFast(b) // the file as written, without reflection
	if !ok {
		var doc struct {
			Endpoints map[string]EndpointFacts `json:"endpoints"`
		}
		if err := json.Unmarshal(b, &doc); err != nil {
			return out, fmt.Errorf("endpoint memory %s: not valid, ignored: %w", path, err)
		}
		endpoints = doc.Endpoints
	}
	for k, v := range endpoints {
		if len(k) > 4096 || len(v.Framing) > 32 || len(v.Socket) > 64 {
			continue
		}
		out[k] = v
	}
	return out, nil
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

// Get returns what is known about ep.
func (m *EndpointMemory) Get(ep Endpoint) (EndpointFacts, bool) {
	if m == nil {
		return EndpointFacts{}, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	f, ok := m.m[memoryKey(ep)]
	return f, ok
}

// Update changes what is known about ep, in memory only: the next Flush
// writes it.
func (m *EndpointMemory) Update(ep Endpoint, change func(f *EndpointFacts)) {
	if m == nil {
		return
	}
	key := memoryKey(ep)
	m.mu.Lock()
	defer m.mu.Unlock()
	old := m.m[key]
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
	if m.path != "" {
		m.dirty[key] = struct{}{}
		delete(m.forgot, key)
	}
	if len(m.m) > maxMemoryEntries+memorySlack {
		m.trimLocked(maxMemoryEntries)
	}
}

// Forget drops what is known about ep, in memory only: the next Flush
// drops it from the file.
func (m *EndpointMemory) Forget(ep Endpoint) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	key := memoryKey(ep)
	if _, ok := m.m[key]; !ok {
		return
	}
	delete(m.m, key)
	if m.path != "" {
		delete(m.dirty, key)
		m.forgot[key] = m.clock().UTC()
	}
}

// Flush writes the changes made since the last flush to the file, if the
// memory has one and something changed; it returns at once otherwise. It
// reads the file first and merges: for each endpoint changed here, the
// newer of this memory's facts and the file's (by Updated) is kept; an
// endpoint forgotten here is dropped unless the file's facts are newer;
// every other endpoint is kept as the file has it. The result, trimmed to
// the most recently updated entries, replaces the file atomically and
// becomes this memory's content, so facts other processes flushed meanwhile
// are kept and used. Two processes flushing at the same instant can still
// lose one's changes (the last rename wins); they are facts, learned again
// on the next contact. A file that cannot be read or parsed is replaced.
// Flush does not write once ctx has ended; on failure the changes stay
// pending for the next flush and the error is also kept in Err.
func (m *EndpointMemory) Flush(ctx context.Context) error {
	if m == nil || m.path == "" {
		return nil
	}
	select {
	case m.flushing <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("endpoint memory: not written: %w", ctx.Err())
	}
	defer func() { <-m.flushing }()
	m.mu.Lock()
	if len(m.dirty) == 0 && len(m.forgot) == 0 {
		m.mu.Unlock()
		return nil
	}
	changed := make(map[string]EndpointFacts, len(m.dirty))
	for k := range m.dirty {
		changed[k] = m.m[k]
	}
	forgot := m.forgot
	m.dirty, m.forgot = map[string]struct{}{}, map[string]time.Time{}
	m.mu.Unlock()

	merged, _ := readMemoryFile(m.path) // an unusable file is replaced
	for k, f := range changed {
		if cur, ok := merged[k]; !ok || !cur.Updated.After(f.Updated) {
			merged[k] = f
		}
	}
	for k, at := range forgot {
		if cur, ok := merged[k]; ok && !cur.Updated.After(at) {
			delete(merged, k)
		}
	}
	for _, k := range oldest(merged, maxMemoryEntries) {
		delete(merged, k)
	}
	err := writeMemoryFile(ctx, m.path, merged)

	m.mu.Lock()
	defer m.mu.Unlock()
	if err != nil {
		// Pending again, unless changed since.
		for k := range changed {
			if _, ok := m.m[k]; ok {
				m.dirty[k] = struct{}{}
			}
		}
		for k, at := range forgot {
			if _, ok := m.m[k]; !ok {
				if _, again := m.forgot[k]; !again {
					m.forgot[k] = at
				}
			}
		}
		m.err = err
		return err
	}
	m.err = nil
	// Adopt what the file now holds, but for changes made here since.
	for k, f := range merged {
		if _, d := m.dirty[k]; d {
			continue
		}
		if _, fg := m.forgot[k]; fg {
			continue
		}
		m.m[k] = f
	}
	for k := range m.m {
		if _, ok := merged[k]; !ok {
			if _, d := m.dirty[k]; !d {
				delete(m.m, k)
			}
		}
	}
	return nil
}

// AutoFlush flushes the memory about every interval while it has unflushed
// changes, from a goroutine of its own, until stop is called. stop ends
// that goroutine (a flush in progress is abandoned before its write) and
// returns once it has; it does not flush: the owner calls Flush after it.
// For a memory without a file it does nothing.
func (m *EndpointMemory) AutoFlush(every time.Duration) (stop func()) {
	if m == nil || m.path == "" {
		return func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				m.Flush(ctx) // a failure is kept in Err and retried
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			<-done
		})
	}
}

// Err reports the last failure to write the memory file, if any (a later
// successful flush clears it).
func (m *EndpointMemory) Err() error {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.err
}

// Path is the file the memory is kept in ("" for a memory in this process only).
func (m *EndpointMemory) Path() string {
	if m == nil {
		return ""
	}
	return m.path
}

func factsEqual(a, b EndpointFacts) bool {
	return boolPtrEqual(a.Prefix, b.Prefix) && boolPtrEqual(a.BTSPPrefix, b.BTSPPrefix) &&
		a.BTSPRequired == b.BTSPRequired && a.Framing == b.Framing && a.Socket == b.Socket
}

func boolPtrEqual(a, b *bool) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}

// trimLocked keeps the max most recently updated endpoints of m.m.
func (m *EndpointMemory) trimLocked(max int) {
	for _, k := range oldest(m.m, max) {
		delete(m.m, k)
		delete(m.dirty, k)
	}
}

// oldest returns the keys of facts beyond the max most recently updated
// (one sort; ties broken by key, so every process trims alike).
func oldest(facts map[string]EndpointFacts, max int) []string {
	if len(facts) <= max {
		return nil
	}
	keys := make([]string, 0, len(facts))
	for k := range facts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := facts[keys[i]].Updated, facts[keys[j]].Updated
		if !a.Equal(b) {
			return a.Before(b)
		}
		return keys[i] < keys[j]
	})
	return keys[:len(keys)-max]
}

// writeMemoryFile writes facts to path atomically (a temporary file renamed
// over it), mode 0600, creating its directory (0700) if needed. The rename
// is not done once ctx has ended.
func writeMemoryFile(ctx context.Context, path string, facts map[string]EndpointFacts) error {
	doc := struct {
		Note      string                   `json:"note"`
		Endpoints map[string]EndpointFacts `json:"endpoints"`
	}{"what primalscope learned about reaching each endpoint; facts only, no secrets", facts}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return fmt.Errorf("endpoint memory: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("endpoint memory: not written: %w", err)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("endpoint memory: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".endpoints-*.json")
	if err != nil {
		return fmt.Errorf("endpoint memory: %w", err)
	}
	name := tmp.Name()
	_, werr := tmp.Write(append(b, '\n'))
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr, os.Chmod(name, 0o600)); err != nil {
		os.Remove(name)
		return fmt.Errorf("endpoint memory: %w", err)
	}
	if err := ctx.Err(); err != nil {
		os.Remove(name)
		return fmt.Errorf("endpoint memory: not written: %w", err)
	}
	if err := os.Rename(name, path); err != nil {
		os.Remove(name)
		return fmt.Errorf("endpoint memory: %w", err)
	}
	return nil
}
