package main

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// bigPipe is the pipe buffer asked for before a large answer is written
// to a pipe: the most an unprivileged process may set (fs.pipe-max-size,
// 1 MiB by default), 16 times the default 64 KiB.
const bigPipe = 1 << 20

// growPipe raises the buffer of the pipe w writes to (when it is one) to
// bigPipe, before an answer of size bytes is printed into it: 16 MB of
// printed answer through a 64 KiB pipe stops the printer some 250 times
// to let the reader catch up, a context switch each way each time. A
// pipe that cannot grow (a reader holding many pipes, a lower limit) stays
// as it is.
func growPipe(w io.Writer, size int) {
	if size < 4*bigPipe {
		return
	}
	f, ok := stream(w).(*os.File)
	if !ok {
		return
	}
	fd := int(f.Fd())
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFIFO {
		return
	}
	if cur, err := unix.FcntlInt(uintptr(fd), unix.F_GETPIPE_SZ, 0); err == nil && cur < bigPipe {
		_, _ = unix.FcntlInt(uintptr(fd), unix.F_SETPIPE_SZ, bigPipe)
	}
}
