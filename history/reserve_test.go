package history

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// TestReservationAppend: a reserved record is invisible to folds until its
// entry is appended; it is then a record like any other, redacted and cut
// as Journal.Append does, and found by its id after a fold. A reservation
// takes one entry.
func TestReservationAppend(t *testing.T) {
	ctx := testCtx(t)
	path := filepath.Join(t.TempDir(), "history.db")
	const seed = "family-seed-0123456789"
	opts := Options{Secrets: []string{seed}}
	j := openJournal(t, path, opts)
	r, err := j.Reserve()
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := j.Pending(); n != 0 {
		t.Fatalf("a reservation counts as %d pending records", n)
	}
	recs := journalFiles(t, j.Dir(), recordExt)
	hidden, _ := filepath.Glob(filepath.Join(j.Dir(), tmpPrefix+"*"))
	if len(recs) != 0 || len(hidden) != 1 {
		t.Fatalf("files after Reserve: records %v, temporary %v", recs, hidden)
	}
	s, err := Open(ctx, path, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if st, err := s.Fold(ctx, FoldOptions{}); err != nil || st.Folded != 0 || len(st.SetAside) != 0 {
		t.Fatalf("a fold touched the reservation: %+v %v", st, err)
	}

	e := sample(0)
	e.Params = json.RawMessage(`{"password":"hunter2-hunter2","note":"` + seed + `"}`)
	e.Error = &RPCError{Code: -32602, Message: "invalid params: hunter2-hunter2"}
	e.Result, e.Outcome = nil, OutcomeError
	id, err := r.Append(e)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Append(sample(1)); !errors.Is(err, ErrReservationUsed) {
		t.Fatalf("second Append: %v, want ErrReservationUsed", err)
	}
	r.Release() // after Append: nothing to do
	if n, _ := j.Pending(); n != 1 {
		t.Fatalf("Pending = %d after Append", n)
	}
	if st, err := s.Fold(ctx, FoldOptions{}); err != nil || st.Folded != 1 {
		t.Fatalf("Fold = %+v %v", st, err)
	}
	got, err := s.GetRecord(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	// The same entry through Journal.Append, for comparison.
	id2, err := j.Append(e)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Fold(ctx, FoldOptions{}); err != nil {
		t.Fatal(err)
	}
	want, err := s.GetRecord(ctx, id2)
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Params) != string(want.Params) || got.Error.Message != want.Error.Message || got.Method != want.Method || !got.Time.Equal(want.Time) {
		t.Fatalf("reserved record %+v\nappended record %+v", got, want)
	}
	for _, stored := range []string{string(got.Params), got.Error.Message} {
		if strings.Contains(stored, "hunter2") || strings.Contains(stored, seed) {
			t.Fatalf("a secret was stored: %s", stored)
		}
	}
	if left := journalFiles(t, j.Dir(), ""); len(left) != 0 {
		t.Fatalf("left in the journal: %v", left)
	}
}

// TestReservationRelease: a reservation released unused leaves nothing.
func TestReservationRelease(t *testing.T) {
	j := openJournal(t, filepath.Join(t.TempDir(), "history.db"), Options{})
	r, err := j.Reserve()
	if err != nil {
		t.Fatal(err)
	}
	r.Release()
	r.Release()
	if all, _ := filepath.Glob(filepath.Join(j.Dir(), "*")); len(all) != 0 {
		t.Fatalf("left: %v", all)
	}
	if _, err := r.Append(sample(0)); !errors.Is(err, ErrReservationUsed) {
		t.Fatalf("Append after Release: %v", err)
	}
}
