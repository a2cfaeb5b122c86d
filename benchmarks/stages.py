#!/usr/bin/env python3
"""Where one call's time goes, stage by stage, in memory: S2 (a 2026 round trip) beside S1.

    python benchmarks/stages.py                  # S2 and S1, 10,000 calls each
    python benchmarks/stages.py --scenario resolver --calls 20000

``instructions.py`` counts a whole process and ``run.py`` times whole calls; neither says which
part of a call costs what. This runs ``run.py``'s own servers, client and callback in one
process (the in-memory transport), first bare, then with each stage below wrapped in a
``perf_counter`` pair, and prints every stage's inclusive microseconds per call. A stage that
runs twice per call (S2's two requests) is also shown per run, first and second, by median.

What it cannot show: a stage that waits (S1's ``run_tool`` includes the client answering its
question, since the tool awaits it), and the work between the stages (the peers, the codec, the
event loop), which is the difference between the bare time and the stages. The wrappers add
about half a microsecond per timed stage; the "wrapped" line says how much in all. Every stage
is found by name where its caller looks it up: a name that moved fails loudly, so the table
never silently leaves a stage out.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import functools
import importlib
import inspect
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE / "servers"))  # the servers' own helper modules (otel_mode)
import run  # noqa: E402 - the timed benchmark's servers, client options and checked call

# (depth, where the caller looks the name up, "Class.attr" or "name"), in call order.
STAGES: dict[str, list[tuple[int, str, str]]] = {
    "resolver": [
        (0, "elicitkit.server.session", "ServerSession._serve_modern"),
        (1, "elicitkit.server.rounds.round", "InputRound.__init__"),
        (2, "elicitkit.server.rounds.sealing", "StateBinding.for_request"),
        (2, "elicitkit.server.rounds.sealing", "AeadStateCodec.open"),
        (1, "elicitkit.server.scope", "_settle"),
        (2, "elicitkit.server.methods", "run_tool"),
        (3, "elicitkit.server.calling", "prepare_call"),
        (4, "elicitkit.server.calling", "resolve"),
        (5, "elicitkit.server.scope", "_StatelessScope.elicit_checked"),
        (6, "elicitkit.server.asking", "fingerprint_asked"),
        (2, "elicitkit.server.rounds.round", "InputRound.result"),
        (3, "elicitkit.server.rounds.sealing", "AeadStateCodec.seal_values"),
        (1, "elicitkit.server.lowlevel", "LowLevelServer.finish_modern_result"),
        (0, "elicitkit.client.rounds", "InputRequiredResult.from_wire"),
        (0, "elicitkit.client.responder", "Responder.answer_round"),
        (1, "elicitkit.client.responder", "ElicitationResponder.answer"),
    ],
    "form": [
        (0, "elicitkit.server.methods", "run_tool"),  # includes the wait for the client's answer
        (1, "elicitkit.server.calling", "prepare_call"),
        (0, "elicitkit.client.responder", "ElicitationResponder.answer"),
    ],
}
MODES = {"resolver": "modern", "form": "legacy"}
TITLES = {"resolver": "S2 resolver, 2026-07-28", "form": "S1 form, 2025-11-25"}


class Timings:
    def __init__(self) -> None:
        self.runs: dict[str, list[float]] = collections.defaultdict(list)

    def wrap(self, module_name: str, name: str) -> Callable[[], None]:
        """Time ``name`` where ``module_name`` looks it up; the undo."""
        owner: Any = importlib.import_module(module_name)
        *path, attr = name.split(".")
        for part in path:
            owner = getattr(owner, part)
        raw = inspect.getattr_static(owner, attr)  # KeyError/AttributeError: the stage moved
        kind = type(raw) if isinstance(raw, (classmethod, staticmethod)) else None
        fn = raw.__func__ if kind is not None else raw
        runs, clock = self.runs[name], time.perf_counter
        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def timed_async(*args: Any, **kwargs: Any) -> Any:
                start = clock()
                try:
                    return await fn(*args, **kwargs)
                finally:
                    runs.append(clock() - start)

            timed: Any = timed_async
        else:

            @functools.wraps(fn)
            def timed_sync(*args: Any, **kwargs: Any) -> Any:
                start = clock()
                try:
                    return fn(*args, **kwargs)
                finally:
                    runs.append(clock() - start)

            timed = timed_sync
        setattr(owner, attr, kind(timed) if kind is not None else timed)
        return lambda: setattr(owner, attr, raw)


async def _per_call(call: Callable[[int], Any], calls: int) -> float:
    start = time.perf_counter()
    for i in range(calls):
        await call(i)
    return (time.perf_counter() - start) / calls


class Measured:
    """One scenario's bare and wrapped time per call (seconds) and every stage's runs."""

    def __init__(self, scenario: str, calls: int, bare: float, wrapped: float, runs: dict[str, list[float]]) -> None:
        self.scenario, self.calls, self.bare, self.wrapped, self.runs = scenario, calls, bare, wrapped, runs


async def measure(scenario: str, calls: int, warmup: int) -> Measured:
    from elicitkit import Client

    server = run._load_server_module("elicitkit").build_server(scenario)
    async with Client(server, **run._elicitkit_options(MODES[scenario])()) as client:
        call = run._book_elicitkit(client)
        await _per_call(call, warmup)
        bare = await _per_call(call, calls)
        timings = Timings()
        undo = [timings.wrap(module, name) for _, module, name in STAGES[scenario]]
        try:
            await _per_call(call, warmup)
            for runs in timings.runs.values():
                runs.clear()
            wrapped = await _per_call(call, calls)
        finally:
            for restore in reversed(undo):
                restore()
    return Measured(scenario, calls, bare, wrapped, dict(timings.runs))


def report(measured: Measured) -> None:
    calls = measured.calls
    print(
        f"\n{TITLES[measured.scenario]}: {measured.bare * 1e6:.1f} us per call bare, "
        f"{measured.wrapped * 1e6:.1f} wrapped ({calls:,} calls)"
    )
    print(f"{'stage':58} {'us/call':>8} {'runs':>5} {'1st run':>8} {'2nd run':>8}")
    for depth, _, name in STAGES[measured.scenario]:
        runs = measured.runs.get(name, [])
        per_call = sum(runs) / calls * 1e6
        count = len(runs) / calls
        first = second = ""
        if runs and len(runs) == 2 * calls:
            first = f"{statistics.median(runs[0::2]) * 1e6:8.2f}"
            second = f"{statistics.median(runs[1::2]) * 1e6:8.2f}"
        print(f"{'  ' * depth + name:58} {per_call:8.2f} {count:5.1f} {first:>8} {second:>8}")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--scenario", default="resolver,form", help="resolver (S2), form (S1), or both")
    parser.add_argument("--calls", type=int, default=10_000, help="timed calls, bare and wrapped each")
    parser.add_argument("--warmup", type=int, default=1_000)
    args = parser.parse_args()
    for scenario in args.scenario.split(","):
        if scenario not in STAGES:
            raise SystemExit(f"unknown scenario {scenario!r}: resolver or form")
        report(asyncio.run(measure(scenario, args.calls, args.warmup)))


if __name__ == "__main__":
    main()
