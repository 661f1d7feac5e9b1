package ipc

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fakeClock returns times one millisecond apart, from a fixed start.
func fakeClock(start time.Time) func() time.Time {
	n := 0
	return func() time.Time {
		n++
		return start.Add(time.Duration(n) * time.Millisecond)
	}
}

func crowdEndpoint(i int) Endpoint {
	return Endpoint{Transport: Unix, Path: fmt.Sprintf("/run/user/1000/biomeos/crowd/live%05d-family-westgate.sock", i)}
}

// fill remembers n crowd endpoints in the state folder dir, oldest first,
// writing their records as Flush does (but directly, without its merge and
// sweeps, to be quick).
func fill(t testing.TB, dir string, n int) {
	t.Helper()
	yes := true
	start := time.Now().Add(-time.Hour)
	made := map[string]bool{}
	for i := 0; i < n; i++ {
		key := memoryKey(crowdEndpoint(i))
		bucket, name := recordName(key)
		if !made[bucket] {
			if err := os.MkdirAll(filepath.Join(dir, bucket), 0o700); err != nil {
				t.Fatal(err)
			}
			made[bucket] = true
		}
		f := EndpointFacts{Prefix: &yes, Socket: "123456789:1764000000.5", Updated: start.Add(time.Duration(i) * time.Millisecond).UTC()}
		b, err := json.Marshal(record{Endpoint: key, EndpointFacts: f})
		if err != nil {
			t.Fatal(err)
		}
		// Written in a row, the files' times would tie (the kernel's clock
		// for them is coarse): give each its own, as a life of calls would.
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, append(b, '\n'), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, f.Updated, f.Updated); err != nil {
			t.Fatal(err)
		}
	}
}

// records counts the record files in the state folder dir.
func records(t *testing.T, dir string) (n int, size int64) {
	t.Helper()
	filepath.WalkDir(filepath.Join(dir, RecordsDir), func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && strings.HasSuffix(p, ".json") {
			info, _ := d.Info()
			n++
			size += info.Size()
		}
		return nil
	})
	return n, size
}

// TestEndpointMemoryReadsOneRecord: with 16,000 endpoints remembered, what
// a call does with the memory (learn about its one endpoint, change a fact,
// flush) reads that endpoint's record and nothing else: one file opened,
// its bytes read, no folder listed; the flush lists one bucket only.
func TestEndpointMemoryReadsOneRecord(t *testing.T) {
	dir := t.TempDir()
	const n = 16000
	fill(t, dir, n)
	total, size := records(t, dir)
	if total < n-n/100 {
		t.Fatalf("%d of %d endpoints remembered", total, n)
	}
	ep := crowdEndpoint(n - 1)
	one, err := os.Stat(EndpointRecordPath(dir, ep))
	if err != nil {
		t.Fatal(err)
	}
	m, _ := OpenEndpointMemory(dir)
	f, ok := m.Get(ep)
	if !ok || f.Prefix == nil || !*f.Prefix {
		t.Fatalf("the endpoint's facts: %+v %v", f, ok)
	}
	m.Get(ep) // read once only
	if opens, bytes, listed := m.stats.recordOpens.Load(), m.stats.recordBytes.Load(), m.stats.dirEntries.Load(); opens != 1 || bytes != one.Size() || listed != 0 {
		t.Fatalf("the call read %d files, %d bytes, listed %d names (the record is %d bytes, the memory %d bytes in %d records)",
			opens, bytes, listed, one.Size(), size, total)
	}
	m.Update(ep, func(f *EndpointFacts) { f.BTSPRequired = true })
	if err := m.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if opens, listed := m.stats.recordOpens.Load(), m.stats.dirEntries.Load(); opens != 2 || listed > bucketCap+1 {
		t.Fatalf("the flush read %d files and listed %d names", opens-1, listed)
	}
}

