#!/usr/bin/env bash
# Installs Debian's Chromium for the console's browser tests (make test-browser) when no
# Chromium is on PATH. Needs root (or sudo) and the Debian package archive; prints the
# browser's path on success.
set -euo pipefail
find_browser() {
  for b in chromium chromium-browser google-chrome; do
    if command -v "$b" >/dev/null 2>&1; then command -v "$b"; return 0; fi
  done
  return 1
}
if find_browser; then exit 0; fi
sudo=""
if [ "$(id -u)" != 0 ]; then
  command -v sudo >/dev/null || { echo "install-chromium: need root or sudo to apt-get install chromium" >&2; exit 1; }
  sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
find_browser || { echo "install-chromium: chromium installed but not on PATH" >&2; exit 1; }
