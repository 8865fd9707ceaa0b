#!/usr/bin/env bash
# The README's test command: installs what is missing, builds everything and runs every test
# (the fuzzers briefly first, then CTest).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/bootstrap.sh
cmake --preset default
cmake --build --preset default -j"$(nproc)"
# libFuzzer targets of the request parsers and the stream parser, briefly, under ASan+UBSan.
bash scripts/fuzz.sh
ctest --preset default -j"$(nproc)" --timeout 900
