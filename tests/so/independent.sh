#!/usr/bin/env bash
# Random outputs of the structured-output masks, judged by @cfworker/json-schema: every 10th
# MaskBench schema, 4 draws each (deepinfer-so-check --sample, seeded, so the same outputs every
# run). Our validator shares the compiler's reading of each keyword, so a keyword both misread
# passes `--sample` unseen; this validator was written apart from both (ECMA-262 patterns, its
# own format checks). Fails on a draw fault, an output our validator refuses, or an output
# @cfworker refuses for any reason but format `url` (no JSON Schema format: an annotation here).
# Skips (77), saying why, without the shared data or the API clients' node_modules.
set -euo pipefail
so_check=$1
src=$2
data="$src/../shared/data/jsonschemabench/maskbench.jsonl.zst"
cache=${DEEPINFER_CACHE:-$HOME/.cache/deepinfer}
if [[ ! -f $data ]]; then
  echo "skipped: $data missing (the shared data folder beside the repository)"
  exit 77
fi
if [[ ! -d $cache/api-clients/node_modules/@cfworker/json-schema ]]; then
  echo "skipped: @cfworker/json-schema missing (scripts/prepare_api_clients.sh installs it with @langchain/core)"
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
zstd -dc "$data" | awk 'NR % 10 == 1' > "$work/mb.jsonl"
"$so_check" --json-whitespace 16 --sample 4 --seed 11 --sample-out "$work/drawn.jsonl" < "$work/mb.jsonl" > "$work/so.jsonl"
node "$src/bench/so_independent.mjs" "$work/mb.jsonl" "$work/drawn.jsonl" > "$work/verdict.txt"
head -30 "$work/verdict.txt"
python3 - "$work/so.jsonl" "$work/verdict.txt" <<'PY'
import json, re, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
ours = sum(r.get("sampled_invalid", 0) for r in rows)
drawn = sum(r.get("sampled", 0) for r in rows)
lines = open(sys.argv[2]).read().split("\n")
head = re.match(r"outputs (\d+), faults in the draw (\d+), .*rejected (\d+)", lines[0])
outputs, faults, rejected = (int(x) for x in head.groups())
others = [l.strip() for l in lines[1:] if re.match(r"^\s+\d+\s+\S", l) and not l.strip().endswith(" format url")]
print(f"{drawn} outputs of {sum(r['compiled'] for r in rows)} schemas: {faults} draw faults, {ours} refused by ours, "
      f"{rejected} by @cfworker ({'; '.join(others) or 'all format url'})")
ok = drawn == outputs and drawn > 1000 and faults == 0 and ours == 0 and not others
sys.exit(0 if ok else 1)
PY
