#!/usr/bin/env bash
# The semantic tools' TypeScript/JavaScript server (typescript-language-server with typescript)
# into driveros's cache directory, where the local sandbox mounts it read-only and the tools find
# it (docs/cli.md, "Semantic tools"). basedpyright comes with the dev extra (pip), gopls from the
# distribution (apt-get install gopls). Idempotent: does nothing when the servers are there.
set -euo pipefail
dir="${XDG_CACHE_HOME:-$HOME/.cache}/driveros/lsp-servers"
if [ -x "$dir/node_modules/.bin/typescript-language-server" ] && [ -d "$dir/node_modules/typescript" ]; then
  exit 0
fi
command -v npm >/dev/null || { echo "install-language-servers: npm is not installed" >&2; exit 1; }
mkdir -p "$dir"
[ -f "$dir/package.json" ] || echo '{"private": true}' > "$dir/package.json"
(cd "$dir" && npm install --no-audit --no-fund --loglevel=error \
  typescript-language-server@4.4.1 typescript@5.9.3)
