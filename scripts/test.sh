#!/usr/bin/env bash
# Lint, type-check and run the whole test suite (unit, conformance, interop).
# Extra arguments go to pytest, e.g. `bash scripts/test.sh -k elicitation -x`.
# Runs every step even when an earlier one fails, so one run reports everything;
# exits non-zero if any step failed.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"

bash scripts/bootstrap.sh

# Make the cache location absolute for the tests (harness.py reads it too).
CACHE="${ELICITKIT_CACHE:-$REPO/.cache}"
case "$CACHE" in
    /*) ;;
    *) CACHE="$REPO/$CACHE" ;;
esac
export ELICITKIT_CACHE="$CACHE"
export PATH="$REPO/.venv/bin:$PATH"
# The fuzzers draw the same inputs every run here; ELICITKIT_FUZZ=explore hunts for new ones.
export ELICITKIT_FUZZ="${ELICITKIT_FUZZ:-fixed}"

failed=()

echo "== ruff check src tests" >&2
.venv/bin/ruff check src tests || failed+=(ruff)

echo "== mypy (strict)" >&2
.venv/bin/mypy || failed+=(mypy)

if ((${#failed[@]})); then
    echo "test.sh: ${failed[*]} failed; running pytest anyway, exit status will be non-zero" >&2
fi

echo "== pytest" >&2
# Bytecode for our own modules, written once here: hundreds of tests start Python subprocesses
# (servers, the CLI), and with PYTHONDONTWRITEBYTECODE set (as on CI machines) or a fresh
# clone, each would otherwise compile every elicitkit module from source again: about 0.2 s
# of a 0.5 s start. Python still reads .pyc files when it may not write them.
.venv/bin/python -m compileall -q src tests examples >/dev/null || true
rc=0
# A hard cap well inside CI's 90 minutes (pytest takes about 9 on a 2-core machine): a hang ends as an
# interrupted run that names where it was, not as a CI timeout that says nothing.
# --durations: every run names its slowest tests, so the suite's time stays visible.
# Two workers (pytest-xdist), each taking whole test files (their module fixtures start once):
# most tests wait on a subprocess or a socket, so a 2-core machine runs the suite in about 60%
# of the time (measured: 537 s against 900 s). ELICITKIT_TEST_WORKERS=0 runs it in one process.
workers=(-n "${ELICITKIT_TEST_WORKERS:-2}" --dist loadfile)
timeout --signal=INT --kill-after=60 "${ELICITKIT_SUITE_CAP:-45m}" .venv/bin/python -m pytest "${workers[@]}" --durations=25 "$@" || rc=$?
if ((rc != 0)); then
    failed+=("pytest(exit $rc)")
fi

if ((${#failed[@]})); then
    echo "test.sh: FAILED: ${failed[*]}" >&2
    exit 1
fi
