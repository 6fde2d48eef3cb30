#!/bin/sh
# Installs Debian's redis-server for the tests of modelctx-redis (they start their own
# server on a free loopback port; nothing here starts one). Idempotent: a machine that
# already has it spends one `redis-server --version` call. The version is the
# distribution's (Debian 12: 7.0.x); the tests use nothing newer than Redis 6.2.
set -eu

if ! command -v redis-server >/dev/null 2>&1; then
    sh "$(dirname "$0")/apt-install.sh" redis-server
fi
redis-server --version