// TestEndpointMemoryCap: with more endpoints on disk than the cap (here
// lowered to 4 a bucket, 1,024 in all, for speed), a flush that writes into
// every bucket leaves each within its share, the newest kept.
func TestEndpointMemoryCap(t *testing.T) {
	dir := t.TempDir()
	const n, limit = 2000, 4
	fill(t, dir, n)
	m, _ := OpenEndpointMemory(dir)
	m.bucketCap = limit
	seen := map[string]bool{}
	for i := n; len(seen) < memoryBuckets; i++ {
		ep := crowdEndpoint(i)
		bucket, _ := recordName(memoryKey(ep))
		if !seen[bucket] {
			seen[bucket] = true
			m.Update(ep, func(f *EndpointFacts) { f.Framing = "json-line" })
		}
	}
	if err := m.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if total, _ := records(t, dir); total > memoryBuckets*limit || total < memoryBuckets*limit*9/10 {
		t.Fatalf("%d records kept of %d, cap %d", total, n+memoryBuckets, memoryBuckets*limit)
	}
	// In each bucket, the newest were kept (the one just written, and the
	// newest of the others).
	byBucket := map[string][]int{}
	for i := 0; i < n; i++ {
		bucket, _ := recordName(memoryKey(crowdEndpoint(i)))
		byBucket[bucket] = append(byBucket[bucket], i)
	}
	for bucket, idx := range byBucket {
		keep := len(idx) - (limit - 1)
		for j, i := range idx {
			_, err := os.Stat(EndpointRecordPath(dir, crowdEndpoint(i)))
			if kept := err == nil; kept != (j >= keep) {
				t.Fatalf("bucket %s: endpoint %d (%d of %d) kept: %v", bucket, i, j+1, len(idx), kept)
			}
		}
	}
}

// TestEndpointMemoryExpires: facts older than MaxMemoryAge are not used,
// and the next write in their bucket removes them.
func TestEndpointMemoryExpires(t *testing.T) {
	dir := t.TempDir()
	ep := crowdEndpoint(1)
	m, _ := OpenEndpointMemory(dir)
	no := false
	m.Update(ep, func(f *EndpointFacts) { f.Prefix = &no })
	if err := m.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	later, _ := OpenEndpointMemory(dir)
	later.clock = func() time.Time { return time.Now().Add(MaxMemoryAge + time.Hour) }
	if f, ok := later.Get(ep); ok {
		t.Fatalf("facts past their age were used: %+v", f)
	}
	// Another endpoint in the same bucket.
	path := EndpointRecordPath(dir, ep)
	var other Endpoint
	for i := 2; ; i++ {
		other = crowdEndpoint(i)
		if filepath.Dir(EndpointRecordPath(dir, other)) == filepath.Dir(path) {
			break
		}
	}
	later.Update(other, func(f *EndpointFacts) { f.Framing = "json-line" })
	if err := later.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("the expired record is still there: %v", err)
	}

	// That an endpoint demanded BTSP does not age out: forgetting it would
	// send its next request in cleartext first.
	btsp := crowdEndpoint(100)
	old, _ := OpenEndpointMemory(dir)
	old.clock = func() time.Time { return time.Now().Add(-MaxMemoryAge - time.Hour) }
	old.Update(btsp, func(f *EndpointFacts) { f.BTSPRequired = true })
	if err := old.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	bpath := EndpointRecordPath(dir, btsp)
	aged := time.Now().Add(-MaxMemoryAge - time.Hour)
	os.Chtimes(bpath, aged, aged)
	now, _ := OpenEndpointMemory(dir)
	if f, ok := now.Get(btsp); !ok || !f.BTSPRequired {
		t.Fatalf("BTSP required aged out on read: %+v %v", f, ok)
	}
	var sameBucket Endpoint
	for i := 101; ; i++ {
		sameBucket = crowdEndpoint(i)
		if filepath.Dir(EndpointRecordPath(dir, sameBucket)) == filepath.Dir(bpath) {
			break
		}
	}
	now.Update(sameBucket, func(f *EndpointFacts) { f.Framing = "json-line" })
	if err := now.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(bpath); err != nil {
		t.Fatalf("the sweep removed an aged record saying BTSP is required: %v", err)
	}
}

