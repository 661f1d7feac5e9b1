package ipc

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestLongLineBufferTakesHugePages checks that a buffer of several MiB
// given hintHuge is backed by huge pages once touched, where the kernel
// gives them on request (transparent huge pages "madvise" or "always"):
// without the hint, on "madvise", it takes one page fault per 4 KiB.
func TestLongLineBufferTakesHugePages(t *testing.T) {
	mode, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled")
	if err != nil || bytes.Contains(mode, []byte("[never]")) {
		t.Skipf("transparent huge pages are off here (%q, %v)", mode, err)
	}
	// Fresh memory, as a new reservation of the heap is: a make here could
	// reuse heap pages earlier tests have touched (4 KiB each already).
	b, err := unix.Mmap(-1, 0, 12<<20, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(b)
	hintHuge(b)
	for i := 0; i < len(b); i += 4096 {
		b[i] = 1
	}
	// The hinted part: from the first 2 MiB boundary in the buffer.
	addr := (uintptr(unsafe.Pointer(unsafe.SliceData(b))) + hugePage) &^ (hugePage - 1)
	kb, err := anonHugeKB(addr)
	if err != nil {
		t.Fatal(err)
	}
	if kb < 4<<10 {
		t.Fatalf("the 12 MiB buffer holds %d KiB of huge pages, want at least 4 MiB", kb)
	}
}

// anonHugeKB returns the AnonHugePages of the mapping holding addr.
func anonHugeKB(addr uintptr) (int, error) {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	in := false
	for sc.Scan() {
		line := sc.Text()
		var lo, hi uintptr
		if n, _ := fmt.Sscanf(line, "%x-%x", &lo, &hi); n == 2 && strings.Contains(line, " ") {
			in = lo <= addr && addr < hi
			continue
		}
		if in && strings.HasPrefix(line, "AnonHugePages:") {
			var kb int
			fmt.Sscanf(strings.TrimPrefix(line, "AnonHugePages:"), "%d", &kb)
			return kb, nil
		}
	}
	return 0, fmt.Errorf("no mapping holds %#x", addr)
}
