package ipc

import (
	"runtime"
	"sync"

	"github.com/ecoPrimals/primalscope/internal/jsoncut"
)

// A large member value (a 10 MB result) is checked on several cores: the
// container is cut into runs of elements (jsoncut) and each run is checked
// by skipValue on a goroutine of its own, while the cut goes on. The runs
// all check whole and the closer is the opener's only when the container
// does: a run that checks whole ends after a complete element, so the next
// run starts at one, from the first (right after the opener) on. When a
// run does not check, or the cut stops, the one scan decides, as before,
// so the verdicts are the one scan's (TestParallelSkipMatchesTheOneScan,
// FuzzParallelSkipMatchesTheOneScan).
const (
	parallelScanMin  = 2 << 20   // smaller values are checked on one goroutine
	scanPartSize     = 256 << 10 // a run ends at the first comma after this many bytes
	scanMaxPart      = 1 << 20   // a longer run stops the cut: the one scan decides
	maxScanCheckers  = 4         // goroutines checking runs, at most
	scanCheckerQueue = 8         // runs cut and not yet taken
)

// skipMemberValue is skipValue(b, i, 1) for a top-level member's value,
// checking a large array or object on several goroutines.
func skipMemberValue(b []byte, i int) (int, error) {
	if len(b)-i >= parallelScanMin && (b[i] == '[' || b[i] == '{') {
		if n := min(runtime.GOMAXPROCS(0), maxScanCheckers); n > 1 {
			if end, ok := skipParallel(b, i, 2, n, scanPartSize, scanMaxPart); ok {
				return end, nil
			}
		}
	}
	return skipValue(b, i, 1)
}

// skipParallel returns the index after the container at b[i], nested
// depth deep (as skipContainer takes it), and true when it checks whole;
// false says nothing (the caller scans it on one goroutine). n goroutines
// check runs of about size bytes, at most most.
func skipParallel(b []byte, i, depth, n, size, most int) (int, bool) {
	open := b[i]
	jobs := make(chan jsoncut.Part, scanCheckerQueue)
	quit := make(chan struct{})
	var (
		failOnce sync.Once
		failed   bool // written under failOnce, read after wg.Wait
		wg       sync.WaitGroup
	)
	fail := func() { failOnce.Do(func() { failed = true; close(quit) }) }
	wg.Add(n)
	for range n {
		go func() {
			defer wg.Done()
			for pt := range jobs {
				select {
				case <-quit:
					continue
				default:
				}
				if !checkRun(b[:pt.End], pt.At, open, depth) {
					fail()
				}
			}
		}()
	}
	end := -1
	jsoncut.Cut(b, i+1, size, most, quit, func(pt jsoncut.Part) bool {
		if pt.Stop || (pt.Last && b[pt.End] != closerOf(open)) {
			fail()
			return false
		}
		if pt.Last {
			end = pt.End + 1
		}
		select {
		case jobs <- pt:
			return true
		case <-quit:
			return false
		}
	})
	close(jobs)
	wg.Wait()
	if failed || end < 0 {
		return 0, false
	}
	return end, true
}

// checkRun reports whether b from at (to its end) is a run of elements of
// a container opened by open, nested depth deep, separated by commas,
// whitespace around them allowed: members for an object, values for an
// array.
func checkRun(b []byte, at int, open byte, depth int) bool {
	j := skipWS(b, at)
	for {
		if open == '{' {
			if j >= len(b) || b[j] != '"' {
				return false
			}
			k, _, err := skipString(b, j)
			if err != nil {
				return false
			}
			if j = skipWS(b, k); j >= len(b) || b[j] != ':' {
				return false
			}
			j = skipWS(b, j+1)
		}
		k, err := skipValue(b, j, depth)
		if err != nil {
			return false
		}
		if j = skipWS(b, k); j == len(b) {
			return true
		}
		if b[j] != ',' {
			return false
		}
		j = skipWS(b, j+1)
	}
}
