#!/bin/sh
# Installs Debian's Chromium for the browser tests (pytest -m browser, tests/test_ui_browser.py).
# Playwright (pip) drives it over CDP; never run `playwright install`, which downloads its own browsers.
# Usage (root, Debian/Ubuntu): .ci/install-browser.sh
set -eu
export DEBIAN_FRONTEND=noninteractive
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
if [ -x /usr/bin/chromium ]; then
  echo "chromium already installed: $(/usr/bin/chromium --version 2>/dev/null || echo /usr/bin/chromium)"
  exit 0
fi
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends chromium fonts-liberation >/dev/null
/usr/bin/chromium --version 2>/dev/null || true
