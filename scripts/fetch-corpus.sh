#!/usr/bin/env bash
# Fetch the real projects of the intel corpus (tests/intel/test_real_projects.py, bench_intel)
# into ${DRIVEROS_CORPUS:-${XDG_CACHE_HOME:-$HOME/.cache}/driveros/corpus}. Run it once with
# the network (`make corpus`; .ci/run does); the tests build each project from here at test
# time, offline. Idempotent: what is already there is kept.
#   more-itertools-10.5.0.tar.gz   its sdist from PyPI (tests: python3 -m unittest)
#   qs-6.13.0/                     npm's qs, with the packages its tape tests require
#   go-difflib/                    Debian's golang-github-pmezard-go-difflib-dev sources
set -euo pipefail

dest="${DRIVEROS_CORPUS:-${XDG_CACHE_HOME:-$HOME/.cache}/driveros/corpus}"
mkdir -p "$dest"
python="${PYTHON:-python3}"

if [ ! -f "$dest/more-itertools-10.5.0.tar.gz" ]; then
  "$python" -m pip download --quiet --no-deps --no-binary :all: more-itertools==10.5.0 -d "$dest"
fi

if [ ! -f "$dest/qs-6.13.0/node_modules/tape/package.json" ]; then
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  (
    cd "$tmp"
    npm pack --silent qs@6.13.0 >/dev/null
    mkdir qs deps
    tar xzf qs-6.13.0.tgz -C qs --strip-components=1
    # its test files' requires only: the whole devDependencies need git and a build
    cd deps
    echo '{"private": true}' >package.json
    npm install --silent --ignore-scripts --no-audit --no-fund \
      side-channel@1.0.6 tape@5.8.1 es-value-fixtures@1.4.2 for-each@0.3.3 \
      has-override-mistake@1.0.1 has-property-descriptors@1.0.2 has-symbols@1.0.3 \
      iconv-lite@0.5.2 mock-property@1.0.3 object-inspect@1.13.2 safer-buffer@2.1.2
    mv node_modules ../qs/node_modules
  )
  rm -rf "$dest/qs-6.13.0"
  mv "$tmp/qs" "$dest/qs-6.13.0"
fi

gosrc=/usr/share/gocode/src/github.com/pmezard/go-difflib
if [ ! -d "$dest/go-difflib" ]; then
  if [ -d "$gosrc" ]; then
    cp -r "$gosrc" "$dest/go-difflib"
  else
    echo "fetch-corpus: $gosrc missing: apt-get install golang-go golang-github-pmezard-go-difflib-dev" >&2
    exit 1
  fi
fi
echo "corpus ready in $dest"
