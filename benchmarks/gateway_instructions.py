#!/usr/bin/env python3
"""CPU instructions the gateway process spends per S1 call, under callgrind (load-independent).

    python benchmarks/gateway_instructions.py                  # stdio and HTTP, 50 counted calls
    python benchmarks/gateway_instructions.py --transports http --calls 100

``gateway.py`` times the calls, and on a shared machine a path through three processes (host,
gateway, backend) suffers from load far more than one through two, so its ratios move from run
to run. This counts what the gateway itself executes: ``elicitkit gateway`` runs under
``valgrind --tool=callgrind --instr-atstart=no`` in front of the S1 server (stdio: the gateway's
child; HTTP: both hops over loopback), our Client makes ``--warmup`` calls, counting is switched
on (``callgrind_control -i on``) for ``--calls`` calls and off again. Compare with
``instructions.py --sdks elicitkit --scenario form``: the direct call costs its client plus its
server; through the gateway, that plus the figure printed here. ``--loop asyncio`` counts the
HTTP gateway on asyncio's own loop instead of its default (uvloop when installed).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))
from instructions import _instructions  # the Ir total of a callgrind output file

import gateway as bench  # the timed benchmark's servers, config and answers


def _valgrind(out: Path) -> list[str]:
    return ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}", "-q"]


def _switch(pid: int, on: bool) -> None:
    """Counting on or off; off also writes what was counted (``-d``)."""
    subprocess.run(["callgrind_control", "-i", "on" if on else "off", str(pid)], check=True, capture_output=True)
    if not on:
        subprocess.run(["callgrind_control", "-d", str(pid)], check=True, capture_output=True)


def _valgrind_pid(out: Path) -> int:
    """The valgrind process writing ``out`` (its pid is the gateway's)."""
    found = subprocess.run(["pgrep", "-f", f"callgrind-out-file={out}"], capture_output=True, text=True).stdout
    pids = [int(p) for p in found.split() if int(p) != os.getpid()]
    if not pids:
        raise RuntimeError("the gateway under valgrind is not running")
    return pids[0]


@contextlib.contextmanager
def _target(transport: str, where: Path, out: Path, loop: str = "auto") -> Iterator[object]:
    """What the host's Client connects to: the gateway under callgrind, in front of the S1 server."""
    gateway = [*_valgrind(out), sys.executable, "-m", "elicitkit.cli", "gateway"]
    if transport == "stdio":
        s1 = [sys.executable, str(bench.ELICITKIT_SERVER), "stdio", "--scenario", "form"]
        yield [*gateway, str(bench.gateway_config(where, s1))]
        return
    http = ["http", "--scenario", "form", "--port", "0"]
    with bench.process([sys.executable, str(bench.ELICITKIT_SERVER), *http], bench.server_url) as behind:
        config = bench.gateway_config(where, behind)
        port = str(bench.free_port())
        argv = [*gateway, str(config), "--transport", "http", "--port", port, "--json", "--loop", loop]
        with bench.process(argv, bench.gateway_url) as url:
            yield url


async def measure(transport: str, calls: int, warmup: int, where: Path, out: Path, loop: str = "auto") -> None:
    """``calls`` S1 calls through the gateway, counted into ``out``."""
    from elicitkit import Client, ElicitationResult

    async def answer(request: object) -> object:
        return ElicitationResult.accept(bench.answer_for(request.message))  # type: ignore[attr-defined]

    with _target(transport, where, out, loop) as target:
        async with Client(target, elicitation_callback=answer, timeout=900) as client:

            async def run(start: int, count: int) -> None:
                for i in range(start, start + count):
                    result = await client.call_tool("book", {"date": f"d{i}"})
                    if result.is_error or result.text != bench.expected(i):
                        raise AssertionError(f"book(d{i}) returned {result.text!r}")

            await run(10_000_000, warmup)
            pid = _valgrind_pid(out)
            _switch(pid, True)
            await run(0, calls)
            _switch(pid, False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--transports", default="stdio,http")
    parser.add_argument("--loop", default="auto", help="the gateway's HTTP event loop: auto, asyncio, uvloop")
    args = parser.parse_args()
    os.environ.setdefault("ELICITKIT_TASK_DB", ":memory:")
    with tempfile.TemporaryDirectory() as where:
        for transport in args.transports.split(","):
            out = Path(where) / f"gateway-{transport}.callgrind"
            anyio.run(measure, transport, args.calls, args.warmup, Path(where), out, args.loop)
            time.sleep(0.5)  # the gateway's last file, written as it exits
            per_call = max(_instructions(found) for found in Path(where).glob(f"{out.name}*")) // args.calls
            loop = f" (--loop {args.loop})" if transport == "http" else ""
            print(f"S1 through the gateway, {transport}{loop}: {per_call:,} gateway instructions per call")


if __name__ == "__main__":
    main()
