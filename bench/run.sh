#!/usr/bin/env bash
# Whole-process comparisons on the DEFAULT path, one command:
#
#   bash bench/run.sh
#
#   RUNS=N               runs per command (default 30; medians)
#   PRIMALSCOPE_BIN=path measure this binary instead of building one
#   ISSUE23=0            skip the issue-23 table (fresh vs lived-in states)
#   TOOL_DIRS, TOOL_SOCKETS  the state the tool makes itself for that table:
#                        ls over TOOL_DIRS (8) directories of TOOL_SOCKETS
#                        (2000) live sockets, then as many calls; 0 skips it
#
# The binary measured is the static one README installs (CGO_ENABLED=0).
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
#   1. one-shot `call health.liveness` against socat sending the request
#      from a file (`socat -t1 OPEN:req!!STDOUT UNIX-CONNECT:sock`);
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

# Build what README installs: the static binary (CGO_ENABLED=0), no tags.
# The plain `go build` (dynamic when cgo is available) is built too, for
# its row in the issue-23 table.
rev="$(git rev-parse --short HEAD 2>/dev/null || echo '?')$(git diff --quiet 2>/dev/null || echo '+changes')"
if [ -n "${PRIMALSCOPE_BIN:-}" ]; then
  ps=$(realpath "$PRIMALSCOPE_BIN")
  built="given: $PRIMALSCOPE_BIN"
else
  CGO_ENABLED=0 go build -o "$work/primalscope" ./cmd/primalscope
  ps="$work/primalscope"
  built="CGO_ENABLED=0 go build ./cmd/primalscope at $rev"
fi
go build -o "$work/primalscope-dynamic" ./cmd/primalscope
CGO_ENABLED=0 go build -o "$work/dialone" ./bench/dialone
go build -o "$work/livedin" ./bench/livedin
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
printf '%s\n' "$req" >"$work/req.json"
# socat sends the request file and prints the answer, with no shell and no
# pipe (as the other commands: hyperfine runs every command without a shell)
socat_cmd="socat -t1 OPEN:$work/req.json!!STDOUT UNIX-CONNECT:$sock"
sh -c "$socat_cmd" | grep -q alive || { echo "socat could not reach the peer" >&2; exit 1; }
printf '%s\n' "$big" | socat -t 5 - "UNIX-CONNECT:$sock" >"$work/big.json"
bigsize=$(wc -c <"$work/big.json")

load0=$(cut -d' ' -f1-3 /proc/loadavg)
echo "primalscope: $built ($("$ps" version | grep -o 'static[^)]*)\|dynamic[^)]*)' || echo 'static or not: unknown'))"
echo "peer: bench/ndjsonpeer (raw NDJSON, skips unparseable lines); 10 MB answer: ${bigsize} bytes on the wire"
echo "runs: about $RUNS per command, in interleaved rounds of 3 (hyperfine -N: no shell; medians)"
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
    hyperfine -N --style none --output="$output" -w 1 -r 3 --export-json "$work/hf.json" "${list[@]}" >/dev/null 2>"$work/hf.err" ||
      { echo "hyperfine failed: $(tail -3 "$work/hf.err")" >&2; return 0; }
    for k in $(seq 0 $((n - 1))); do jq -r ".results[$k].times[]" "$work/hf.json" >>"$work/times.${order[$k]}"; done
  done
  local ref
  ref=$(median_ms "$work/times.$((n - 1))")
  for k in $(seq 0 $((n - 2))); do row "${labels[$k]}" "$(median_ms "$work/times.$k")" "$ref_name" "$ref"; done
}

