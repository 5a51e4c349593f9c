#!/usr/bin/env bash
# Make sure a font with Chinese, Japanese and Korean glyphs is installed (WenQuanYi Zen Hei, 7.5 MB):
# the report test renders a Chinese report in headless Chromium and checks that the glyphs are drawn.
# Needs root to install (CI runs as root). Idempotent: does nothing if fontconfig already knows a
# font for Chinese.
set -euo pipefail

if command -v fc-list >/dev/null && [ -n "$(fc-list :lang=zh family 2>/dev/null | head -1)" ]; then
    echo "ensure_cjk_font: a Chinese font is present ($(fc-list :lang=zh family | head -1))"
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "ensure_cjk_font: no Chinese font, and installing one needs root" >&2
    echo "ensure_cjk_font: run as root: apt-get install -y fonts-wqy-zenhei" >&2
    exit 1
fi
echo "ensure_cjk_font: installing Debian package 'fonts-wqy-zenhei'"
export DEBIAN_FRONTEND=noninteractive
apt-get install -y -qq --no-install-recommends fonts-wqy-zenhei >/dev/null 2>&1 || {
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends fonts-wqy-zenhei >/dev/null
}
fc-cache -f >/dev/null 2>&1 || true
if [ -z "$(fc-list :lang=zh family 2>/dev/null | head -1)" ]; then
    echo "ensure_cjk_font: install finished but fontconfig knows no Chinese font" >&2
    exit 1
fi
echo "ensure_cjk_font: installed $(fc-list :lang=zh family | head -1)"
