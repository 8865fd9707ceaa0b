#!/usr/bin/env bash
# The CUDA backend's one device run (issue 22): on a machine with an NVIDIA GPU, runs the CUDA test
# suite, the digest check and the CUDA bench, and writes every figure to one file. Sized for one
# 8-minute run on one H200 (not yet timed on one): the tests are stopped at 180 s, the bench at 240 s.
#
#   bash scripts/device-check.sh pack    # here, on a build machine: builds what the run needs
#                                        # and bundles it (binaries + the shared libraries a bare
#                                        # GPU machine lacks) into .device-bundle/ (git-ignored)
#   bash scripts/device-check.sh         # on the GPU machine: runs the checks; builds them first
#                                        # from source when no bundle is there (needs the
#                                        # project's Debian packages and nvcc: scripts/bootstrap.sh)
#
# Figures go to ${OUT:-build}/device-check.txt, the full log beside it. Exit status non-zero when
# a test failed, the bench failed, or the backends disagreed. Without a GPU it says so, runs what
# it can (the tests print their skips, the bench its CPU half) and exits 3, so a run that found
# no device is never taken for a pass.
#   DEVICE_CHECK_PREFILL  prompt lengths (default 8192,32768)
#   DEVICE_CHECK_BATCHES  decode batch sizes (default 1,8,64,256)
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bundle="$root/.device-bundle"
tools=(engine/engine_test bench/cuda/bench_cuda_backend engine/deepinfer-generate engine/deepinfer-mkmodel)

