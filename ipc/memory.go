package ipc

import (
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

// maxMemoryEntries bounds the endpoints remembered (the oldest go first).
const maxMemoryEntries = 1024

// maxMemoryFile bounds the memory file read at start.
const maxMemoryFile = 1 << 20

// EndpointMemory remembers per endpoint what worked: the riboCipher prefix,
// BTSP required, the handshake framing. It is safe for concurrent use. An
// EndpointMemory opened on a file writes it (mode 0600) whenever a fact
// changes; a failed write is kept in Err and does not stop calls.
type EndpointMemory struct {
	mu    sync.Mutex
	m     map[string]EndpointFacts
	path  string
	err   error
	clock func() time.Time
}

// NewEndpointMemory returns an empty memory that lives in this process only.
func NewEndpointMemory() *EndpointMemory {
	return &EndpointMemory{m: map[string]EndpointFacts{}, clock: time.Now}
}

// OpenEndpointMemory loads the memory kept in path (a missing file is an
// empty memory) and keeps writing it there as facts change. A file that
// cannot be parsed is set aside: the memory starts empty and the error is
// returned along with the usable memory.
func OpenEndpointMemory(path string) (*EndpointMemory, error) {
	m := NewEndpointMemory()
	m.path = path
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return m, nil
	}
	if err != nil {
		return m, fmt.Errorf("endpoint memory %s: %w", path, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxMemoryFile+1))
	if err != nil {
		return m, fmt.Errorf("endpoint memory %s: %w", path, err)
	}
	if len(b) > maxMemoryFile {
		return m, fmt.Errorf("endpoint memory %s: larger than %s, ignored", path, FormatBytes(maxMemoryFile))
	}
	var doc struct {
		Endpoints map[string]EndpointFacts `json:"endpoints"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return m, fmt.Errorf("endpoint memory %s: not valid, ignored: %w", path, err)
	}
	for k, v := range doc.Endpoints {
		if len(k) > 4096 || len(v.Framing) > 32 || len(v.Socket) > 64 {
			continue
		}
		m.m[k] = v
	}
	m.trimLocked()
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

// Update changes what is known about ep; the file (if any) is rewritten
// when something changed.
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
	m.trimLocked()
	if m.path != "" {
		m.err = m.saveLocked()
	}
}

// Forget drops what is known about ep.
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
		m.err = m.saveLocked()
	}
}

// Err reports the last failure to write the memory file, if any.
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

func (m *EndpointMemory) trimLocked() {
	if len(m.m) <= maxMemoryEntries {
		return
	}
	keys := make([]string, 0, len(m.m))
	for k := range m.m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return m.m[keys[i]].Updated.Before(m.m[keys[j]].Updated) })
	for _, k := range keys[:len(keys)-maxMemoryEntries] {
		delete(m.m, k)
	}
}

// saveLocked writes the file atomically (a temporary file renamed over it),
// mode 0600, creating its directory (0700) if needed.
func (m *EndpointMemory) saveLocked() error {
	doc := struct {
		Note      string                   `json:"note"`
		Endpoints map[string]EndpointFacts `json:"endpoints"`
	}{"what primalscope learned about reaching each endpoint; facts only, no secrets", m.m}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	dir := filepath.Dir(m.path)
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
	if err := os.Rename(name, m.path); err != nil {
		os.Remove(name)
		return fmt.Errorf("endpoint memory: %w", err)
	}
	return nil
}
