package history

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// benchEntry is a typical CLI call: small params, a result of about 1 KiB.
func benchEntry(i int) Entry {
	e := sample(i)
	e.Params = json.RawMessage(fmt.Sprintf(`{"message":"hello %d","family_id":"westgate-tower-155f"}`, i))
	e.Result = json.RawMessage(`{"signature":"` + strings.Repeat("A", 1000) + `"}`)
	return e
}

// BenchmarkAdd measures one entry written straight to the store (what a
// journal fold does per record, without the journal), committed before it
// returns. It reports the median and 99th percentile.
func BenchmarkAdd(b *testing.B) {
	ctx := context.Background()
	s := openTemp(b, Options{})
	var e Entry
	timeEach(b, func(i int) { e = benchEntry(i) }, func(int) {
		if _, err := s.Add(ctx, e); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkOpenAddClose measures opening an existing store, adding one
// entry and closing it: the per-process cost of a process that writes to
// the database itself (the CLI appends to the journal instead: see
// BenchmarkJournalAppend).
func BenchmarkOpenAddClose(b *testing.B) {
	ctx := context.Background()
	path := newStoreFile(b)
	timeEach(b, nil, func(i int) {
		s, err := Open(ctx, path, Options{})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.Add(ctx, benchEntry(i)); err != nil {
			b.Fatal(err)
		}
		s.Close()
	})
}

// newStoreFile makes an empty history database and returns its path.
func newStoreFile(b *testing.B) string {
	s := openTemp(b, Options{})
	s.Close()
	return s.Path()
}

// timeEach runs prep (untimed; nil for none) and op for each i in
// [0, b.N), and reports the median and 99th percentile of op's times.
func timeEach(b *testing.B, prep, op func(i int)) {
	times := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if prep != nil {
			prep(i)
		}
		t0 := time.Now()
		op(i)
		times = append(times, time.Since(t0))
	}
	b.StopTimer()
	reportPercentiles(b, times)
}

func reportPercentiles(b *testing.B, times []time.Duration) {
	if len(times) == 0 {
		return
	}
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Microseconds()), "median-µs")
	b.ReportMetric(float64(times[(len(times)*99)/100].Microseconds()), "p99-µs")
}

// BenchmarkSearch100k searches a store holding 100,000 calls (built once,
// in one transaction). Target: under 50 ms per search.
func BenchmarkSearch100k(b *testing.B) {
	ctx := context.Background()
	s := openTemp(b, Options{MaxRows: -1, MaxBytes: -1})
	const n = 100_000
	rng := rand.New(rand.NewPCG(1, 2))
	targets := []string{"beardog", "songbird", "nestgate", "toadstool", "squirrel", "rhizocrypt", "loamspine", "sweetgrass", "petaltongue", "biomeos"}
	domains := []string{"crypto", "storage", "discovery", "lifecycle", "ai", "dag", "health", "capability", "topology", "graph"}
	verbs := []string{"get", "put", "list", "sign", "verify", "status", "create", "delete", "peers", "liveness"}
	words := []string{"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet"}
	start := time.Now().Add(-30 * 24 * time.Hour)
	entries := make([]Entry, n)
	for i := range entries {
		e := Entry{
			Time:     start.Add(time.Duration(i) * 25 * time.Second),
			Duration: time.Duration(rng.IntN(50_000)) * time.Microsecond,
			Target:   targets[rng.IntN(len(targets))],
			Method:   domains[rng.IntN(len(domains))] + "." + verbs[rng.IntN(len(verbs))],
			Params: json.RawMessage(fmt.Sprintf(`{"name":"%s-%d","note":"%s %s","n":%d}`,
				words[rng.IntN(len(words))], i, words[rng.IntN(len(words))], words[rng.IntN(len(words))], i)),
			Result:  json.RawMessage(`{"ok":true,"value":"` + strings.Repeat("v", 200+rng.IntN(400)) + `"}`),
			Outcome: OutcomeOK,
			Source:  SourceCLI,
		}
		e.Endpoint = "unix:///run/user/1000/biomeos/" + e.Target + ".sock"
		if rng.IntN(20) == 0 {
			e.Result, e.Outcome = nil, OutcomeError
			e.Error = &RPCError{Code: -32601, Message: "Unknown method " + e.Method}
		}
		entries[i] = e
	}
	t0 := time.Now()
	if _, err := s.Add(ctx, entries...); err != nil {
		b.Fatal(err)
	}
	b.Logf("built %d calls in one transaction in %s", n, time.Since(t0).Round(time.Millisecond))
	entries = nil
	queries := []struct {
		name string
		q    Query
	}{
		{"newest-50", Query{}},
		{"text-common", Query{Text: "crypto"}},
		{"text-rare", Query{Text: "77777"}},
		{"text-two-words", Query{Text: "songbird bravo"}},
		{"text-prefix", Query{Text: "sto"}},
		{"text-error", Query{Text: "unknown method"}},
		{"text-no-match", Query{Text: "zzzzzz"}},
		{"filter-target-method", Query{Target: "nestgate", Method: "storage.get"}},
		{"filter-outcome-since", Query{Outcome: OutcomeError, Since: start.Add(20 * 24 * time.Hour)}},
		{"text-and-filters", Query{Text: "delta", Target: "beardog", Outcome: OutcomeOK}},
		{"text-with-results", Query{Text: "crypto", WithResults: true}},
	}
	for _, qc := range queries {
		b.Run(qc.name, func(b *testing.B) {
			timeEach(b, nil, func(int) {
				res, err := s.Search(ctx, qc.q)
				if err != nil {
					b.Fatal(err)
				}
				if qc.name != "text-no-match" && len(res) == 0 {
					b.Fatalf("%s: no results", qc.name)
				}
			})
		})
	}
}

