#!/usr/bin/env bash
# Run every fuzz target (or the ones named) for a while, a few at a time, and
# fold what the fuzzer found into the checked-in seed corpora, which CI replays
# as ordinary tests.
#
#   scripts/fuzz.sh                       # every target, 10 minutes each, 2 at a time
#   FUZZTIME=1m JOBS=4 scripts/fuzz.sh    # shorter, more at once
#   scripts/fuzz.sh FuzzReadFrame FuzzInspect ./internal/config:FuzzParse
#
# A bare name runs that target in every package that has it; pkg:Target
# names the package by its path from the module root (ipc/sse:FuzzReader).
#
# Logs go to fuzz-out/<pkg>.<Target>.log, one summary line a target to
# fuzz-out/summary.txt. A crasher is written by go test to
# <pkg>/testdata/fuzz/<Target>/ and makes this script exit 1.
set -uo pipefail
cd "$(dirname "$0")/.."

FUZZTIME=${FUZZTIME:-10m}
JOBS=${JOBS:-2}
OUT=${OUT:-fuzz-out}
mkdir -p "$OUT"

# pkg:Target for every fuzz target in the module.
all_targets() {
  grep -rl --include='*_test.go' '^func Fuzz' . | while read -r f; do
    pkg=$(dirname "$f")
    grep -o '^func Fuzz[A-Za-z0-9_]*' "$f" | sed "s|^func |$pkg:|"
  done | sort
}

targets=()
if [ $# -gt 0 ]; then
  for name in "$@"; do
    # A bare name matches that target in every package; pkg:Name picks one.
    mapfile -t found < <(all_targets | grep -E "(^|:)${name#./}\$|^\./${name#./}\$" || true)
    [ ${#found[@]} -gt 0 ] || { echo "no fuzz target $name" >&2; exit 2; }
    targets+=("${found[@]}")
  done
else
  mapfile -t targets < <(all_targets)
fi
mapfile -t targets < <(printf '%s\n' "${targets[@]}" | sort -u) # each once
: >"$OUT/summary.txt"

cache=$(go env GOCACHE)/fuzz/$(go list -m)
module=$(go list -m)

run_one() {
  local pkg=${1%%:*} name=${1##*:}
  local rel=${pkg#./}
  local log="$OUT/${rel//\//.}.$name.log" # two packages may have a target of one name
  local start=$SECONDS
  go test -run '^$' -fuzz "^${name}\$" -fuzztime "$FUZZTIME" -parallel 1 "$pkg" >"$log" 2>&1
  local rc=$?
  local execs
  execs=$(grep -o 'execs: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  # Fold the generated corpus (inputs that widened coverage) into testdata.
  local gen="$cache/$rel/$name"
  local dst="$pkg/testdata/fuzz/$name"
  local added=0
  if [ -d "$gen" ]; then
    mkdir -p "$dst"
    for f in "$gen"/*; do
      [ -e "$f" ] || continue
      if [ ! -e "$dst/$(basename "$f")" ]; then cp "$f" "$dst/"; added=$((added + 1)); fi
    done
  fi
  local verdict=ok
  [ $rc -eq 0 ] || verdict="FAIL(rc=$rc)"
  printf '%s %s %s secs=%d execs=%s corpus_added=%d\n' \
    "$verdict" "$module/$rel" "$name" $((SECONDS - start)) "${execs:-?}" "$added" | tee -a "$OUT/summary.txt"
  return $rc
}

failed=0
running=0
for t in "${targets[@]}"; do
  run_one "$t" &
  running=$((running + 1))
  if [ $running -ge "$JOBS" ]; then
    wait -n || failed=1
    running=$((running - 1))
  fi
done
while [ $running -gt 0 ]; do
  wait -n || failed=1
  running=$((running - 1))
done
exit $failed
