#!/usr/bin/env bash
# Whole-process comparisons on the DEFAULT path, one command:
#
#   bash bench/run.sh
#
#   RUNS=N               runs per command (default 30; medians)
#   PRIMALSCOPE_BIN=path measure this binary instead of building one
#
# What a user runs: `primalscope call SOCK METHOD` with no extra flags, so
# history is on (written under a fresh, temporary HOME/XDG_STATE_HOME that
# the script removes) and the riboCipher prefix mode is the default
# (--prefix auto). The peer is not the demo: bench/ndjsonpeer, a plain
# line-oriented NDJSON JSON-RPC server written from the IPC standard, which
# answers raw JSON, knows nothing of the riboCipher prefix and skips lines it
# cannot parse without a word, as many real servers do. Its bench.sample
# method answers about 10 MB of small objects (numbers, booleans, nulls,
# strings).
#
# Rows (medians of hyperfine runs; the commands of a comparison are timed in
# interleaved rounds, so they share the machine's load as it drifts):
#   1. one-shot `call health.liveness` against `printf ... | socat`;
#   2. the 10 MB answer printed with --color always against `jq -C .` on the
#      same bytes (the peer's answer saved to a file);
#   3. the 10 MB answer piped (no colour) against `jq .`;
#   4. `ls` over 200 sockets (100 live, 50 stale, 50 dead).
# Rows 1-3 are printed for the default path first and for --no-history as a
# second, labelled row. A command that fails its check before timing (it
# exits non-zero, or takes more than 60 s) is reported as failing, not timed;
# the call rows are then also timed with --prefix off, labelled as not the
# default path, so the start-up cost can still be followed.
#
# It installs socat, jq and hyperfine with apt-get when missing (as root, or
# through sudo), ends by itself, stops the processes it started and removes
# its temporary directory.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-30}

