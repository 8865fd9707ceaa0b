#!/usr/bin/env bash
# Regenerates the expected outputs next to each golden request with build/recipe/deepinfer-render.
# Only after a deliberate format change: review the diff against spec/deepseek-format.md (the files
# in git were cross-checked against a transcription of the reference encoders).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
render="$root/build/recipe/deepinfer-render"
cd "$(dirname "${BASH_SOURCE[0]}")"
for api in chat responses messages; do
  for req in "$api"/*.json; do
    case "$req" in *.err.json) continue ;; esac
    base="${req%.json}"
    rm -f "$base".dsv41.txt "$base".dsv32.txt "$base".dsv32.err.json "$base".err.json
    for v in dsv41 dsv32; do
      set +e
      out="$("$render" --api "$api" --template "$v" < "$req"; echo "rc=$?")"
      set -e
      rc="${out##*rc=}"
      body="${out%rc=*}"
      if [[ "$rc" == 0 ]]; then
        printf '%s' "$body" > "$base.$v.txt"
      elif [[ "$base" == */e[0-9]* ]]; then
        printf '%s' "$body" > "$base.err.json"
      else
        printf '%s' "$body" > "$base.$v.err.json"
      fi
    done
  done
done
