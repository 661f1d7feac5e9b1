package history

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"
)

// TestBusyWaitEndsWithDeadline: another process holds the write lock; a
// reader opens the store and searches at once (WAL readers do not wait for
// writers), and a write with a 300 ms deadline ends near it, not after the
// 5 s busy timeout (--timeout bounds the whole command: the driver
// interrupts the busy wait when ctx ends).
func TestBusyWaitEndsWithDeadline(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.db")
	bg := context.Background()
	s, err := Open(bg, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Add(bg, sample(1)); err != nil {
		t.Fatal(err)
	}
	s.Close()

	// The lock holder, as another process would hold it.
	other, err := sql.Open("sqlite", dsn(path, time.Second, false))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	conn, err := other.Conn(bg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(bg, "BEGIN EXCLUSIVE"); err != nil {
		t.Fatal(err)
	}
	defer conn.ExecContext(bg, "ROLLBACK")

	for _, step := range []string{"open and search", "add"} {
		ctx, cancel := context.WithTimeout(bg, 300*time.Millisecond)
		start := time.Now()
		s, err := Open(ctx, path, Options{})
		if err == nil {
			if step == "add" {
				_, err = s.Add(ctx, sample(2))
			} else {
				_, err = s.Search(ctx, Query{Limit: 10})
			}
			s.Close()
		}
		cancel()
		if d := time.Since(start); d > 1500*time.Millisecond {
			t.Errorf("%s: ended %v after a 300 ms deadline (err %v)", step, d, err)
		}
		if step == "add" && err == nil {
			t.Errorf("%s: no error under another process's exclusive lock", step)
		}
		if step != "add" && err != nil {
			t.Errorf("%s: a reader waited for the writer: %v", step, err)
		}
	}
}
