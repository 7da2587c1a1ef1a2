#!/usr/bin/env bash
# Install code-server (a real VS Code in the browser) for the end-to-end test, cached by version.
#
#   bash editors/vscode/scripts/install-code-server.sh   # prints the code-server binary path
#
# The plain `npm install code-server` fails on these machines (root postinstall, kerberos
# headers, ripgrep and node-gyp downloads), so this follows the steps verified in
# /work/shared/recipes/editors.md. The result lives in
# ${DRIVEROS_CACHE:-~/.cache/driveros}/code-server-<version> and is reused while it is complete.
set -euo pipefail

VERSION="${CODE_SERVER_VERSION:-4.100.3}"
CACHE_ROOT="${DRIVEROS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/driveros}"
DEST="$CACHE_ROOT/code-server-$VERSION"
BIN="$DEST/node_modules/code-server/out/node/entry.js"
STAMP="$DEST/.complete"

log() { echo "install-code-server: $*" >&2; }

if [[ -f "$STAMP" && -f "$BIN" ]]; then
  echo "$BIN"
  exit 0
fi

# System pieces: headless Chromium, kerberos headers (for the kerberos native module), ripgrep.
missing=()
[[ -x /usr/lib/chromium/chromium ]] || missing+=(chromium)
dpkg -s libkrb5-dev >/dev/null 2>&1 || missing+=(libkrb5-dev)
command -v rg >/dev/null 2>&1 || missing+=(ripgrep)
if ((${#missing[@]})); then
  if [[ $(id -u) -ne 0 ]]; then
    log "missing system packages: ${missing[*]} (run as root or apt-get install them)"
    exit 1
  fi
  log "apt-get install ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

mkdir -p "$CACHE_ROOT"
WORK="$(mktemp -d "$CACHE_ROOT/.code-server-$VERSION.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT

export npm_config_yes=true npm_config_nodedir=/usr npm_config_audit=false npm_config_fund=false
export npm_config_update_notifier=false npm_config_loglevel=error

log "fetching code-server@$VERSION"
cd "$WORK"
npm pack --silent "code-server@$VERSION" >/dev/null
echo '{"name":"driveros-code-server","private":true}' >package.json
npm install --silent --ignore-scripts "./code-server-$VERSION.tgz" >/dev/null
npm rebuild --silent argon2 >/dev/null

CS="$WORK/node_modules/code-server"
log "installing the VS Code server modules"
(
  cd "$CS/lib/vscode"
  npm install --silent --omit=dev --ignore-scripts >/dev/null
  mkdir -p node_modules/@vscode/ripgrep/bin
  cp "$(command -v rg)" node_modules/@vscode/ripgrep/bin/rg
  npm rebuild --silent >/dev/null
  ln -sfn node_modules node_modules.asar
)
ln -sfn code-linux.sh "$CS/lib/vscode/bin/remote-cli/code-server"
ln -sfn browser-linux.sh "$CS/lib/vscode/bin/helpers/browser.sh"
(cd "$CS/lib/vscode/extensions" && npm install --silent --omit=dev >/dev/null)

touch "$WORK/.complete"
rm -rf "$DEST"
mv "$WORK" "$DEST"
trap - EXIT
log "installed in $DEST"
echo "$BIN"
