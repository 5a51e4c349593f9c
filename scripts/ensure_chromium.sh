#!/usr/bin/env bash
# Make sure Debian's chromium is installed at /usr/bin/chromium.
# The report tests drive it headless to render report.html and take a screenshot.
# Needs root (CI runs as root). Idempotent: does nothing if chromium is already there.
set -euo pipefail

CHROMIUM=/usr/bin/chromium

if [ -x "$CHROMIUM" ]; then
    echo "ensure_chromium: $CHROMIUM already present ($("$CHROMIUM" --version 2>/dev/null || echo 'version unknown'))"
    exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
    echo "ensure_chromium: $CHROMIUM is missing and installing it needs root" >&2
    echo "ensure_chromium: run as root: apt-get update -qq && apt-get install -y -qq chromium" >&2
    exit 1
fi

echo "ensure_chromium: $CHROMIUM missing; installing Debian package 'chromium'"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null

if [ ! -x "$CHROMIUM" ]; then
    echo "ensure_chromium: install finished but $CHROMIUM is still missing" >&2
    exit 1
fi
echo "ensure_chromium: installed $("$CHROMIUM" --version 2>/dev/null || echo chromium)"
