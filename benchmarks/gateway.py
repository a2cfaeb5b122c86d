#!/usr/bin/env python3
"""S1 through the gateway against the same call direct, in the same run, on stdio and HTTP.

    python benchmarks/gateway.py                    # 3 rounds x 300 calls per setup
    python benchmarks/gateway.py --calls 1000 --rounds 5 --json out.json

S1 is run.py's scenario: ``tools/call`` of ``book(date)``, whose tool asks one 3-field form
question mid-call (2025-11-25), answered at once by the client's callback; each result is
checked. Setups, per transport, rounds alternating between them:

* ``direct``: our Client -> the S1 server (benchmarks/servers/elicitkit_server.py);
* ``gateway``: our Client -> ``elicitkit gateway`` -> the same S1 server (stdio: the gateway is
  the client's child and the server the gateway's; HTTP: both hops over loopback HTTP);
* ``official``: the official ``mcp`` Client -> its own S1 server (servers/official_server.py).

Over HTTP the gateway runs on its default event loop (uvloop when installed: ``elicitkit[gateway]``);
``--also-asyncio`` adds a fourth setup, ``gateway-asyncio``, the same gateway with ``--loop asyncio``.

The issue's bar, in its words: "the gateway adds at most 1.5x the direct call's p50 and stays
faster than a direct call through the official SDK". What the gateway adds is its p50 minus the
direct p50, so the bar is met when that is at most 1.5 direct p50s (gateway p50 <= 2.5x direct)
and the gateway's p50 is below the official SDK's. The output prints both the ratio
(gateway / direct) and the added latency as a multiple of the direct p50 ("adds N.NNx").
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio

HERE = Path(__file__).resolve().parent
SERVERS = HERE / "servers"
ELICITKIT_SERVER = SERVERS / "elicitkit_server.py"
OFFICIAL_SERVER = SERVERS / "official_server.py"
ELICITKIT = str(Path(sys.executable).parent / "elicitkit")
PREFIX = "Book a table on "


def answer_for(message: str) -> dict[str, Any]:
    date = message[len(PREFIX) : -1]
    return {"name": f"guest {date}", "party_size": int(date[1:]) % 12 + 1, "confirm": True}


def expected(i: int) -> str:
    return f"booked {i % 12 + 1} for guest d{i} on d{i}"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def process(argv: list[str], ready: Callable[[str], str | None]) -> Iterator[str]:
    """Start ``argv``; yield what ``ready`` finds in its first stdout lines (its URL)."""
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert proc.stdout is not None
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                raise RuntimeError(f"{argv[1]} ended before it listened")
            found = ready(line)
            if found:
                yield found
                return
        raise RuntimeError(f"{argv[1]} did not listen within 30 s")
    finally:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()


def server_url(line: str) -> str | None:
    return line.split()[1] if line.startswith("LISTENING ") else None


def gateway_url(line: str) -> str | None:
    try:
        said = json.loads(line)
    except json.JSONDecodeError:
        return None
    return said.get("listening") if isinstance(said, dict) else None


def gateway_config(where: Path, backend: str | list[str]) -> Path:
    entry: dict[str, Any] = {"name": "bench", "policy": {"sensitive_fields": False}}
    entry["url" if isinstance(backend, str) else "command"] = backend
    path = where / "gateway.json"
    path.write_text(json.dumps({"name": "bench-gateway", "backends": [entry]}))
    return path


Call = Callable[[int], Awaitable[None]]


@contextlib.asynccontextmanager
async def elicitkit_client(target: Any) -> AsyncIterator[Call]:
    from elicitkit import Client, ElicitationResult

    async def answer(request: Any) -> Any:
        return ElicitationResult.accept(answer_for(request.message))

    async with Client(target, elicitation_callback=answer) as client:
        tool = "book"

        async def call(i: int) -> None:
            result = await client.call_tool(tool, {"date": f"d{i}"})
            if result.is_error or result.text != expected(i):
                raise AssertionError(f"book(d{i}) returned {result.text!r}")

        yield call


@contextlib.asynccontextmanager
async def official_client(target: Any) -> AsyncIterator[Call]:
    import mcp
    from mcp import types

    async def answer(context: Any, params: Any) -> Any:
        return types.ElicitResult(action="accept", content=answer_for(params.message))

    async with mcp.Client(target, mode="legacy", cache=None, elicitation_callback=answer) as client:

        async def call(i: int) -> None:
            result = await client.call_tool("book", {"date": f"d{i}"})
            text = result.content[0].text if result.content else None
            if result.is_error or text != expected(i):
                raise AssertionError(f"book(d{i}) returned {text!r}")

        yield call


async def measure(call: Call, calls: int, offset: int) -> list[float]:
    times = []
    for i in range(offset, offset + calls):
        start = time.perf_counter()
        await call(i)
        times.append(time.perf_counter() - start)
    return times


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


async def run_transport(
    transport: str, calls: int, rounds: int, warmup: int, where: Path, also_asyncio: bool = False
) -> dict[str, Any]:
    from mcp import StdioServerParameters

    s1 = [sys.executable, str(ELICITKIT_SERVER), "stdio", "--scenario", "form"]
    official_s1 = [sys.executable, str(OFFICIAL_SERVER), "stdio", "--scenario", "form"]
    results: dict[str, list[list[float]]] = {"direct": [], "gateway": [], "official": []}
    with contextlib.ExitStack() as stack:
        if transport == "stdio":
            targets: dict[str, Any] = {
                "direct": s1,
                "gateway": [ELICITKIT, "gateway", str(gateway_config(where, s1))],
                "official": StdioServerParameters(command=official_s1[0], args=official_s1[1:]),
            }
        else:
            http = ["http", "--scenario", "form", "--port", "0"]
            direct = stack.enter_context(process([sys.executable, str(ELICITKIT_SERVER), *http], server_url))
            behind = stack.enter_context(process([sys.executable, str(ELICITKIT_SERVER), *http], server_url))
            config = gateway_config(where, behind)
            port = str(free_port())
            through = stack.enter_context(
                process(
                    [ELICITKIT, "gateway", str(config), "--transport", "http", "--port", port, "--json"], gateway_url
                )
            )
            official = stack.enter_context(process([sys.executable, str(OFFICIAL_SERVER), *http], server_url))
            targets = {"direct": direct, "gateway": through, "official": official}
            if also_asyncio:  # the same gateway on asyncio's own loop, in front of its own S1 server
                behind_2 = stack.enter_context(process([sys.executable, str(ELICITKIT_SERVER), *http], server_url))
                (where / "asyncio").mkdir(exist_ok=True)
                config_2 = gateway_config(where / "asyncio", behind_2)
                argv = [ELICITKIT, "gateway", str(config_2), "--transport", "http", "--port", str(free_port())]
                targets["gateway-asyncio"] = stack.enter_context(
                    process([*argv, "--json", "--loop", "asyncio"], gateway_url)
                )
                results["gateway-asyncio"] = []
        async with contextlib.AsyncExitStack() as clients:
            connected = {
                name: await clients.enter_async_context(
                    official_client(target) if name == "official" else elicitkit_client(target)
                )
                for name, target in targets.items()
            }
            for call in connected.values():
                await measure(call, warmup, 10_000_000)
            offset = 0
            for _round in range(rounds):
                for name, call in connected.items():
                    results[name].append(await measure(call, calls, offset))
                    offset += calls
    table: dict[str, Any] = {}
    for name, per_round in results.items():
        table[name] = {
            "p50_ms": statistics.median(pct(r, 0.5) for r in per_round),
            "p99_ms": statistics.median(pct(r, 0.99) for r in per_round),
            "p50_range_ms": [min(pct(r, 0.5) for r in per_round), max(pct(r, 0.5) for r in per_round)],
        }
    table["gateway_over_direct"] = table["gateway"]["p50_ms"] / table["direct"]["p50_ms"]
    table["gateway_adds_over_direct"] = table["gateway_over_direct"] - 1
    table["bar_met"] = (
        table["gateway_adds_over_direct"] <= 1.5 and table["gateway"]["p50_ms"] < table["official"]["p50_ms"]
    )
    table["gateway_over_official"] = table["gateway"]["p50_ms"] / table["official"]["p50_ms"]
    if "gateway-asyncio" in table:
        table["gateway_asyncio_adds_over_direct"] = table["gateway-asyncio"]["p50_ms"] / table["direct"]["p50_ms"] - 1
    table["gateway_loop"] = gateway_loop() if transport == "http" else "asyncio"
    return table


def gateway_loop() -> str:
    """The event loop ``elicitkit gateway --transport http`` picks by default here."""
    import importlib.util

    return "uvloop" if importlib.util.find_spec("uvloop") is not None else "asyncio"


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {"calls": args.calls, "rounds": args.rounds, "python": sys.version.split()[0]}
    with tempfile.TemporaryDirectory() as where:
        for transport in args.transports.split(","):
            out[transport] = await run_transport(
                transport, args.calls, args.rounds, args.warmup, Path(where), args.also_asyncio and transport == "http"
            )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument("--transports", default="stdio,http")
    parser.add_argument("--json", default=None, help="also write the figures here")
    parser.add_argument(
        "--also-asyncio", action="store_true", help="HTTP: also the gateway on asyncio's loop (gateway-asyncio)"
    )
    args = parser.parse_args()
    os.environ.setdefault("ELICITKIT_TASK_DB", ":memory:")
    out = anyio.run(main_async, args)
    print(f"S1 (one form question per call), {args.calls} sequential calls x {args.rounds} rounds; p50 / p99 in ms")
    for transport in args.transports.split(","):
        row = out[transport]
        print(f"\n{transport} (the gateway on {row['gateway_loop']})")
        for name in ("direct", "gateway", "gateway-asyncio", "official"):
            if name not in row:
                continue
            low, high = row[name]["p50_range_ms"]
            print(f"  {name:15} p50 {row[name]['p50_ms']:7.2f} ({low:.2f}-{high:.2f})  p99 {row[name]['p99_ms']:7.2f}")
        print(
            f"  gateway / direct p50: {row['gateway_over_direct']:.2f}x (adds {row['gateway_adds_over_direct']:.2f}x"
            f" the direct p50)   gateway / official p50: {row['gateway_over_official']:.2f}x"
        )
        if "gateway-asyncio" in row:
            print(f"  gateway-asyncio adds {row['gateway_asyncio_adds_over_direct']:.2f}x the direct p50")
        print(
            "  bar (\"the gateway adds at most 1.5x the direct call's p50 and stays faster than a direct call"
            f' through the official SDK"): {"met" if row["bar_met"] else "NOT met"}'
        )
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