issue23() {
  # The table of issue 23, every row beside its anchor, in one run: the
  # floor (socat, a static Go program), start-up (--version), the call on a
  # fresh state (static and dynamic), on endpoint memories of 1,000, 4,000
  # and 16,000 endpoints, on the lived-in state (16,000 endpoints, 100,000
  # calls in history of which 100 saved, a journal backlog of 1,000, a
  # config file of 200 targets), and on a state the tool made itself (`ls`
  # over TOOL_DIRS directories of TOOL_SOCKETS live sockets, then as many
  # calls; TOOL_DIRS=0 skips it).
  echo "== issue 23: one-shot call, fresh and lived-in (static binary unless said) =="
  local st="$work/states" n
  mkdir -p "$st"/{fresh,mem1000,mem4000,mem16000,lived,tool}
  stenv() { echo "HOME=$st/$1 XDG_STATE_HOME=$st/$1/state XDG_CONFIG_HOME=$st/$1/config"; }
  for n in 1000 4000 16000; do
    "$work/livedin" -state-home "$st/mem$n/state" -endpoints "$n" -history 0 -saved 0 -backlog 0 -targets 0
  done
  "$work/livedin" -state-home "$st/lived/state" -config-home "$st/lived/config"
  # what a user with this state sees from the second call on: the first
  # calls work off the backlog, a bounded share each (timed below)
  for n in $(seq 40); do env $(stenv lived) "$ps" call "$sock" health.liveness >/dev/null; done
  cp -a "$st/lived" "$st/backlog"
  "$work/livedin" -state-home "$st/backlog/state" -backlog 1000 -top-up
  local call="call $sock health.liveness"
  compare socat "$socat_cmd" pipe \
    "static Go program: dial, write, read (bench/dialone)" "$work/dialone $sock $work/req.json" \
    "primalscope --version" "$ps --version" \
    "call, fresh state" "env $(stenv fresh) $ps $call" \
    "call, plain go build (dynamic), fresh state" "env $(stenv fresh) $work/primalscope-dynamic $call" \
    "call, endpoint memory of 1,000" "env $(stenv mem1000) $ps $call" \
    "call, endpoint memory of 4,000" "env $(stenv mem4000) $ps $call" \
    "call, endpoint memory of 16,000" "env $(stenv mem16000) $ps $call" \
    "call, lived-in state" "env $(stenv lived) $ps $call"
  echo "(the same, against the fresh call instead of socat:)"
  compare "fresh" "env $(stenv fresh) $ps $call" pipe \
    "call, endpoint memory of 16,000" "env $(stenv mem16000) $ps $call" \
    "call, lived-in state" "env $(stenv lived) $ps $call"
  # Every run with a backlog of 1,000 (topped up before each, untimed):
  # the call folds its bounded share after printing.
  if hyperfine -N --style none --output=pipe -w 2 -r "$RUNS" --prepare "$work/livedin -state-home $st/backlog/state -backlog 1000 -top-up" \
      --export-json "$work/backlog.json" "env $(stenv backlog) $ps $call" >/dev/null 2>"$work/hf.err"; then
    jq -r '.results[0].times[]' "$work/backlog.json" >"$work/times.backlog"
    printf '%-52s %9.1f ms  (median; every run with a journal backlog of 1,000; %s runs)\n' "call, lived-in, backlog of 1,000 each time" "$(median_ms "$work/times.backlog")" "$RUNS"
  else
    echo "backlog row: hyperfine failed: $(tail -1 "$work/hf.err")"
  fi
  local dirs=${TOOL_DIRS:-8} per=${TOOL_SOCKETS:-2000}
  if [ "$dirs" -gt 0 ]; then
    local d k spids=() sdirs=()
    for d in $(seq "$dirs"); do
      "$work/sockets" -live "$per" -stale 0 -dead 0 >"$work/sockets$d.out" 2>/dev/null & spids+=($!); pids+=($!)
    done
    for d in $(seq "$dirs"); do
      for _ in $(seq 600); do [ -s "$work/sockets$d.out" ] && break; sleep 0.1; done
      sdirs+=("$(head -1 "$work/sockets$d.out")")
    done
    for d in "${sdirs[@]}"; do env $(stenv tool) "$ps" ls --no-proc --socket-dir "$d" >/dev/null 2>&1 || true; done
    # then as many calls as one directory holds, to its primals in turn
    for k in $(seq 0 $((per - 1))); do
      env $(stenv tool) "$ps" call --timeout 5s "${sdirs[$((k % dirs))]}/primal$(printf %03d "$k").sock" health.liveness >/dev/null 2>&1 || true
    done
    for p in "${spids[@]}"; do kill "$p" 2>/dev/null || true; done
    echo "(a state the tool made: ls over $dirs directories of $per live sockets, then $per calls: $(find "$st/tool/state/primalscope/endpoints.d" -name '*.json' 2>/dev/null | wc -l) endpoints remembered, $(ls "$st/tool/state/primalscope/history.db.journal.d" 2>/dev/null | grep -c '\.rec$') journal records waiting)"
    compare socat "$socat_cmd" pipe \
      "call, state made by the tool (ls + calls)" "env $(stenv tool) $ps $call"
    compare "fresh" "env $(stenv fresh) $ps $call" pipe \
      "call, state made by the tool (ls + calls)" "env $(stenv tool) $ps $call"
  fi
  echo
}

printf '%-52s %12s  %-10s %12s  %7s\n' "comparison" "measured" "reference" "" "ratio"
[ "${ISSUE23:-1}" = 0 ] || issue23
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
