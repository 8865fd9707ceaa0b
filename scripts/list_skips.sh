#!/usr/bin/env bash
# Lists what this machine did not test, from CTest's log: every line a test printed that says it
# skipped, with the name of the CTest test that printed it. CTest shows the output of failed
# tests only, so without this list a CI log would not say which checks were skipped, or why.
# A skip says why in a line containing "skipped: REASON" (any case); Boost.Test prints its own for a
# precondition ('Test case "suite/case" is skipped because precondition failed: REASON').
# Boost.Test's "skipped because disabled" is left out: that is a --run_test filter of a CTest
# registration (engine_test_avx2 runs a subset), not something this machine lacks. A reason
# printed several times by one test is listed once, with the count.
#   usage: list_skips.sh [build/Testing/Temporary/LastTest.log]
set -euo pipefail
log="${1:-build/Testing/Temporary/LastTest.log}"
if [[ ! -f $log ]]; then
  echo "list_skips: no CTest log at $log (did CTest run?)" >&2
  exit 1
fi
awk '
  /^[0-9]+\/[0-9]+ Test: / { name = $3; next }
  /^Output:$/ { out = 1; next }
  /^<end of output>$/ { out = 0; next }
  out && /is skipped because disabled/ { next }
  out && (/is skipped because/ || tolower($0) ~ /skipped: /) {
    line = $0
    gsub(/\033\[[0-9;]*m/, "", line)          # Boost.Test colours its log
    sub(/^[^ ]*\([0-9]+\): /, "", line)  # and prefixes the source file and line
    key = "  " name ": " line
    if (!(key in count)) order[++n] = key
    ++count[key]
  }
  END {
    if (n == 0) { print "Skipped tests: none"; exit }
    print "Skipped tests (not checked on this machine), with their reasons:"
    for (i = 1; i <= n; ++i) print order[i] (count[order[i]] > 1 ? " (x" count[order[i]] ")" : "")
  }
' "$log"
