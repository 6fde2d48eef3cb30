#!/bin/sh
# Installs Debian's redis-server for the tests of modelctx-redis (they start their own
# server on a free loopback port; nothing here starts one). Idempotent: a machine that
# already has it spends one `redis-server --version` call. The version is the
# distribution's (Debian 12: 7.0.x); the tests use nothing newer than Redis 6.2.
set -eu

if command -v redis-server >/dev/null 2>&1; then
    redis-server --version
    exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
        SUDO=sudo
    else
        echo "redis.sh: redis-server is missing and installing it needs root (or sudo)" >&2
        exit 1
    fi
else
    SUDO=
fi

export DEBIAN_FRONTEND=noninteractive
# The package lists may be missing (a fresh container) or stale: update once on failure.
if ! $SUDO apt-get install -y --no-install-recommends redis-server >/dev/null; then
    $SUDO apt-get update >/dev/null
    $SUDO apt-get install -y --no-install-recommends redis-server >/dev/null
fi
# The package starts a system service where there is an init; the tests do not use it.
redis-server --version
