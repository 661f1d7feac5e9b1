package main

import (
	"context"
	"errors"
)

// runTUI starts the terminal UI over the ecosystem the flags describe.
func (a *app) runTUI(ctx context.Context, demo bool) error {
	return usageErr(errors.New("the terminal UI is not part of this build yet: use ls, caps, call (see --help)"))
}