// TestEndpointMemoryReadIsBounded: a record that is a symbolic link (even
// to a good record), a link out of the state folder, a named pipe, or a
// file over the size limit gives no facts, and reading it neither follows
// the link nor waits.
func TestEndpointMemoryReadIsBounded(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	good, linked, outside, fifo, big := crowdEndpoint(1), crowdEndpoint(2), crowdEndpoint(3), crowdEndpoint(4), crowdEndpoint(5)
	m, _ := OpenEndpointMemory(state)
	m.Update(good, func(f *EndpointFacts) { f.BTSPRequired = true })
	if err := m.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	goodPath := EndpointRecordPath(state, good)
	b, _ := os.ReadFile(goodPath)
	mk := func(ep Endpoint) string {
		p := EndpointRecordPath(state, ep)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// Each holds (or leads to) a record naming its own endpoint.
	rec := func(ep Endpoint) []byte {
		return []byte(strings.Replace(string(b), memoryKey(good), memoryKey(ep), 1))
	}
	outsideFile := filepath.Join(dir, "elsewhere.json")
	os.WriteFile(outsideFile, rec(outside), 0o600)
	if err := os.Symlink(outsideFile, mk(outside)); err != nil {
		t.Fatal(err)
	}
	inside := filepath.Join(state, "inside.json")
	os.WriteFile(inside, rec(linked), 0o600)
	if err := os.Symlink("../../inside.json", mk(linked)); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(mk(fifo), 0o600); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(mk(big), append(rec(big)[:len(rec(big))-2], []byte(strings.Repeat(" ", maxRecord)+"}\n")...), 0o600)

	// A bucket that is a link to a folder outside, holding a good record.
	var viaBucket Endpoint
	for i := 6; ; i++ {
		viaBucket = crowdEndpoint(i)
		if _, err := os.Stat(filepath.Dir(EndpointRecordPath(state, viaBucket))); os.IsNotExist(err) {
			break
		}
	}
	outDir := filepath.Join(dir, "outside-bucket")
	os.MkdirAll(outDir, 0o700)
	os.WriteFile(filepath.Join(outDir, filepath.Base(EndpointRecordPath(state, viaBucket))), rec(viaBucket), 0o600)
	if err := os.Symlink(outDir, filepath.Dir(EndpointRecordPath(state, viaBucket))); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(EndpointRecordPath(state, viaBucket)); err != nil || !strings.Contains(string(b), memoryKey(viaBucket)) {
		t.Fatalf("the linked bucket's record: %v", err) // readable by following the link
	}

	r, _ := OpenEndpointMemory(state)
	if _, ok := r.Get(good); !ok {
		t.Fatal("the good record was not read")
	}
	if f, ok := r.Get(viaBucket); ok {
		t.Errorf("a record in a bucket linked out of the folder gave facts %+v", f)
	}
	for name, ep := range map[string]Endpoint{"link in the folder": linked, "link out of the folder": outside, "named pipe": fifo, "too large": big} {
		if f, ok := r.Get(ep); ok {
			t.Errorf("%s: gave facts %+v", name, f)
		}
	}
}

// TestEndpointMemoryEphemeral: what is learned about a demo's sockets is
// never written and removes their records; ForgetUnder removes what this
// process knew under a folder.
func TestEndpointMemoryEphemeral(t *testing.T) {
	state := t.TempDir()
	demo := filepath.Join(t.TempDir(), "primalscope-demo-1")
	a := Endpoint{Transport: Unix, Path: filepath.Join(demo, "beardog.sock")}
	b := Endpoint{Transport: Unix, Path: filepath.Join(demo, "songbird.sock")}
	keep := crowdEndpoint(1)
	m, _ := OpenEndpointMemory(state)
	m.Update(a, func(f *EndpointFacts) { f.BTSPRequired = true })
	m.Update(b, func(f *EndpointFacts) { f.BTSPRequired = true })
	m.Update(keep, func(f *EndpointFacts) { f.BTSPRequired = true })
	if err := m.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	m.ForgetUnder(demo)
	if err := m.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, ep := range []Endpoint{a, b} {
		if _, err := os.Stat(EndpointRecordPath(state, ep)); !os.IsNotExist(err) {
			t.Fatalf("%s: record kept after ForgetUnder: %v", ep.Path, err)
		}
	}
	m2, _ := OpenEndpointMemory(state)
	m2.Ephemeral(demo)
	m2.Update(a, func(f *EndpointFacts) { f.Framing = "json-line" })
	if err := m2.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(EndpointRecordPath(state, a)); !os.IsNotExist(err) {
		t.Fatalf("an ephemeral endpoint was written: %v", err)
	}
	if f, ok := m2.Get(a); !ok || f.Framing != "json-line" {
		t.Fatalf("the process forgot its own ephemeral facts: %+v %v", f, ok)
	}
	if _, ok := m2.Get(keep); !ok {
		t.Fatal("an endpoint outside the folder was forgotten")
	}
}

// TestEndpointMemoryLegacyFile: the single file of earlier versions is not
// read (16,384 entries cost every call 25 ms) and the first write removes it.
func TestEndpointMemoryLegacyFile(t *testing.T) {
	state := t.TempDir()
	ep := crowdEndpoint(1)
	legacy := filepath.Join(state, legacyMemoryFile)
	doc := fmt.Sprintf(`{"endpoints":{%q:{"btsp_required":true,"updated":%q}}}`, memoryKey(ep), time.Now().UTC().Format(time.RFC3339))
	if err := os.WriteFile(legacy, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	m, _ := OpenEndpointMemory(state)
	if f, ok := m.Get(ep); ok {
		t.Fatalf("the old file was read: %+v", f)
	}
	m.Update(ep, func(f *EndpointFacts) { f.Framing = "json-line" })
	if err := m.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(legacy); !os.IsNotExist(err) {
		t.Fatalf("the old file is still there: %v", err)
	}
}

// TestEndpointMemoryNewestWins: two processes changing the same endpoint:
// the newer facts win whichever flushes last, and a forget older than the
// other's re-learning does not erase it.
func TestEndpointMemoryNewestWins(t *testing.T) {
	path := t.TempDir()
	t0 := time.Now().Add(-time.Minute)
	older, _ := OpenEndpointMemory(path)
	newer, _ := OpenEndpointMemory(path)
	older.clock = func() time.Time { return t0 }
	newer.clock = func() time.Time { return t0.Add(time.Second) }
	ep := Endpoint{Transport: Unix, Path: "/run/a.sock"}
	gone := Endpoint{Transport: Unix, Path: "/run/b.sock"}
	older.Update(gone, func(f *EndpointFacts) { f.Framing = "json-line" })
	if err := older.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	newer.Update(ep, func(f *EndpointFacts) { f.Framing = "length-prefixed" })
	newer.Update(gone, func(f *EndpointFacts) { f.Framing = "length-prefixed" })
	older.Update(ep, func(f *EndpointFacts) { f.Framing = "json-line" })
	older.Forget(gone)
	if err := newer.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := older.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	r, _ := OpenEndpointMemory(path)
	if f, _ := r.Get(ep); f.Framing != "length-prefixed" {
		t.Fatalf("the older facts won: %+v", f)
	}
	if f, ok := r.Get(gone); !ok || f.Framing != "length-prefixed" {
		t.Fatalf("an older forget erased newer facts: %+v %v", f, ok)
	}
	if f, _ := older.Get(ep); f.Framing != "length-prefixed" {
		t.Fatalf("the older memory kept its stale facts after the flush: %+v", f)
	}
}
