#!/usr/bin/env bash
# The README's first command: installs what is missing, builds caf-launch and runs the embedded
# default (every role in one process, HTTP on 127.0.0.1:8000). Extra arguments go to caf-launch.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
trap 'echo "run: FAILED (exit $?) at line $LINENO: $BASH_COMMAND" >&2' ERR
bash scripts/bootstrap.sh
cmake --preset default >/dev/null
cmake --build --preset default -j"$(nproc)" --target caf-launch
exec build/launcher/caf-launch "$@"
