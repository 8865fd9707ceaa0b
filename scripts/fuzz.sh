#!/usr/bin/env bash
# Builds the libFuzzer targets of recipe/ (preset `fuzz`: clang, ASan + UBSan, the library itself
# instrumented for coverage) and runs each briefly. Exits non-zero when a target finds a crash, a
# sanitizer report or a broken invariant (the reproducer is left in build-fuzz/findings/).
#   FUZZ_SECONDS  seconds per target (default 8; 4 targets => 32 s)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
seconds="${FUZZ_SECONDS:-8}"
targets=(fuzz_stream_parser fuzz_chat_request fuzz_responses_request fuzz_messages_request)
cmake --preset fuzz \
  -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" >/dev/null
cmake --build --preset fuzz -j"${FUZZ_JOBS:-2}" --target "${targets[@]}"
out="$root/build-fuzz/findings"
mkdir -p "$out"
status=0
for t in "${targets[@]}"; do
  corpus="$root/build-fuzz/corpus/$t"
  mkdir -p "$corpus"
  # Seed the request parsers with the golden requests of their API.
  case "$t" in
    fuzz_chat_request) cp -n recipe/testdata/golden/chat/*.json "$corpus"/ 2>/dev/null || true ;;
    fuzz_responses_request) cp -n recipe/testdata/golden/responses/*.json "$corpus"/ 2>/dev/null || true ;;
    fuzz_messages_request) cp -n recipe/testdata/golden/messages/*.json "$corpus"/ 2>/dev/null || true ;;
  esac
  echo "fuzz: $t for ${seconds}s"
  if ! UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 "build-fuzz/recipe/$t" "$corpus" \
      -max_total_time="$seconds" -max_len=8192 -timeout=10 -rss_limit_mb=2048 \
      -artifact_prefix="$out/$t-" -print_final_stats=1 2>"build-fuzz/$t.log"; then
    echo "fuzz: $t FAILED; see build-fuzz/$t.log and $out" >&2
    tail -40 "build-fuzz/$t.log" >&2
    status=1
  else
    grep -E "stat::number_of_executed_units|Done" "build-fuzz/$t.log" | tail -2 || true
  fi
done
exit "$status"
