#!/usr/bin/env bash
# The VS Code stage of `make test` (target test-vscode): lint, typecheck, unit tests, package,
# then the end-to-end test in a real VS Code (code-server + headless Chromium).
#
# Works on a clean Debian 12 machine with node 20: npm ci from the committed lock file;
# install-code-server.sh apt-installs chromium/libkrb5-dev/ripgrep when missing and caches
# code-server under ~/.cache/driveros. Exits non-zero on the first failure.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$(cd ../.. && pwd)"
export DRIVEROS_PYTHON="${DRIVEROS_PYTHON:-$ROOT/.venv/bin/python}"
export npm_config_audit=false npm_config_fund=false npm_config_update_notifier=false

stage() { printf '\n== vscode: %s (%ss)\n' "$*" "$SECONDS" >&2; }

# code-server 4.100.3 and the toolchain need node 20 (Debian's own nodejs 18 is too old).
if ! node_major="$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null)" || ((node_major < 20)); then
  echo "vscode tests: node >= 20 is required (found: $(node --version 2>/dev/null || echo none))" >&2
  exit 1
fi

stage "npm ci"
if [[ ! -f node_modules/.package-lock.json ]] || ! cmp -s package-lock.json node_modules/.ci-lock; then
  npm ci --no-audit --no-fund --loglevel=error
  cp package-lock.json node_modules/.ci-lock
fi

stage "lint";       npm run -s lint
stage "typecheck";  npm run -s typecheck
stage "unit tests"; npm run -s test:unit
stage "package";    npm run -s build && npm run -s package
python3 -c 'import zipfile, sys; sys.exit(0 if "extension/LICENSE.txt" in zipfile.ZipFile("dist/driveros.vsix").namelist() else "the .vsix ships no LICENSE")'


stage "end-to-end in VS Code (code-server + headless Chromium)"
DRIVEROS_CODE_SERVER="$(bash scripts/install-code-server.sh)"
export DRIVEROS_CODE_SERVER
node out/test/e2e/run.js
node out/test/e2e/inline.js
stage "done"
