#!/usr/bin/env bash
# What `npm test` needs from the system, checked before the tests run (npm's `pretest`) and
# by .ci/run before it installs the package. One list, Debian package names: as root with
# apt-get, the missing ones are installed; otherwise the script stops with the one
# `apt-get install` line to run. `--check` only reports (exit 1 when something is missing).
set -uo pipefail

# check (a shell test, run with bash -c) | Debian package | what needs it
REQUIREMENTS=(
  "command -v make|make|the native library (npm install runs make -C native)"
  "command -v gcc|gcc|the native library, its sanitizer builds (ASan, UBSan, TSan)"
  "test -e /usr/include/stdio.h|libc6-dev|C headers for the native library"
  "test -x /usr/bin/valgrind|valgrind|the native open/close leak check"
  "test -x /usr/bin/promtool && test -x /usr/bin/prometheus|prometheus|promtool (exposition, rules) and a real Prometheus (end-to-end)"
  "test -x /usr/bin/victoria-metrics|victoria-metrics|the fleet stack end-to-end tests (Prometheus remote_write to VictoriaMetrics)"
  "test -x /usr/bin/prometheus-alertmanager && test -x /usr/bin/amtool|prometheus-alertmanager|the fleet stack end-to-end tests (paging) and amtool check-config"
  "test -x /usr/bin/chromium|chromium|the status page tests in a real browser"
  "test -x /usr/bin/python3 && /usr/bin/python3 -c 'import prometheus_client' 2>/dev/null|python3-prometheus-client|a second, strict OpenMetrics parser"
  "test -x /usr/bin/systemd-analyze -o -x /bin/systemd-analyze|systemd|systemd-analyze verify deploy/*.service"
  "command -v openssl|openssl|throwaway CAs for the TLS tests"
  "command -v curl|curl|curl --compressed against /metrics"
  "command -v git|git|the package test lists the checkout's files"
)

check_only=0
[ "${1:-}" = "--check" ] && check_only=1

missing() {
  local r check pkg
  for r in "${REQUIREMENTS[@]}"; do
    IFS='|' read -r check pkg _ <<<"$r"
    bash -c "$check" >/dev/null 2>&1 || printf '%s\n' "$pkg"
  done
}

# `--list`: every package, one line (what README's quick start names; a test compares them).
if [ "${1:-}" = "--list" ]; then
  for r in "${REQUIREMENTS[@]}"; do IFS='|' read -r _ pkg _ <<<"$r"; printf '%s ' "$pkg"; done | sed 's/ $/\n/'
  exit 0
fi

mapfile -t todo < <(missing)
if [ "${#todo[@]}" -eq 0 ]; then
  exit 0
fi

why() {
  local r check pkg what p
  for p in "${todo[@]}"; do
    for r in "${REQUIREMENTS[@]}"; do
      IFS='|' read -r check pkg what <<<"$r"
      [ "$pkg" = "$p" ] && printf '  %-27s %s\n' "$pkg" "$what"
    done
  done
}

if [ "$check_only" = 0 ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "system-deps: installing ${todo[*]} (apt-get, as root)" >&2
  export DEBIAN_FRONTEND=noninteractive
  if apt-get update -qq && apt-get install -y -qq --no-install-recommends "${todo[@]}" >/dev/null; then
    mapfile -t todo < <(missing)
    [ "${#todo[@]}" -eq 0 ] && exit 0
    echo "system-deps: still missing after apt-get install: ${todo[*]}" >&2
  else
    echo "system-deps: apt-get failed" >&2
  fi
fi

{
  echo "The tests need system packages that are missing:"
  why
  echo "Install them with:  sudo apt-get install -y --no-install-recommends ${todo[*]}"
} >&2
exit 1
