"""``benchmarks/stages.py`` times a call's stages by name: each name must still be on the path.

A stage renamed or moved off the call's path would otherwise show as 0 us (a table that looks
like a speed-up). In a child process: the script wraps functions of this interpreter's
elicitkit and puts the benchmarks on ``sys.path``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.perf, pytest.mark.timeout(120)]

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
CALLS = 40

PROBE = f"""
import asyncio, json, sys
sys.path.insert(0, {str(BENCHMARKS)!r})
import stages
out = {{}}
for scenario in stages.STAGES:
    measured = asyncio.run(stages.measure(scenario, {CALLS}, 10))
    out[scenario] = {{name: len(measured.runs.get(name, [])) for _, _, name in stages.STAGES[scenario]}}
print(json.dumps(out))
"""


def test_every_stage_is_found_and_runs_on_every_call() -> None:
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=100, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    counts = json.loads(done.stdout.strip().splitlines()[-1])
    assert set(counts) == {"resolver", "form"}
    for scenario, stages in counts.items():
        idle = [name for name, runs in stages.items() if runs < CALLS]
        assert not idle, f"{scenario}: stages that no longer run on every call: {idle}"
    # S2's two requests: the per-run columns (1st, 2nd) are only meaningful if these alternate.
    assert counts["resolver"]["ServerSession._serve_modern"] == 2 * CALLS
    assert counts["resolver"]["AeadStateCodec.open"] == CALLS  # only the retry carries a state
    assert counts["resolver"]["AeadStateCodec.seal_values"] == CALLS  # only the first round asks
