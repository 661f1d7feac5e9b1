#!/usr/bin/env bash
# Whole-process comparisons, one command on a fresh machine:
#   bash bench/run.sh            (RUNS=N to change the number of runs, default 21)
# It installs what it needs (socat, jq), builds primalscope, starts the demo,
# and prints medians and ratios:
#   1. a one-shot `primalscope call` against `printf ... | socat` on the same socket;
#   2. `primalscope call` printing a 10 MB result highlighted against `jq -C .`
#      on the same bytes, and plain against `jq .`;
#   3. `primalscope ls` over 200 sockets (100 live, 50 stale, 50 dead).
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-21}

need=()
command -v socat >/dev/null || need+=(socat)
command -v jq >/dev/null || need+=(jq)
if [ ${#need[@]} -gt 0 ]; then
  echo "installing ${need[*]}" >&2
  if [ "$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq "${need[@]}" >/dev/null
  else sudo apt-get update -qq && sudo apt-get install -y -qq "${need[@]}" >/dev/null; fi
fi

out=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done; rm -rf "$out"; }
trap cleanup EXIT

go build -o "$out/primalscope" ./cmd/primalscope
go build -o "$out/sockets" ./bench/sockets
ps="$out/primalscope"

"$ps" demo --serve --tick 1h >"$out/demo.out" 2>/dev/null & pids+=($!)
for _ in $(seq 100); do [ -s "$out/demo.out" ] && break; sleep 0.05; done
dir=$(head -1 "$out/demo.out")

# median of RUNS wall-clock runs of a command, in milliseconds
median_ms() {
  local times=()
  for _ in $(seq "$RUNS"); do
    local t0 t1
    t0=$(date +%s%N); "$@" >/dev/null 2>&1; t1=$(date +%s%N)
    times+=($(( (t1 - t0) / 1000 )))
  done
  printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {printf "%.2f", a[int((NR+1)/2)]/1000}'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }

req='{"jsonrpc":"2.0","id":1,"method":"health.liveness"}'
socat_call() { printf '%s\n' "$req" | socat -t 5 - "UNIX-CONNECT:$dir/beardog.sock"; }
ps_call() { "$ps" call --no-history --socket-dir "$dir" beardog health.liveness; }
socat_call | grep -q alive || { echo "socat could not reach the demo" >&2; exit 1; }
a=$(median_ms ps_call); b=$(median_ms socat_call)
echo "one-shot call:           primalscope ${a} ms   socat ${b} ms   ratio $(ratio "$a" "$b")x   (goal: within 2x)"

big='{"id":"big","size_bytes":10485760}'
"$ps" call --no-history --socket-dir "$dir" nestgate storage.artifact.get "$big" >"$out/big.json"
size=$(wc -c <"$out/big.json")
ps_hl() { "$ps" call --no-history --color always --socket-dir "$dir" nestgate storage.artifact.get "$big"; }
ps_plain() { "$ps" call --no-history --color never --socket-dir "$dir" nestgate storage.artifact.get "$big"; }
a=$(median_ms ps_hl); b=$(median_ms jq -C . "$out/big.json")
echo "10 MB answer, colour:    primalscope ${a} ms   jq -C . ${b} ms   ratio $(ratio "$a" "$b")x   (goal: below 1x; output ${size} bytes)"
a=$(median_ms ps_plain); b=$(median_ms jq . "$out/big.json")
echo "10 MB answer, plain:     primalscope ${a} ms   jq . ${b} ms   ratio $(ratio "$a" "$b")x   (goal: below 1x; primalscope includes the socket transfer)"

"$out/sockets" -live 100 -stale 50 -dead 50 >"$out/sockets.out" 2>/dev/null & pids+=($!)
for _ in $(seq 200); do [ -s "$out/sockets.out" ] && break; sleep 0.05; done
sdir=$(head -1 "$out/sockets.out")
if "$ps" ls --help >/dev/null 2>&1; then
  RUNS=$(( RUNS < 7 ? RUNS : 7 ))
  a=$(median_ms "$ps" ls --socket-dir "$sdir")
  echo "ls over 200 sockets:     primalscope ${a} ms   (100 live, 50 stale, 50 dead; stale timeout default)"
fi
echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(go version | cut -d' ' -f3), load $(cut -d' ' -f1-3 /proc/loadavg)"
