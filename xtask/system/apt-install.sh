#!/bin/sh
# Installs the Debian packages named as arguments with apt-get (no recommends), as root
# or through sudo; the package lists are updated once when the first try fails (a fresh
# container has none, an old one stale ones). Used by the scripts beside it, which first
# check whether what they install is there already.
set -eu

if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
        SUDO=sudo
    else
        echo "apt-install.sh: installing $* needs root (or sudo)" >&2
        exit 1
    fi
else
    SUDO=
fi

export DEBIAN_FRONTEND=noninteractive
if ! $SUDO apt-get install -y --no-install-recommends "$@" >/dev/null; then
    $SUDO apt-get update >/dev/null
    $SUDO apt-get install -y --no-install-recommends "$@" >/dev/null
fi
# A package may start a system service where there is an init; the tests use none: each
# starts its own on a port of its own.
