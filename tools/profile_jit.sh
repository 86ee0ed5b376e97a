#!/bin/bash
# Where the time goes inside Taichi's JIT-compiled CPU kernels (they have no symbols, so
# the kernel profiler stops at whole kernels): runs a command, samples it with perf once
# it has warmed up, sums the samples of the JIT code by address block, and prints the
# hottest blocks with their machine code, read by gdb from the still-running process.
#
#   tools/profile_jit.sh [-w WARMUP_S] [-s SAMPLE_S] [-n BLOCKS] -- COMMAND...
#
# COMMAND must keep stepping for WARMUP_S + SAMPLE_S seconds (default 40 + 10); it is
# killed afterwards. Needs perf and gdb (and ptrace permission on the process).
# Reading the output: an ndarray access after a store shows as a reload of the data
# pointer and the stride from the argument buffer (mov (%reg),%reg; mov OFF(%reg),...;
# imul) before the load or store itself (benchmarks/RESULTS.md, "Inside a serial kernel").
set -euo pipefail
warmup=40 sample=10 blocks=6
while getopts "w:s:n:" opt; do
  case $opt in
    w) warmup=$OPTARG ;;
    s) sample=$OPTARG ;;
    n) blocks=$OPTARG ;;
    *) echo "usage: $0 [-w WARMUP_S] [-s SAMPLE_S] [-n BLOCKS] -- COMMAND..." >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[ "$#" -gt 0 ] || { echo "usage: $0 [-w WARMUP_S] [-s SAMPLE_S] [-n BLOCKS] -- COMMAND..." >&2; exit 2; }
for tool in perf gdb; do
  command -v $tool >/dev/null || { echo "$0: needs $tool" >&2; exit 2; }
done
work=$(mktemp -d)
trap 'kill $pid 2>/dev/null || true; rm -rf "$work"' EXIT
"$@" > "$work/out" 2>&1 &
pid=$!
sleep "$warmup"
kill -0 $pid 2>/dev/null || { echo "$0: the command ended during the warm-up:" >&2; tail -5 "$work/out" >&2; exit 1; }
perf record -q -F 1999 -p $pid -o "$work/perf.data" -- sleep "$sample" >/dev/null 2>&1
perf report -i "$work/perf.data" --sort dso 2>/dev/null | grep -v '^#' | grep . | head -5
# the JIT code's samples by 128-byte block, hottest first: address, % of JIT samples
perf report -i "$work/perf.data" --sort dso,sym 2>/dev/null | grep -v '^#' |
  awk '$2 == "[JIT]" {print $1, $NF}' | python3 -c '
import collections, sys
blocks = collections.Counter()
for line in sys.stdin:
    share, addr = line.split()
    try:
        blocks[int(addr, 16) >> 7] += float(share.rstrip("%"))
    except ValueError:
        continue
total = sum(blocks.values()) or 1.0
for block, share in blocks.most_common('"$blocks"'):
    print(hex(block << 7), f"{100 * share / total:.1f}")
' > "$work/hot"
while read -r addr share; do
  echo "== $addr: $share% of the JIT code's samples"
  gdb -p $pid -batch -ex "x/40i $addr" 2>/dev/null | grep '^ *\(=>\)\? *0x[0-9a-f]*:' || true
done < "$work/hot"