// bigDoc is about size bytes of JSON made of many small objects.
func bigDoc(size int) json.RawMessage {
	var b strings.Builder
	b.WriteString(`{"items":[`)
	for i := 0; b.Len() < size; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":%d,"name":"item-%d","ok":%t,"score":%d.%d,"tag":null,"note":"small object"}`, i, i, i%2 == 0, i%100, i%10)
	}
	b.WriteString(`]}`)
	return json.RawMessage(b.String())
}

// BenchmarkJournalAppend measures what recording adds to a call on the
// CLI's path: cut, redact and write one journal record (no database). The
// 10MB case is an answer of 10 MB of small objects, stored cut to 4 MiB;
// 10MB-secret has params with a secret value, so the answer is also
// searched for it.
func BenchmarkJournalAppend(b *testing.B) {
	big := bigDoc(10 << 20)
	for _, c := range []struct {
		name   string
		params string
		result json.RawMessage
	}{
		{"oneshot", `{"message":"hello"}`, json.RawMessage(`{"status":"alive"}`)},
		{"10MB", `{"message":"hello"}`, big},
		{"10MB-secret", `{"password":"hunter2-secret"}`, big},
	} {
		b.Run(c.name, func(b *testing.B) {
			j := openJournal(b, filepath.Join(b.TempDir(), "history.db"), Options{})
			var e Entry
			timeEach(b, func(i int) {
				e = sample(i)
				e.Params, e.Result = json.RawMessage(c.params), c.result
			}, func(int) {
				if _, err := j.Append(e); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}

// BenchmarkFold measures folding 32 small journal records (what a call
// does after printing once the journal holds foldBacklog records),
// including opening the store as such a call does.
func BenchmarkFold(b *testing.B) { benchFold(b, 32, nil) }

// BenchmarkFoldLarge measures folding 16 journal records of a 10 MB answer
// (each cut to the 4 MiB entry limit): the fold that 64 MiB of backlog
// would cost, including opening the store.
func BenchmarkFoldLarge(b *testing.B) { benchFold(b, 16, bigDoc(10<<20)) }

// benchFold times opening the store and folding n journal records of
// benchEntry, with result as their result unless it is nil.
func benchFold(b *testing.B, n int, result json.RawMessage) {
	ctx := context.Background()
	path := newStoreFile(b)
	j := openJournal(b, path, Options{})
	timeEach(b, func(i int) {
		for k := 0; k < n; k++ {
			e := benchEntry(i*n + k)
			if result != nil {
				e.Result = result
			}
			j.Append(e)
		}
	}, func(int) {
		s, err := Open(ctx, path, Options{BusyTimeout: -1})
		if err != nil {
			b.Fatal(err)
		}
		if st, err := s.Fold(ctx, FoldOptions{NoWait: true}); err != nil || st.Folded != n {
			b.Fatal(st, err)
		}
		s.Close()
	})
}

// diffDocs returns a document of n records and the same with one record
// inserted at the front and one changed near the end.
func diffDocs(n int) (old, new []byte) {
	var a, b bytes.Buffer
	a.WriteString(`{"items":[`)
	b.WriteString(`{"items":[{"id":-1,"name":"inserted","tags":["x"]},`)
	for i := 0; i < n; i++ {
		if i > 0 {
			a.WriteByte(',')
			b.WriteByte(',')
		}
		fmt.Fprintf(&a, `{"id":%d,"name":"record %d","tags":["a","b"],"score":%d.5}`, i, i, i)
		score := i
		if i == n-10 {
			score++
		}
		fmt.Fprintf(&b, `{"id":%d,"name":"record %d","tags":["a","b"],"score":%d.5}`, i, i, score)
	}
	a.WriteString(`]}`)
	b.WriteString(`]}`)
	return a.Bytes(), b.Bytes()
}

// BenchmarkDiffLarge: a 100,000-record answer (about 7 MB) replayed with
// one record inserted at the front and one changed: two changes.
func BenchmarkDiffLarge(b *testing.B) {
	old, new := diffDocs(100000)
	b.SetBytes(int64(len(old) + len(new)))
	for b.Loop() {
		ch, err := Diff(old, new)
		if err != nil || len(ch) != 2 {
			b.Fatalf("%d changes, %v", len(ch), err)
		}
	}
}

// BenchmarkDiffAlignWorst: the costliest alignment within the bounds: two
// 10,000-element arrays whose middles differ in maxAlignEdits edits (512
// elements replaced, every other one of the middle 1,024).
func BenchmarkDiffAlignWorst(b *testing.B) {
	var x, y bytes.Buffer
	x.WriteByte('[')
	y.WriteByte('[')
	for i := 0; i < 10000; i++ {
		if i > 0 {
			x.WriteByte(',')
			y.WriteByte(',')
		}
		fmt.Fprintf(&x, "%d", i)
		if i >= 4488 && i < 5512 && i%2 == 0 {
			fmt.Fprintf(&y, "%d", -i)
		} else {
			fmt.Fprintf(&y, "%d", i)
		}
	}
	x.WriteByte(']')
	y.WriteByte(']')
	for b.Loop() {
		ch, err := Diff(x.Bytes(), y.Bytes())
		if err != nil || len(ch) != 512 || ch[0].Kind != Changed {
			b.Fatalf("%d changes (%v), %v", len(ch), ch[0], err)
		}
	}
}

// BenchmarkRedactSmallObjects4MiB redacts 4 MiB (the default entry limit)
// of an answer of many small objects, the shape of bench/ndjsonpeer's
// bench.sample: what recording a 10 MB answer scans on the call path.
func BenchmarkRedactSmallObjects4MiB(b *testing.B) {
	var doc bytes.Buffer
	doc.WriteString(`[`)
	for i := 0; doc.Len() < DefaultEntryLimit; i++ {
		if i > 0 {
			doc.WriteByte(',')
		}
		fmt.Fprintf(&doc, `{"id":%d,"name":"beta-%d","ok":%t,"load":%d.%d,"delta":%d,"parent":null,"state":"alive","tags":["iota","eta"],"note":"said \"hi\"\tat start"}`,
			i, i*7%100000, i%3 != 0, i%100, i%1000, i%2001-1000)
	}
	data := doc.Bytes()[:DefaultEntryLimit]
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if out := redactScan(data, nil, false, nil); len(out) != len(data) {
			b.Fatal("a document without secrets changed")
		}
	}
}
