#!/usr/bin/env bash
# Idempotent set-up on Debian 12 as root: installs the Debian packages listed in
# scripts/packages/*.txt (apt-get update once, and only when something is missing), then prepares
# the tokenizer assets in $DEEPINFER_CACHE (default ~/.cache/deepinfer).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

mapfile -t wanted < <(cat "$here"/packages/*.txt | sed 's/#.*//' | tr -s ' \t' '\n' | sed '/^$/d' | sort -u)
missing=()
for p in "${wanted[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
# Node.js (for the reference tokenizer and the official API clients in tests): any install that
# provides `node` and `npm` will do (some images ship NodeSource's nodejs, which bundles npm and
# conflicts with Debian's npm package), so ask Debian only for what is absent.
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
if ((${#missing[@]})); then
  if [[ $(id -u) -ne 0 ]]; then
    echo "bootstrap: missing Debian packages: ${missing[*]}; run this script as root" >&2
    exit 1
  fi
  echo "bootstrap: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "bootstrap: all ${#wanted[@]} Debian packages present"
fi

"$here/prepare_tokenizer.sh"
"$here/prepare_api_clients.sh"
