#!/bin/sh
# Install Debian's Chromium and its WebDriver (for tests/test_report_browser.py), as root,
# without questions; nothing is done when both are already there. No browser is
# downloaded from anywhere but the distribution's own archive.
set -eu

if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "install.sh: must run as root to install chromium and chromium-driver" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends chromium chromium-driver >/dev/null
command -v chromium >/dev/null
command -v chromedriver >/dev/null
