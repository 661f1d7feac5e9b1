package history

import (
	"context"
	"errors"
	"sync"
	"testing"
)

func TestRecorderRecordsAndCloses(t *testing.T) {
	s := openTemp(t, Options{})
	ctx := testCtx(t)
	r := NewRecorder(s, RecorderOptions{})
	var ps []*Pending
	for i := 0; i < 300; i++ {
		ps = append(ps, r.Record(sample(i)))
	}
	if err := ps[len(ps)-1].Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(ctx); err != nil {
		t.Fatal(err)
	}
	seen := map[int64]bool{}
	for _, p := range ps {
		if err := p.Wait(ctx); err != nil {
			t.Fatal(err)
		}
		if p.ID() == 0 || seen[p.ID()] {
			t.Fatalf("bad or duplicate id %d", p.ID())
		}
		seen[p.ID()] = true
	}
	tot, _ := s.Totals(ctx)
	if tot.Rows != 300 {
		t.Errorf("%d rows, want 300", tot.Rows)
	}
	if err := r.Record(sample(1)).Wait(ctx); !errors.Is(err, ErrRecorderClosed) {
		t.Errorf("Record after Close: %v", err)
	}
	if err := r.Close(ctx); err != nil {
		t.Errorf("second Close: %v", err)
	}
	var nilRec *Recorder
	if err := nilRec.Record(sample(1)).Wait(ctx); !errors.Is(err, ErrDisabled) {
		t.Errorf("nil Recorder: %v", err)
	}
	if err := nilRec.Close(ctx); err != nil {
		t.Error(err)
	}
}

func TestRecorderConcurrentCallers(t *testing.T) {
	s := openTemp(t, Options{})
	ctx := testCtx(t)
	r := NewRecorder(s, RecorderOptions{})
	defer r.Close(ctx)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				if err := r.Record(sample(i)).Wait(ctx); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if tot, _ := s.Totals(ctx); tot.Rows != 400 {
		t.Errorf("%d rows, want 400", tot.Rows)
	}
}

// A store that fails under the recorder gives errors, never a panic or a
// blocked caller.
func TestRecorderFailingStore(t *testing.T) {
	s := openTemp(t, Options{})
	ctx := testCtx(t)
	var mu sync.Mutex
	var warned []error
	r := NewRecorder(s, RecorderOptions{OnError: func(err error) {
		mu.Lock()
		warned = append(warned, err)
		mu.Unlock()
	}})
	s.Close() // the database goes away under the recorder
	err := r.Record(sample(1)).Wait(ctx)
	if err == nil {
		t.Fatal("write to a closed store succeeded")
	}
	if err := r.Close(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(warned) == 0 {
		t.Error("OnError was not called")
	}
}

func TestRecorderQueueFull(t *testing.T) {
	s := openTemp(t, Options{})
	ctx := testCtx(t)
	// Hold the write lock from another connection so the writer is stuck.
	conn, err := s.db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := NewRecorder(s, RecorderOptions{QueueSize: 2})
	var full bool
	var ps []*Pending
	for i := 0; i < 10 && !full; i++ {
		p := r.Record(sample(i))
		select {
		case <-p.Done():
			full = errors.Is(p.Wait(ctx), ErrQueueFull)
		default:
			ps = append(ps, p)
		}
	}
	if !full {
		t.Error("a stuck writer never made Record report a full queue")
	}
	short, cancel := context.WithCancel(ctx)
	cancel()
	if err := ps[0].Wait(short); !errors.Is(err, context.Canceled) {
		t.Errorf("Wait with a cancelled context: %v", err)
	}
	tx.Rollback()
	conn.Close()
	for _, p := range ps {
		if err := p.Wait(ctx); err != nil {
			t.Error(err)
		}
	}
	if err := r.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestRecorderCloseGivesUp(t *testing.T) {
	s := openTemp(t, Options{})
	ctx := testCtx(t)
	conn, _ := s.db.Conn(ctx)
	tx, err := conn.BeginTx(ctx, nil) // the writer will wait on this lock
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	defer tx.Rollback()
	r := NewRecorder(s, RecorderOptions{})
	p := r.Record(sample(1))
	short, cancel := context.WithCancel(ctx)
	cancel()
	if err := r.Close(short); !errors.Is(err, context.Canceled) {
		t.Errorf("Close = %v", err)
	}
	if err := p.Wait(ctx); err == nil {
		t.Error("entry reported written while the lock was held")
	}
}
