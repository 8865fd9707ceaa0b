#!/bin/bash
# bench/engine/short_beside_encoder.sh BUILD_DIR MODEL_DIR [ROUNDS=2]
# What a busy vision encoder does to a short prompt's prefill on the same machine (issue 21),
# without a cluster: bench_engine_short on CPU 0 (16- and 50-token prompts, the median of 150)
# alone, beside a SCHED_IDLE encoder (bench_engine_vision encoding 1024 x 1024 images without
# end) on CPU 1, on CPU 0 (it then runs only in the prefills' gaps and leaves them its caches),
# or on both; with the prefills back to back (gap 0) or 50 ms apart (a prompt arriving on an idle
# core, as a text request does). Two CPUs needed; conditions alternate within each round.
set -euo pipefail
build=${1:?usage: short_beside_encoder.sh BUILD_DIR MODEL_DIR [ROUNDS]} model=${2:?MODEL_DIR} rounds=${3:-2}
encoder() { chrt -i 0 taskset -c "$1" "$build/bench/bench_engine_vision" "$model" --sides 1024 --repeat 100000 > /dev/null 2>&1 & echo $!; }
short() {
  taskset -c 0 "$build/bench/bench_engine_short" "$model" --lengths 16,50 --runs 150 --gap-ms "$1" |
    awk -F'|' '/^\| (16|50) /{printf "%s tokens %s ms; ", $2, $3} END {print ""}'
}
echo "# $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) CPUs"
for round in $(seq 1 "$rounds"); do
  for gap in 0 50; do
    echo -n "round $round gap $gap alone: "; short "$gap"
    p=$(encoder 1); sleep 2; echo -n "round $round gap $gap encoder on CPU 1: "; short "$gap"; kill "$p"; wait "$p" 2>/dev/null || true
    p=$(encoder 0); sleep 2; echo -n "round $round gap $gap encoder on CPU 0: "; short "$gap"; kill "$p"; wait "$p" 2>/dev/null || true
    p=$(encoder 0); q=$(encoder 1); sleep 2; echo -n "round $round gap $gap encoders on both: "; short "$gap"
    kill "$p" "$q"; wait 2>/dev/null || true
  done
done
