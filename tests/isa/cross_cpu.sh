#!/usr/bin/env bash
# Cross-CPU checks of the determinism contract (engine/kernels/canonical.hpp):
#  1. the kernel suites on an emulated AVX2-only Zen 3, where `auto` must pick avx2 and no
#     AVX-512 instruction may run (qemu would stop it with SIGILL);
#  2. deepinfer-generate --print-logits-digest on a 600-token prompt (past the indexer's top-k):
#     one digest for every ISA this CPU runs and for the emulated Zen 3.
# Usage: cross_cpu.sh BUILD_DIR
set -euo pipefail
build="$1"
qemu="$(command -v qemu-x86_64 || true)"
if [[ -z "$qemu" ]]; then
  echo "SKIPPED: qemu-x86_64 not found (Debian package qemu-user, listed in scripts/packages/engine.txt; run scripts/bootstrap.sh)"
  exit 77
fi
zen3=("$qemu" -cpu EPYC-Milan)
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

echo "host CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "== kernel suites on an emulated AVX2-only Zen 3"
suite_status=0
"${zen3[@]}" "$build/engine/engine_test" --run_test=kernel_tables,cpu_backend_suite,ops_top_k \
  --log_level=test_suite --report_level=short --color_output=no >"$work/suite.log" 2>&1 || suite_status=$?
grep -vE "TCG doesn't support|is skipped because disabled|Entering|Leaving" "$work/suite.log" || true
if [[ $suite_status -ne 0 ]]; then
  echo "FAIL: the kernel suites failed on the emulated Zen 3 (status $suite_status)"
  exit 1
fi

echo "== logits digests"
"$build/engine/deepinfer-mkmodel" --config tiny --seed 7 --out "$work/tiny" >/dev/null 2>&1
ids="$(seq 1 600 | awk '{ printf "%d ", ($1 * 7919) % 129280 }')"
gen=("$build/engine/deepinfer-generate" --model "$work/tiny" --prompt-ids "$ids" --max-tokens 4 --print-logits-digest)
declare -A digest
for isa in portable avx2 avx512; do
  if out="$("${gen[@]}" --cpu-isa "$isa" 2>"$work/err")"; then
    digest[$isa]="$(tail -1 <<<"$out")"
    echo "this CPU, $isa: ${digest[$isa]} (tokens $(head -1 <<<"$out"))"
  else
    echo "this CPU, $isa: skipped: $(tail -1 "$work/err")"
  fi
done
out="$("${zen3[@]}" "${gen[@]}" --cpu-isa auto 2>/dev/null)"
digest[zen3]="$(tail -1 <<<"$out")"
echo "emulated Zen 3, auto (avx2): ${digest[zen3]} (tokens $(head -1 <<<"$out"))"
status=0
for k in "${!digest[@]}"; do
  if [[ "${digest[$k]}" != "${digest[portable]}" ]]; then
    echo "FAIL: $k digest ${digest[$k]} differs from portable ${digest[portable]}"
    status=1
  fi
done
[[ $status -eq 0 ]] && echo "ok: ${#digest[@]} runs, one digest"
exit $status
