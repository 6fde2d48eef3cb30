#!/bin/sh
# Installs Debian's nginx and HAProxy for the conformance cells and tests that run
# several instances behind a real load balancer (the test kit's `Balancer` starts one per
# test on a free loopback port with the configurations in crates/modelctx-test/balancers/;
# nothing here starts one). Idempotent: a machine that has both spends two version calls.
# The versions are the distribution's (Debian 12: nginx 1.22, HAProxy 2.6).
set -eu

# Debian installs both in /usr/sbin, which a non-root PATH may lack.
PATH="$PATH:/usr/sbin:/sbin"

missing=
command -v nginx >/dev/null 2>&1 || missing="$missing nginx"
command -v haproxy >/dev/null 2>&1 || missing="$missing haproxy"
if [ -n "$missing" ]; then
    # shellcheck disable=SC2086
    sh "$(dirname "$0")/apt-install.sh" $missing
fi
nginx -v 2>&1
haproxy -v | head -n 1