if [[ ${1:-} == pack ]]; then
  set -e
  cmake --preset default >/dev/null
  cmake --build --preset default -j"$(nproc)" --target engine_test bench_cuda_backend deepinfer-generate deepinfer-mkmodel
  rm -rf "$bundle"
  mkdir -p "$bundle/bin" "$bundle/lib"
  for t in "${tools[@]}"; do
    objcopy --strip-debug "build/$t" "$bundle/bin/$(basename "$t")"
  done
  # Every shared library the binaries use except the C runtime, the driver and the CUDA toolkit's
  # own (the GPU machine has them, in versions that match its driver; cuBLAS alone is larger than
  # a carry may be): a Debian build's spdlog, fmt, Boost.Test, xxhash, liburing, verbs...
  ldd "$bundle"/bin/* | awk '/=> \//{print $3}' | sort -u | while read -r lib; do
    case "$(basename "$lib")" in
      libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|ld-linux*|libcuda.so*|libnvidia*|libcudart*|libcublas*|libnccl*) ;;
      libstdc++.so*|libgcc_s.so*) ;; # newer there, and backward compatible; an older copy would shadow it
      *) cp -L "$lib" "$bundle/lib/" ;;
    esac
  done
  echo "$(git rev-parse --short HEAD)$(git diff --quiet || echo '+changes')" >"$bundle/commit"
  du -sh "$bundle"
  echo "device-check: bundle ready in .device-bundle (carry it: run(carry=[\".device-bundle\"]))"
  exit 0
fi

out_dir="${OUT:-$root/build}"
mkdir -p "$out_dir"
figures="$out_dir/device-check.txt"
log="$out_dir/device-check.log"
: >"$figures"
note() { echo "$*" | tee -a "$figures"; }
status=0

note "# device-check $(date -u +%FT%TZ) commit $(cat "$bundle/commit" 2>/dev/null || git rev-parse --short HEAD 2>/dev/null)"
note "host_cpu $(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1) cores $(nproc)"
have_gpu=1
if ! nvidia-smi --query-gpu=name,memory.total,driver_version,pcie.link.gen.max,pcie.link.width.max \
       --format=csv,noheader >>"$figures" 2>>"$log"; then
  have_gpu=0
  note "gpu none: nvidia-smi found no device; the CUDA cases skip and the bench runs its CPU half only"
fi

# 1. The binaries: the bundle, or a build here.
if [[ -x $bundle/bin/engine_test ]]; then
  bin="$bundle/bin"
  export LD_LIBRARY_PATH="$bundle/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  note "binaries bundle ($(cat "$bundle/commit" 2>/dev/null))"
  head="$(git rev-parse --short HEAD 2>/dev/null || true)"
  if [[ -n $head && $(cat "$bundle/commit" 2>/dev/null) != "$head"* ]]; then
    note "WARNING: the bundle was packed from $(cat "$bundle/commit"), this tree is at $head: run 'bash scripts/device-check.sh pack' again"
  fi
else
  t0=$(date +%s)
  if ! { cmake --preset default && cmake --build --preset default -j"$(nproc)" \
           --target engine_test bench_cuda_backend deepinfer-generate deepinfer-mkmodel; } >>"$log" 2>&1; then
    note "build FAILED (see device-check.log); a machine without the project's packages needs the bundle: run 'bash scripts/device-check.sh pack' on a build machine and carry .device-bundle"
    exit 1
  fi
  mkdir -p build/device-bin
  for t in "${tools[@]}"; do ln -sf "$root/build/$t" "build/device-bin/$(basename "$t")"; done
  bin="$root/build/device-bin"
  note "binaries built here in $(($(date +%s) - t0)) s"
fi

# 2. The CUDA test suite (GEMM bits over 225 shapes, batch invariance, forward, 50 prompts, prefix
# hit) and the kernels' CPU emulation.
t0=$(date +%s)
if timeout 180 "$bin/engine_test" --run_test=cuda_backend,cuda_devices,cuda_kernels_emulated,device_backend_suite --log_level=test_suite \
     --report_level=short \
     >>"$log" 2>&1; then
  note "tests cuda_backend passed in $(($(date +%s) - t0)) s"
else
  note "tests cuda_backend FAILED (exit $?; see device-check.log)"
  status=1
fi
grep -iE "skipped: |is skipped because precondition" "$log" | sed 's/\x1b\[[0-9;]*m//g' | sort -u | sed 's/^/  /' \
  | tee -a "$figures"

# 3. One prompt's logits digest on each backend and ISA: one string compare (the determinism contract).
model="$out_dir/device-check-tiny"
"$bin/deepinfer-mkmodel" --config tiny --seed 7 --out "$model" >>"$log" 2>&1 || note "mkmodel FAILED (see device-check.log)"
ids="$(seq 1 700 | awk '{printf "%d ", ($1 * 7919) % 129000 + 100}')"
digests=()
for b in cpu cuda; do
  ((have_gpu == 0)) && [[ $b == cuda ]] && continue
  for isa in portable auto; do
    d=$("$bin/deepinfer-generate" --model "$model" --prompt-ids "$ids" --max-tokens 8 --backend "$b" --cpu-isa "$isa" \
          --print-logits-digest 2>>"$log" | tail -1)
    note "digest backend=$b isa=$isa $d"
    digests+=("$d")
  done
done
if [[ ${#digests[@]} -gt 0 && $(printf '%s\n' "${digests[@]}" | sort -u | wc -l) -eq 1 && -n ${digests[0]} ]]; then
  note "digests equal (${#digests[@]} runs)"
else
  note "digests DIFFER or missing"
  status=1
fi

# 4. The bench: GEMM vs cuBLAS, copies, prefill 8K/32K and decode 1..256 on bench_v4, both backends.
t0=$(date +%s)
which_backend=both
((have_gpu == 0)) && which_backend=cpu
if timeout 240 "$bin/bench_cuda_backend" --backend "$which_backend" --threads "$(nproc)" \
     --model "$out_dir/device-check-bench-v4" --prefill "${DEVICE_CHECK_PREFILL:-8192,32768}" \
     --batches "${DEVICE_CHECK_BATCHES:-1,8,64,256}" $( ((have_gpu == 0)) && echo --no-gemm) \
     2>>"$log" | tee -a "$figures"; then
  note "bench done in $(($(date +%s) - t0)) s"
else
  note "bench FAILED or timed out (see device-check.log)"
  status=1
fi
rm -rf "$out_dir/device-check-bench-v4" "$model"

note "device-check: $( ((status == 0 && have_gpu == 1)) && echo passed || echo "not passed (status $status, gpu $have_gpu)")"
((have_gpu == 0 && status == 0)) && exit 3
exit "$status"
