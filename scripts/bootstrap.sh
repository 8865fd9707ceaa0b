#!/usr/bin/env bash
# Idempotent set-up on Debian 12 as root: installs the Debian packages listed in
# scripts/packages/*.txt (apt-get update once, and only when something is missing), then prepares
# the tokenizer assets in $DEEPINFER_CACHE (default ~/.cache/deepinfer).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
trap 'echo "bootstrap: FAILED (exit $?) at line $LINENO: $BASH_COMMAND" >&2' ERR

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
  apt_help="check that this machine reaches its Debian mirror (/etc/apt/sources.list*; behind a proxy"
  apt_help+=" set Acquire::http::Proxy in /etc/apt/apt.conf.d/), then run scripts/bootstrap.sh again"
  apt-get update -qq || { echo "bootstrap: FAILED: apt-get update; $apt_help" >&2; exit 1; }
  apt-get install -y -qq --no-install-recommends "${missing[@]}" \
    || { echo "bootstrap: FAILED: apt-get install ${missing[*]}; $apt_help" >&2; exit 1; }
else
  echo "bootstrap: all ${#wanted[@]} Debian packages present"
fi

# The tokenizer reference and the API clients need Node.js 18 or later (Debian 12 ships 18.20).
node_major="$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)"
if ((node_major < 18)); then
  echo "bootstrap: FAILED: Node.js $(node --version 2>/dev/null || echo '(none)') is too old; the tests need" \
       "Node.js 18 or later (Debian 12: apt-get install nodejs npm)" >&2
  exit 1
fi

"$here/prepare_tokenizer.sh"
"$here/prepare_api_clients.sh"
