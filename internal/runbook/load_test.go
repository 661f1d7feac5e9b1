package runbook

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeBook(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Books that include the next one twice, ten deep, make 2,046 includes:
// one Load stops at 256 in all (the depth limit alone let 16 levels burn a
// core for minutes).
func TestLoadCapsIncludesInAll(t *testing.T) {
	dir := t.TempDir()
	const depth = 10
	for i := 0; i < depth; i++ {
		writeBook(t, filepath.Join(dir, fmt.Sprintf("b%d.yaml", i)),
			fmt.Sprintf("name: l%d\nsteps:\n  - include: b%d.yaml\n  - include: b%d.yaml\n", i, i+1, i+1))
	}
	writeBook(t, filepath.Join(dir, fmt.Sprintf("b%d.yaml", depth)), "name: leaf\nsteps: []\n")
	_, err := Load(filepath.Join(dir, "b0.yaml"))
	var be *BookError
	if !errors.As(err, &be) || !strings.Contains(be.Msg, "more than 256 includes") {
		t.Fatalf("want the include cap, got %v", err)
	}
}

// The bytes read for one Load are capped in all (16 MiB), each file
// below the per-book cap.
func TestLoadCapsBytesInAll(t *testing.T) {
	dir := t.TempDir()
	big := "name: leaf\nsteps: []\n" + strings.Repeat("# "+strings.Repeat("x", 1000)+"\n", 3500)
	var root strings.Builder
	root.WriteString("steps:\n")
	for i := 0; i < 5; i++ {
		writeBook(t, filepath.Join(dir, fmt.Sprintf("big%d.yaml", i)), big)
		fmt.Fprintf(&root, "  - include: big%d.yaml\n", i)
	}
	writeBook(t, filepath.Join(dir, "root.yaml"), root.String())
	_, err := Load(filepath.Join(dir, "root.yaml"))
	var be *BookError
	if !errors.As(err, &be) || !strings.Contains(be.Msg, "in all") {
		t.Fatalf("want the bytes cap, got %v", err)
	}
}

// A book included several times is read and parsed once per Load; each
// inclusion still gets its own steps and vars.
func TestLoadReadsEachIncludedBookOnce(t *testing.T) {
	dir := t.TempDir()
	leaf := "vars: {v: leaf}\nsteps:\n  - call: t m\n    params: {v: \"{{ .vars.v }}\"}\n"
	root := "steps:\n  - include: leaf.yaml\n    vars: {v: one}\n  - include: leaf.yaml\n    vars: {v: two}\n  - include: leaf.yaml\n"
	writeBook(t, filepath.Join(dir, "leaf.yaml"), leaf)
	writeBook(t, filepath.Join(dir, "root.yaml"), root)
	l := newLoader()
	b, err := l.load(filepath.Join(dir, "root.yaml"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(len(leaf) + len(root)); l.bytes != want {
		t.Errorf("read %d bytes, want %d (the leaf once)", l.bytes, want)
	}
	if len(b.Steps) != 3 {
		t.Fatalf("%d steps, want 3", len(b.Steps))
	}
	for i, want := range []string{"one", "two", "leaf"} {
		if got := b.Steps[i].Vars["v"]; got != want {
			t.Errorf("step %d reads v=%v, want %s", i, got, want)
		}
	}
	if b.Steps[0] == b.Steps[1] {
		t.Error("two inclusions share one step")
	}
}
