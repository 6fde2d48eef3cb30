#!/bin/sh
# Installs Debian's headless-capable Chromium and its WebDriver (chromedriver), which
# `cargo xtask browser` drives for the end-to-end OAuth test. From the distribution's
# apt repositories only: `chromium` and `chromium-driver` at one and the same version,
# the distribution's current candidate (the driver only drives the browser of its own
# version). Safe to re-run: when both are installed at the same version it does nothing
# (no apt call), so it is fast on a machine that has them.
#
# Needs root (or sudo) to install. Prints the installed version on the last line.
set -eu

installed() {
    dpkg-query -W -f='${Status} ${Version}\n' "$1" 2>/dev/null \
        | sed -n 's/^install ok installed //p'
}

browser=$(installed chromium)
driver=$(installed chromium-driver)
if [ -n "$browser" ] && [ "$browser" = "$driver" ] && command -v chromedriver >/dev/null; then
    echo "chromium: $browser already installed"
    exit 0
fi

if [ "$(id -u)" -eq 0 ]; then
    as_root=""
elif command -v sudo >/dev/null; then
    as_root="sudo"
else
    echo "chromium.sh: installing chromium needs root (or sudo)" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
$as_root apt-get update -qq
version=$(apt-cache policy chromium | sed -n 's/^ *Candidate: //p')
if [ -z "$version" ] || [ "$version" = "(none)" ]; then
    echo "chromium.sh: the apt sources offer no chromium package" >&2
    exit 1
fi
$as_root apt-get install -y -qq --no-install-recommends \
    "chromium=$version" "chromium-driver=$version"
echo "chromium: $(installed chromium) installed"
