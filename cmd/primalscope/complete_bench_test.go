package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// benchComplete runs `__complete ARGS...` in-process and fails on an error.
func benchComplete(b *testing.B, env map[string]string, args ...string) {
	var out, errb bytes.Buffer
	code := run(context.Background(), append([]string{"__complete"}, args...), &stdio{in: strings.NewReader(""), out: &out, err: &errb},
		func(k string) string { return env[k] }, nil)
	if code != 0 || !strings.Contains(out.String(), "beardog") && !strings.Contains(out.String(), "crypto.") {
		b.Fatalf("exit %d: %s %s", code, out.String(), errb.String())
	}
}

// BenchmarkCompleteTargetCached is a TARGET completion served from a fresh
// cache: what most Tab presses cost (plus process start).
func BenchmarkCompleteTargetCached(b *testing.B) {
	dir, _ := shellPeers(b)
	env := map[string]string{"HOME": b.TempDir(), "XDG_CACHE_HOME": b.TempDir(), "PRIMALSCOPE_COMPLETE_SYNC": "1"}
	benchComplete(b, env, "call", "--socket-dir="+dir, "")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		benchComplete(b, env, "call", "--socket-dir="+dir, "bear")
	}
}

// BenchmarkCompleteTargetCold is a TARGET completion with no cache: a sweep
// cut at the 250 ms budget (the silent socket holds it to the budget).
func BenchmarkCompleteTargetCold(b *testing.B) {
	dir, _ := shellPeers(b)
	cache := b.TempDir()
	env := map[string]string{"HOME": b.TempDir(), "XDG_CACHE_HOME": cache, "PRIMALSCOPE_COMPLETE_SYNC": "1"}
	for i := 0; i < b.N; i++ {
		os.RemoveAll(filepath.Join(cache, "primalscope"))
		benchComplete(b, env, "call", "--socket-dir="+dir, "bear")
	}
}

// BenchmarkCompleteMethodByPath is a METHOD completion of a target given by
// path: one capabilities.list, no sweep.
func BenchmarkCompleteMethodByPath(b *testing.B) {
	_, beardog := shellPeers(b)
	env := map[string]string{"HOME": b.TempDir(), "XDG_CACHE_HOME": b.TempDir(), "PRIMALSCOPE_COMPLETE_SYNC": "1"}
	for i := 0; i < b.N; i++ {
		benchComplete(b, env, "call", beardog.Path, "crypto.")
	}
}
