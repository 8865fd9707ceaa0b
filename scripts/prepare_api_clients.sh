#!/usr/bin/env bash
# Installs the official API client libraries that recipe's reassembly test and tests/serve drive
# (recipe/testdata/reassemble.js, tests/serve/*.test.mjs) into
# ${DEEPINFER_CACHE:-~/.cache/deepinfer}/api-clients.
# Idempotent: does nothing when the pinned versions are already there.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=scripts/npm_step.sh
source "$here/npm_step.sh"
# Every failure says what failed (npm_step explains its own).
trap '[[ -n ${npm_step_failed:-} ]] || echo "prepare_api_clients: FAILED (exit $?) at line $LINENO: $BASH_COMMAND" >&2' ERR
cache="${DEEPINFER_CACHE:-$HOME/.cache/deepinfer}"
dir="$cache/api-clients"
# Pinned to the last releases that support Node.js 18, the Node of Debian 12 (the README's
# machine): openai 5.x-6.x document Node 20 or later and 7.x declares engines.node >= 22;
# @anthropic-ai/sdk documents Node 18+ up to 0.106.0 and Node 20 or later after it.
openai_version=4.104.0
anthropic_version=0.106.0
# The structured-output tests: zod schemas through openai's zodResponseFormat helper (zod 3.25:
# openai 4.x asks for ^3.23.8, the Anthropic SDK for ^3.25 || ^4), and ajv to validate every object
# against its JSON Schema.
zod_version=3.25.76
ajv_version=8.17.1
# Third-party clients real users point at OpenAI-compatible servers (tests/serve/thirdparty.test.mjs):
# the Vercel AI SDK 4.x with its OpenAI and Anthropic providers, and LangChain JS 0.3 (all Node 18+).
ai_version=4.3.19
ai_openai_version=1.3.24
ai_anthropic_version=1.2.12
langchain_openai_version=0.3.17
langchain_core_version=0.3.80
have() { [[ -f "$dir/node_modules/$1/package.json" ]] && grep -q "\"version\": \"$2\"" "$dir/node_modules/$1/package.json"; }
if have openai "$openai_version" && have @anthropic-ai/sdk "$anthropic_version" && have zod "$zod_version" \
   && have ajv "$ajv_version" && have ai "$ai_version" && have @ai-sdk/openai "$ai_openai_version" \
   && have @ai-sdk/anthropic "$ai_anthropic_version" && have @langchain/openai "$langchain_openai_version" \
   && have @langchain/core "$langchain_core_version"; then
  exit 0
fi
mkdir -p "$dir"
[[ -f "$dir/package.json" ]] || echo '{"name":"deepinfer-api-clients","private":true}' > "$dir/package.json"
npm_step prepare_api_clients "install openai@$openai_version, @anthropic-ai/sdk@$anthropic_version, zod, ajv, ai@$ai_version (+ @ai-sdk/openai, @ai-sdk/anthropic) and @langchain/openai@$langchain_openai_version into $dir" \
  "$cache/npm-api-clients.log" \
  -- install --prefix "$dir" --no-audit --no-fund --save-exact "openai@$openai_version" "@anthropic-ai/sdk@$anthropic_version" \
     "zod@$zod_version" "ajv@$ajv_version" "ai@$ai_version" "@ai-sdk/openai@$ai_openai_version" \
     "@ai-sdk/anthropic@$ai_anthropic_version" "@langchain/openai@$langchain_openai_version" \
     "@langchain/core@$langchain_core_version"
echo "prepare_api_clients: openai@$openai_version, @anthropic-ai/sdk@$anthropic_version, zod, ajv, the Vercel AI SDK and LangChain JS ready in $dir"
