#!/usr/bin/env bash
# Installs the official API client libraries that recipe's reassembly test drives
# (tests/recipe/reassemble.js) into ${DEEPINFER_CACHE:-~/.cache/deepinfer}/api-clients.
# Idempotent: does nothing when the pinned versions are already there.
set -euo pipefail
cache="${DEEPINFER_CACHE:-$HOME/.cache/deepinfer}"
dir="$cache/api-clients"
openai_version=7.59.0
anthropic_version=1.14.0
have() { [[ -f "$dir/node_modules/$1/package.json" ]] && grep -q "\"version\": \"$2\"" "$dir/node_modules/$1/package.json"; }
if have openai "$openai_version" && have @anthropic-ai/sdk "$anthropic_version"; then
  exit 0
fi
mkdir -p "$dir"
cd "$dir"
[[ -f package.json ]] || echo '{"name":"deepinfer-api-clients","private":true}' > package.json
npm install --silent --no-audit --no-fund --save-exact "openai@$openai_version" "@anthropic-ai/sdk@$anthropic_version"
