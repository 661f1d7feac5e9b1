package ipc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ecoPrimals/primalscope/internal/statedir"
)

// Writing the endpoint memory: what a run learnt, flushed record by record
// (temp file and rename), and the bounded sweep that ages records out.

// Flush writes the changes made since the last flush, if the memory has a
// folder and something changed; it returns at once otherwise. For each
// endpoint changed here it reads that endpoint's record and keeps the
// newer of its facts and this memory's (by Updated); an endpoint forgotten
// here has its record removed unless the record is newer. Each record is
// replaced atomically (a temporary file renamed over it), so two processes
// learning different endpoints at once lose neither, and two learning the
// same one keep one's facts whole. After writing, the buckets written are
// swept (see RecordsDir). Flush does not write once ctx has ended; on
// failure the changes stay pending for the next flush and the error is
// also kept in Err.
func (m *EndpointMemory) Flush(ctx context.Context) error {
	if m == nil || m.dir == "" {
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
	forgot := m.forgot
	for k := range m.dirty {
		if m.ephemeralLocked(k) {
			forgot[k] = m.clock().UTC() // kept here only (see the end)
			continue
		}
		changed[k] = m.m[k]
	}
	m.dirty, m.forgot = map[string]struct{}{}, map[string]time.Time{}
	m.mu.Unlock()

	err := m.write(ctx, changed, forgot)

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
	// What other processes flushed meanwhile is read again on the next Get
	// of an endpoint not changed here since.
	for k := range m.known {
		if _, d := m.dirty[k]; d {
			continue
		}
		if _, fg := m.forgot[k]; fg {
			continue
		}
		if _, ok := m.m[k]; ok && m.ephemeralLocked(k) {
			continue // nowhere else to read it from
		}
		if id, ok := m.read[k]; ok {
			f, fok := m.m[k]
			m.recheck[k] = rechecked{f: f, ok: fok, id: id}
		}
		delete(m.read, k)
		delete(m.known, k)
		delete(m.m, k)
	}
	if len(m.recheck) > maxMemoryEntries+memorySlack {
		clear(m.recheck) // read again, then
	}
	return nil
}

// write writes the changed records and removes the forgotten ones, then
// sweeps the buckets written.
func (m *EndpointMemory) write(ctx context.Context, changed map[string]EndpointFacts, forgot map[string]time.Time) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("endpoint memory: not written: %w", err)
	}
	if err := os.MkdirAll(m.dir, 0o700); err != nil {
		return fmt.Errorf("endpoint memory: %w", err)
	}
	root, err := os.OpenRoot(m.dir)
	if err != nil {
		return fmt.Errorf("endpoint memory: %w", err)
	}
	defer root.Close()
	// Written oldest first, so that the files' times (by which sweeps
	// expire records) follow the facts' own.
	keys := make([]string, 0, len(changed))
	for k := range changed {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return changed[keys[i]].Updated.Before(changed[keys[j]].Updated) })
	swept := map[string]struct{}{}
	var errs []error
	for _, k := range keys {
		f := changed[k]
		if len(k) > maxKey {
			continue
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("endpoint memory: not written: %w", err)
		}
		bucket, name := recordName(k)
		if b, err := m.readRecordFile(name); err == nil {
			if rk, cur, ok := decodeRecord(b); ok && rk == k && cur.Updated.After(f.Updated) {
				continue // newer facts from another process
			}
		}
		if err := writeRecord(root, m.dir, bucket, name, record{Endpoint: k, EndpointFacts: f}); err != nil {
			errs = append(errs, err)
			continue
		}
		swept[bucket] = struct{}{}
	}
	for k, at := range forgot {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("endpoint memory: not written: %w", err)
		}
		_, name := recordName(k)
		b, err := m.readRecordFile(name)
		if err != nil {
			continue // nothing there (or nothing usable: left to the sweep)
		}
		if rk, cur, ok := decodeRecord(b); ok && rk == k && cur.Updated.After(at) {
			continue // learned again by another process since
		}
		if err := root.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("endpoint memory: %w", err))
		}
	}
	if len(swept) > 0 {
		root.Remove(legacyMemoryFile) // the old single file: see RecordsDir
	}
	for bucket := range swept {
		m.sweep(root, bucket, m.bucketCap)
	}
	return errors.Join(errs...)
}

