package discovery

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/ecoPrimals/primalscope/ipc"
)

// TestKeyerIsEndpointKey: merge's keys (a lstat a socket, each folder
// resolved once) are EndpointKey's, for a socket in a folder reached
// through a link, a socket that is a link, a missing one, a relative
// path, a pool and a TCP endpoint.
func TestKeyerIsEndpointKey(t *testing.T) {
	root := tempDir(t)
	real := filepath.Join(root, "real", "run")
	if err := os.MkdirAll(real, 0o700); err != nil {
		t.Fatal(err)
	}
	via := filepath.Join(root, "via")
	if err := os.Symlink(filepath.Join(root, "real"), via); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"a.sock", "b.sock"} {
		if err := os.WriteFile(filepath.Join(real, n), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(real, "a.sock"), filepath.Join(real, "link.sock")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../run/b.sock", filepath.Join(real, "rel.sock")); err != nil {
		t.Fatal(err)
	}
	wd, _ := os.Getwd()
	rel, err := filepath.Rel(wd, filepath.Join(via, "run", "b.sock"))
	if err != nil {
		t.Fatal(err)
	}
	unix := func(p string) ipc.Endpoint { return ipc.Endpoint{Transport: ipc.Unix, Path: p} }
	eps := []ipc.Endpoint{
		unix(filepath.Join(real, "a.sock")), unix(filepath.Join(via, "run", "a.sock")),
		unix(filepath.Join(via, "run", "link.sock")), unix(filepath.Join(via, "run", "rel.sock")),
		unix(filepath.Join(via, "run", "missing.sock")), unix(filepath.Join(root, "nodir", "x.sock")),
		unix(filepath.Join(via, "run", ".", "b.sock")), unix(rel), unix("/"),
		{Transport: ipc.TCP, Address: "localhost:7000"},
	}
	k := newKeyer()
	for _, ep := range eps {
		for _, pool := range []string{"", "p1"} {
			if got, want := k.key(ep, pool), EndpointKey(ep, pool); got != want {
				t.Errorf("%s (pool %q): key %q, EndpointKey %q", ep, pool, got, want)
			}
		}
	}
	if got, want := k.key(unix(filepath.Join(via, "run", "a.sock")), ""), "unix:"+filepath.Join(real, "a.sock"); got != want {
		t.Errorf("through the folder's link: %q, want %q", got, want)
	}
}

// TestMergeResolvesEachFolderOnce: merging a sweep's sightings of 200
// sockets costs a lstat each, not one a step of each path (EvalSymlinks
// at every sweep for every socket of a 2,000-socket folder), nor its
// allocations.
func TestMergeResolvesEachFolderOnce(t *testing.T) {
	dir := filepath.Join(tempDir(t), "run", "user", "1000", "biomeos")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	var found []Found
	for i := 0; i < 200; i++ {
		p := filepath.Join(dir, fmt.Sprintf("p%03d.sock", i))
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		found = append(found, Found{Source: SrcSocketDir, Name: fmt.Sprintf("p%03d", i), Endpoint: ipc.Endpoint{Transport: ipc.Unix, Path: p}})
	}
	k := newKeyer()
	for _, f := range found {
		k.key(f.Endpoint, "")
	}
	if k.lstats != len(found) {
		t.Errorf("%d lstats for %d sockets, want one each", k.lstats, len(found))
	}
	n := testing.AllocsPerRun(5, func() {
		if ts := merge(found); len(ts) != len(found) {
			t.Fatalf("%d targets", len(ts))
		}
	})
	t.Logf("merge of %d sockets: %v allocations", len(found), n)
	if n > maxMergeAllocs {
		t.Errorf("merge of %d sockets: %v allocations, want at most %d", len(found), n, maxMergeAllocs)
	}
}

// maxMergeAllocs: 2,056 measured, 7,034 when each key resolved its whole
// path (EvalSymlinks).
const maxMergeAllocs = 3000
