#!/usr/bin/env bash
# Issue 24's whole-process goals, one command: key to screen and CPU of the
# TUI with 2,000 targets listed and 10,000 notifications a second (see
# bench/flood/main.go for what is measured and how).
#
#   bash bench/tui-flood.sh            # this tree
#   BASE=79650a4 bash bench/tui-flood.sh   # and that commit, alternately
#
#   ROUNDS=N   rounds (default 2); with BASE, each round runs BASE then this tree
#   ARGS="..." extra flags for bench/flood (-n 30, -cpu 10s, -targets, -rate, -show)
#
# The binaries are the static ones README installs (CGO_ENABLED=0), run on
# the default path (`primalscope --socket-dir DIR`: history on, default
# theme, fresh HOME and XDG directories). It needs tmux. It removes what it
# builds (and the worktree of BASE) when it ends.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-2}
work=$(mktemp -d "${TMPDIR:-/tmp}/ps-flood.XXXXXX")
cleanup() {
  if [ -n "${BASE:-}" ] && [ -d "$work/base" ]; then git worktree remove --force "$work/base" >/dev/null 2>&1 || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
CGO_ENABLED=0 go build -o "$work/primalscope" ./cmd/primalscope
go build -o "$work/flood" ./bench/flood
bins=("$work/primalscope")
if [ -n "${BASE:-}" ]; then
  git worktree add --quiet --detach "$work/base" "$BASE" >/dev/null
  (cd "$work/base" && CGO_ENABLED=0 go build -o "$work/primalscope-base" ./cmd/primalscope)
  bins=("$work/primalscope-base" "$work/primalscope")
fi
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); $(go version)"
for ((r = 1; r <= ROUNDS; r++)); do
  for b in "${bins[@]}"; do
    echo "=== round $r: $(basename "$b") ($(date +%T), load $(cut -d' ' -f1-3 /proc/loadavg))"
    # shellcheck disable=SC2086
    "$work/flood" -bin "$b" ${ARGS:-}
  done
done