// writeRecord writes r as the record file name in bucket: a temporary file
// (mode 0600) renamed over it. The folders on the way (RecordsDir, the
// bucket) are made or checked as statedir.Dir does: a link, a non-folder or
// another user's folder is an *statedir.UnsafeError and nothing is written.
func writeRecord(root *os.Root, dir, bucket, name string, r record) error {
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("endpoint memory: %w", err)
	}
	for _, d := range []string{RecordsDir, bucket} {
		if err := statedir.Dir(filepath.Join(dir, d)); err != nil {
			return fmt.Errorf("endpoint memory: %w", err)
		}
	}
	tmp := fmt.Sprintf("%s/.tmp-%d-%08x", bucket, os.Getpid(), rand.Uint32())
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return fmt.Errorf("endpoint memory: %w", err)
	}
	_, werr := f.Write(append(b, '\n'))
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = root.Rename(tmp, name)
	}
	if werr != nil {
		root.Remove(tmp)
		return fmt.Errorf("endpoint memory: %w", werr)
	}
	return nil
}

// sweep keeps a bucket within its share of the count: it removes records
// older than MaxMemoryAge (by their files' modification time, the time they
// were written), temporary files left by a writer that died, anything that
// is not a regular file, and then the oldest records beyond limit. It lists
// the one bucket, which sweeps keep to about limit names.
func (m *EndpointMemory) sweep(root *os.Root, bucket string, limit int) {
	d, err := root.Open(bucket)
	if err != nil {
		return
	}
	ents, err := d.ReadDir(-1)
	d.Close()
	if err != nil {
		return
	}
	m.stats.dirEntries.Add(int64(len(ents)))
	now := m.clock()
	type rec struct {
		name string
		mod  time.Time
	}
	var recs []rec
	for _, e := range ents {
		name := bucket + "/" + e.Name()
		info, err := e.Info() // lstat: a symbolic link is not followed
		if err != nil {
			continue
		}
		switch {
		case strings.HasPrefix(e.Name(), ".tmp-"):
			if now.Sub(info.ModTime()) > staleTemp {
				root.Remove(name)
			}
		case !info.Mode().IsRegular() || !strings.HasSuffix(e.Name(), ".json"):
			root.Remove(name)
		case now.Sub(info.ModTime()) > MaxMemoryAge && m.agedOut(name, now):
			root.Remove(name)
		default:
			recs = append(recs, rec{name, info.ModTime()})
		}
	}
	if len(recs) <= limit {
		return
	}
	sort.Slice(recs, func(i, j int) bool {
		if !recs[i].mod.Equal(recs[j].mod) {
			return recs[i].mod.Before(recs[j].mod)
		}
		return recs[i].name < recs[j].name
	})
	for _, r := range recs[:len(recs)-limit] {
		root.Remove(r.name)
	}
}

// agedOut says whether the record file name, written longer than
// MaxMemoryAge ago, is to go: unless it is usable and says the endpoint
// demanded BTSP (see expired).
func (m *EndpointMemory) agedOut(name string, now time.Time) bool {
	b, err := m.readRecordFile(name)
	if err != nil {
		return true
	}
	_, f, ok := decodeRecord(b)
	return !ok || expired(f, now)
}

// AutoFlush flushes the memory about every interval while it has unflushed
// changes, from a goroutine of its own, until stop is called. stop ends
// that goroutine (a flush in progress is abandoned before its write) and
// returns once it has; it does not flush: the owner calls Flush after it.
// For a memory without a folder it does nothing.
func (m *EndpointMemory) AutoFlush(every time.Duration) (stop func()) {
	if m == nil || m.dir == "" {
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
