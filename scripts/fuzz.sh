#!/usr/bin/env bash
# Builds the libFuzzer targets of recipe/ and the HTTP request path of actors/ (preset `fuzz`:
# clang, ASan + UBSan, the libraries themselves instrumented for coverage) and runs each briefly
# with its dictionary (JSON nesting past the depth limit, wide objects, field names; HTTP framing
# and headers). Exits non-zero when a target finds a crash, a sanitizer report or a broken
# invariant (the reproducer is left in build-fuzz/findings/).
#   FUZZ_SECONDS  seconds per target (default 8; 5 targets => 40 s)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
seconds="${FUZZ_SECONDS:-8}"
targets=(fuzz_stream_parser fuzz_chat_request fuzz_responses_request fuzz_messages_request fuzz_http_request)
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
  # Seed the request parsers with the golden requests of their API (the HTTP target with the same
  # bodies as POSTs to their route), plus a body nested past the depth limit.
  dir=recipe
  dict=(-dict=recipe/fuzz/json.dict)
  case "$t" in
    fuzz_chat_request) cp -n recipe/testdata/golden/chat/*.json "$corpus"/ 2>/dev/null || true ;;
    fuzz_responses_request) cp -n recipe/testdata/golden/responses/*.json "$corpus"/ 2>/dev/null || true ;;
    fuzz_messages_request) cp -n recipe/testdata/golden/messages/*.json "$corpus"/ 2>/dev/null || true ;;
    fuzz_http_request)
      dir=actors
      # libFuzzer takes one -dict: the HTTP tokens and the JSON ones in one file.
      cat actors/fuzz/http.dict recipe/fuzz/json.dict > "$root/build-fuzz/http_and_json.dict"
      dict=(-dict="$root/build-fuzz/http_and_json.dict")
      for api in chat:chat/completions responses:responses messages:messages; do
        for f in recipe/testdata/golden/"${api%%:*}"/*.json; do
          [ -e "$f" ] || continue
          seed="$corpus/seed-${api%%:*}-$(basename "$f")"
          [ -e "$seed" ] && continue
          printf 'POST /v1/%s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %s\r\n\r\n' \
            "${api#*:}" "$(wc -c < "$f")" > "$seed"
          cat "$f" >> "$seed"
        done
      done
      ;;
  esac
  case "$t" in
    fuzz_stream_parser) dict=() ;;
    *) deep="$corpus/seed-deep.json"
       [ -e "$deep" ] || { printf '{"x":'; printf '[%.0s' $(seq 70); printf '0'; printf ']%.0s' $(seq 70); printf ',"model":"m"}'; } > "$deep" ;;
  esac
  echo "fuzz: $t for ${seconds}s"
  if ! UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 "build-fuzz/$dir/$t" "$corpus" "${dict[@]}" \
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
