# Sourced by scripts/prepare_*.sh (not run on its own).
#
#   npm_step WHO WHAT LOG -- NPM-ARGS...
#
# Runs `npm NPM-ARGS...` with its output in LOG. On success says nothing more. On failure it
# prints what failed (WHAT, e.g. "download openai@6.49.0"), from which registry, the last lines
# of npm's output, the likely cause read from that output (registry unreachable, proxy, TLS
# interception, package missing on the registry, disk full, ...) and what to do about it, then
# returns npm's exit status and sets npm_step_failed. WHO prefixes every line ("prepare_tokenizer").

npm_step() {
  local who="$1" what="$2" log="$3"
  shift 4
  local registry
  registry="$(npm config get registry 2>/dev/null || echo "the npm registry")"
  # npm takes a proxy from its config (https-proxy, proxy) or from the usual variables.
  local proxy
  proxy="$(npm config get https-proxy 2>/dev/null || true)"
  [[ $proxy == null ]] && proxy="$(npm config get proxy 2>/dev/null || true)"
  [[ $proxy == null ]] && proxy=""
  proxy="${proxy:-${HTTPS_PROXY:-${https_proxy:-${HTTP_PROXY:-${http_proxy:-}}}}}"
  echo "$who: $what (npm, registry $registry${proxy:+, proxy $proxy})"
  local rc=0
  npm "$@" >"$log" 2>&1 || rc=$?
  ((rc == 0)) && return 0
  # Read by the callers' ERR traps: this failure is explained already.
  npm_step_failed="$what"

  {
    echo "$who: FAILED: $what: npm exited with status $rc. What npm said (all of it in $log):"
    # npm's error lines without its stack trace and error-object dump.
    { grep -vE '^\s*$|^npm (error|ERR!)\s*$|^npm (error|ERR!)\s+at |^npm (error|ERR!)\s{2,}[A-Za-z_]+: |^npm (error|ERR!)\s*\}' "$log" \
        || true; } | head -n 12 | sed 's/^/    /'
    local cause todo
    if grep -qE 'E407|407 Proxy|Proxy Authentication' "$log"; then
      cause="the proxy ${proxy:-set in the npm config} wants credentials"
      todo="put them in the proxy URL (export https_proxy=http://USER:PASS@HOST:PORT)"
    elif grep -qE 'SELF_SIGNED_CERT|UNABLE_TO_GET_ISSUER_CERT|UNABLE_TO_VERIFY_LEAF_SIGNATURE|CERT_HAS_EXPIRED|ERR_TLS|certificate' "$log"; then
      cause="the TLS certificate of $registry is not trusted (a TLS-intercepting proxy?)"
      todo="point npm at your CA bundle (export npm_config_cafile=/path/to/ca.pem)"
    elif grep -qE 'ECONNREFUSED|ENOTFOUND|EAI_AGAIN|ETIMEDOUT|ESOCKETTIMEDOUT|ECONNRESET|ENETUNREACH|EHOSTUNREACH|network|socket hang up' "$log"; then
      if [[ -n $proxy ]]; then
        cause="$registry cannot be reached through the proxy $proxy"
        todo="check that the proxy is up and lets this machine reach $registry (curl -sSI --proxy $proxy $registry)"
      else
        cause="$registry cannot be reached from this machine (no network, DNS, firewall, or a proxy is needed)"
        todo="check the network (curl -sSI $registry); behind a proxy export https_proxy=http://HOST:PORT (npm reads it); or use a mirror: export npm_config_registry=URL"
      fi
    elif grep -qE 'E404|404 Not Found|No matching version|notarget' "$log"; then
      cause="$registry does not have the pinned package version (a mirror that lacks it?)"
      todo="use a registry that has it (export npm_config_registry=https://registry.npmjs.org/)"
    elif grep -qE 'E401|E403|EAUTH|Unable to authenticate' "$log"; then
      cause="$registry refused the request (authentication)"
      todo="check the token or credentials for $registry in ~/.npmrc"
    elif grep -qE 'ENOSPC' "$log"; then
      cause="the disk is full"
      todo="free space in ${DEEPINFER_CACHE:-$HOME/.cache/deepinfer} and in npm's cache ($(npm config get cache 2>/dev/null || echo '~/.npm'))"
    elif grep -qE 'EACCES|EPERM' "$log"; then
      cause="npm may not write its cache or the target folder"
      todo="run as the user who owns ${DEEPINFER_CACHE:-$HOME/.cache/deepinfer} and $(npm config get cache 2>/dev/null || echo '~/.npm')"
    elif grep -qE 'EBADENGINE|Unsupported engine' "$log"; then
      cause="the package does not support this Node.js ($(node --version 2>/dev/null || echo 'unknown'))"
      todo="install a Node.js it supports, or pin a version that supports this one"
    else
      cause="npm failed for a reason this script does not recognise"
      todo="read $log"
    fi
    echo "$who: likely cause: $cause."
    echo "$who: what to do: $todo; then run scripts/bootstrap.sh again."
  } >&2
  return "$rc"
}