need=()
command -v socat >/dev/null || need+=(socat)
command -v jq >/dev/null || need+=(jq)
command -v hyperfine >/dev/null || need+=(hyperfine)
if [ ${#need[@]} -gt 0 ]; then
  echo "installing ${need[*]}" >&2
  sudo=()
  [ "$(id -u)" = 0 ] || sudo=(sudo)
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq "${need[@]}" >/dev/null
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/ps-bench.XXXXXX")
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Build with what a user's `go build` uses: no flags, no tags.
if [ -n "${PRIMALSCOPE_BIN:-}" ]; then
  ps=$(realpath "$PRIMALSCOPE_BIN")
  built="given: $PRIMALSCOPE_BIN"
else
  go build -o "$work/primalscope" ./cmd/primalscope
  ps="$work/primalscope"
  built="go build ./cmd/primalscope at $(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet 2>/dev/null || echo '+changes')"
fi
go build -o "$work/ndjsonpeer" ./bench/ndjsonpeer
go build -o "$work/sockets" ./bench/sockets
gov=$(go version | cut -d' ' -f3)

# A fresh user: history and endpoint memory start empty, in $work.
export HOME="$work/home" XDG_STATE_HOME="$work/home/.local/state" XDG_CONFIG_HOME="$work/home/.config"
mkdir -p "$HOME"
unset PRIMALSCOPE_HISTORY FAMILY_ID BIOMEOS_FAMILY_ID FAMILY_SEED NO_COLOR CLICOLOR_FORCE || true

mkdir -p "$work/run"
sock="$work/run/plainpeer.sock"
"$work/ndjsonpeer" -socket "$sock" >"$work/peer.out" 2>"$work/peer.err" & pids+=($!)
for _ in $(seq 200); do [ -s "$work/peer.out" ] && break; sleep 0.05; done
[ -S "$sock" ] || { echo "the NDJSON peer did not start: $(cat "$work/peer.err")" >&2; exit 1; }

req='{"jsonrpc":"2.0","method":"health.liveness","id":1}'
big='{"jsonrpc":"2.0","method":"bench.sample","id":1}'
socat_cmd="printf '%s\n' '$req' | socat - UNIX-CONNECT:$sock"
sh -c "$socat_cmd" | grep -q alive || { echo "socat could not reach the peer" >&2; exit 1; }
printf '%s\n' "$big" | socat -t 5 - "UNIX-CONNECT:$sock" >"$work/big.json"
bigsize=$(wc -c <"$work/big.json")

load0=$(cut -d' ' -f1-3 /proc/loadavg)
echo "primalscope: $built"
echo "peer: bench/ndjsonpeer (raw NDJSON, skips unparseable lines); 10 MB answer: ${bigsize} bytes on the wire"
echo "runs: about $RUNS per command, in interleaved rounds of 3 (hyperfine; medians; shell start-up subtracted by hyperfine)"
echo

# works CMD: the command exits 0 within 60 s (checked once before timing).
works() { timeout 60 sh -c "$1" >/dev/null 2>"$work/check.err"; }
# median of a file of times in seconds, printed in ms
median_ms() { sort -g "$1" | awk '{a[NR]=$1} END {printf "%.2f", a[int((NR+1)/2)] * 1000}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
row() { printf '%-52s %9.1f ms  %-10s %9.1f ms  %6sx\n' "$1" "$2" "$3" "$4" "$(ratio "$2" "$4")"; }

# compare REF_NAME REF_CMD OUTPUT LABEL CMD [LABEL CMD ...]: times the
# primalscope commands and the reference in rounds of 3 runs each (hyperfine,
# one warm-up run per command and round, the order rotated every round) so
# that all of them share the machine's load as it drifts, then prints the
# median of all runs of each and its ratio to the reference's. A command
# that fails its check is reported and left out.
compare() {
  local ref_name=$1 ref_cmd=$2 output=$3; shift 3
  local labels=() cmds=()
  while [ $# -gt 0 ]; do
    if works "$2"; then labels+=("$1"); cmds+=("$2")
    else
      local rc=$?
      printf '%-52s FAILS: exit %s%s\n' "$1" "$rc" "$( [ "$rc" = 124 ] && echo ' (still running after 60 s)' || echo ": $(tail -1 "$work/check.err")")"
    fi
    shift 2
  done
  [ ${#cmds[@]} -gt 0 ] || return 0
  local all=("${cmds[@]}" "$ref_cmd") n k r
  n=${#all[@]}
  for k in $(seq 0 $((n - 1))); do : >"$work/times.$k"; done
  for r in $(seq $(( (RUNS + 2) / 3 ))); do
    local order=() list=()
    for k in $(seq 0 $((n - 1))); do order+=($(( (k + r) % n ))); list+=("${all[$(( (k + r) % n ))]}"); done
    hyperfine -S sh --style none --output="$output" -w 1 -r 3 --export-json "$work/hf.json" "${list[@]}" >/dev/null 2>"$work/hf.err" ||
      { echo "hyperfine failed: $(tail -3 "$work/hf.err")" >&2; return 0; }
    for k in $(seq 0 $((n - 1))); do jq -r ".results[$k].times[]" "$work/hf.json" >>"$work/times.${order[$k]}"; done
  done
  local ref
  ref=$(median_ms "$work/times.$((n - 1))")
  for k in $(seq 0 $((n - 2))); do row "${labels[$k]}" "$(median_ms "$work/times.$k")" "$ref_name" "$ref"; done
}

printf '%-52s %12s  %-10s %12s  %7s\n' "comparison" "primalscope" "reference" "" "ratio"
default_ok=1
works "$ps call $sock health.liveness" || default_ok=0

compare socat "$socat_cmd" pipe \
  "one-shot call, default path" "$ps call $sock health.liveness" \
  "one-shot call, --no-history" "$ps call --no-history $sock health.liveness"
compare "jq -C ." "jq -C . $work/big.json" pipe \
  "10 MB answer, --color always, default path" "$ps call --color always $sock bench.sample" \
  "10 MB answer, --color always, --no-history" "$ps call --no-history --color always $sock bench.sample"
compare "jq ." "jq . $work/big.json" pipe \
  "10 MB answer, piped, default path" "$ps call $sock bench.sample" \
  "10 MB answer, piped, --no-history" "$ps call --no-history $sock bench.sample"
if [ "$default_ok" = 0 ]; then
  echo "(the default path fails against this peer; the same calls with --prefix off, NOT the default path:)"
  compare socat "$socat_cmd" pipe \
    "one-shot call, --prefix off" "$ps call --prefix off $sock health.liveness" \
    "one-shot call, --prefix off --no-history" "$ps call --prefix off --no-history $sock health.liveness"
  compare "jq -C ." "jq -C . $work/big.json" pipe \
    "10 MB answer, --color always, --prefix off" "$ps call --prefix off --color always $sock bench.sample" \
    "10 MB, --color always, --prefix off --no-history" "$ps call --prefix off --no-history --color always $sock bench.sample"
  compare "jq ." "jq . $work/big.json" pipe \
    "10 MB answer, piped, --prefix off" "$ps call --prefix off $sock bench.sample" \
    "10 MB answer, piped, --prefix off --no-history" "$ps call --prefix off --no-history $sock bench.sample"
fi
pretty=$("$ps" call --no-history --prefix off "$sock" bench.sample | wc -c)
echo "(the 10 MB answer printed by primalscope: ${pretty} bytes; jq reads the saved answer, primalscope fetches it over the socket)"

"$work/sockets" -live 100 -stale 50 -dead 50 >"$work/sockets.out" 2>/dev/null & pids+=($!)
for _ in $(seq 200); do [ -s "$work/sockets.out" ] && break; sleep 0.05; done
sdir=$(head -1 "$work/sockets.out")
if [ -d "$sdir" ]; then
  hyperfine -N --style none --output=pipe -w 1 -r 5 -i --export-json "$work/ls.json" "$ps ls --socket-dir $sdir" >/dev/null 2>&1 &&
    jq -r '.results[0].times[]' "$work/ls.json" >"$work/times.ls" &&
    printf '%-52s %9.1f ms  (100 live, 50 stale, 50 dead; stale timeout default; 5 runs)\n' "ls over 200 sockets" "$(median_ms "$work/times.ls")"
fi

echo
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $gov"
echo "load average: $load0 at the start, $(cut -d' ' -f1-3 /proc/loadavg) at the end; $(date -u '+%Y-%m-%d %H:%M UTC')"
