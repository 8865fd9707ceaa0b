#!/usr/bin/env bash
# The README's test command: installs what is missing, builds everything and runs every test:
# CTest first, then the libFuzzer targets briefly. Both always run; the exit status is non-zero
# when either failed. After CTest, every test skipped on this machine is listed with its reason.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
trap 'echo "test: FAILED (exit $?) at line $LINENO: $BASH_COMMAND" >&2' ERR
bash scripts/bootstrap.sh
cmake --preset default
cmake --build --preset default -j"$(nproc)"

ctest_status=0
ctest --preset default -j"$(nproc)" --timeout 900 || ctest_status=$?
# CTest hides the output of tests that pass or skip: show the skip reasons they printed.
bash scripts/list_skips.sh build/Testing/Temporary/LastTest.log || true

# libFuzzer targets of the request parsers and the stream parser, under ASan+UBSan.
fuzz_status=0
bash scripts/fuzz.sh || fuzz_status=$?

verdict() { (($1 == 0)) && echo "passed" || echo "FAILED (exit $1)"; }
echo "test: CTest $(verdict "$ctest_status"); fuzzers $(verdict "$fuzz_status")"
if ((ctest_status != 0 || fuzz_status != 0)); then
  exit 1
fi
