package ipc

import (
	"errors"
	"os"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/ecoPrimals/primalscope/internal/statedir"
)

// TestOwnRegularIsUnsafe: a record that is no regular file, or another
// user's, is refused with an error that matches statedir.ErrUnsafe, as
// every other refusal of the state-folder rule does.
func TestOwnRegularIsUnsafe(t *testing.T) {
	me := uint32(os.Getuid())
	other := uint32(65534)
	if me == other {
		other = 65533
	}
	for _, tc := range []struct {
		what string
		st   unix.Stat_t
	}{
		{"a named pipe", unix.Stat_t{Mode: unix.S_IFIFO | 0o600, Uid: me}},
		{"a directory", unix.Stat_t{Mode: unix.S_IFDIR | 0o700, Uid: me}},
		{"another user's file", unix.Stat_t{Mode: unix.S_IFREG | 0o600, Uid: other}},
	} {
		err := ownRegular("endpoints.d/ab/rec.json", &tc.st)
		if !errors.Is(err, statedir.ErrUnsafe) {
			t.Errorf("%s: %v, want an error matching statedir.ErrUnsafe", tc.what, err)
		}
	}
	if err := ownRegular("endpoints.d/ab/rec.json", &unix.Stat_t{Mode: unix.S_IFREG | 0o600, Uid: me}); err != nil {
		t.Errorf("the user's regular file: %v", err)
	}
}
