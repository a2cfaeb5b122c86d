#!/usr/bin/env python3
"""Tool-call round trips: elicitkit against the official ``mcp`` SDK, side by side.

    python benchmarks/run.py                 # full run (a few minutes)
    python benchmarks/run.py --quick         # under a minute, noisier
    python benchmarks/run.py --rounds 7 --calls 3000 --json out.json

See ``benchmarks/README.md`` for what is measured and how to read the table. In short: for
every transport (in-memory, stdio, Streamable HTTP) and every SDK, one client process (and,
for stdio and HTTP, one server process) is started, connected and warmed up; then rounds
alternate between the SDKs. A round measures ``--calls`` sequential calls (latency p50/p99)
and ``--calls`` calls with ``--concurrency`` (32) calls in flight from one client (calls/s).
The table shows the median over the rounds and the min-max range.

Internally this file is also the client worker: ``run.py _worker ...`` is started once per
(transport, SDK), connects with that SDK's own client, and answers ``warmup N`` / ``seq N`` /
``conc N`` / ``quit`` commands on its stdin with one JSON line each on its stdout.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import itertools
import json
import math
import os
import platform
import resource
import secrets
import selectors
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SERVERS = HERE / "servers"
SERVER_SCRIPTS = {
    "elicitkit": SERVERS / "elicitkit_server.py",
    "official": SERVERS / "official_server.py",
    "raw": SERVERS / "raw_server.py",
}
SDKS = ("elicitkit", "official")
RAW = "raw"  # the raw JSON-RPC echo (servers/raw_server.py): the floor under S0, run beside the SDKs
TRANSPORTS = ("memory", "stdio", "http")
TRANSPORT_TITLES = {"memory": "in-memory", "stdio": "stdio", "http": "Streamable HTTP"}
RESULT_PREFIX = "@@result "
SERVER_CPU, CLIENT_CPU = 0, 1

Call = Callable[[int], Awaitable[None]]

# ============================================================================= scenarios
#
# A scenario is what one "call" is. Each SDK gets a factory that, given a connected client of
# that SDK, returns ``call(i)``: one complete round trip, checked. ``client_options`` are
# extra keyword arguments for that SDK's client constructor (an elicitation callback, the
# protocol mode). The server side of a scenario lives in servers/<sdk>_server.py under the
# same name.


@dataclass(frozen=True)
class Scenario:
    name: str
    title: str
    calls: dict[str, Callable[[Any], Call]]
    client_options: dict[str, Callable[[], dict[str, Any]]] = field(default_factory=dict)
    parkable: bool = False  # its calls wait on the client's elicitation callback (see PARK)


class CheckFailed(AssertionError):
    pass


def _echo_elicitkit(client: Any) -> Call:
    async def call(i: int) -> None:
        text = f"hello {i}"
        result = await client.call_tool("echo", {"text": text})
        if result.is_error or len(result.content) != 1 or result.content[0].text != text:
            raise CheckFailed(f"echo returned {result!r}")

    return call


def _echo_raw(client: Any) -> Call:
    async def call(i: int) -> None:
        text = f"hello {i}"
        result = await client.call_tool("echo", {"text": text})
        if result["content"][0]["text"] != text:
            raise CheckFailed(f"echo returned {result!r}")

    return call


class RawClient:
    """A JSON-RPC client with nothing else in it: requests by id, answers matched by id."""

    def __init__(self, exchange: Callable[[bytes], Awaitable[bytes | None]]) -> None:
        self.exchange = exchange  # sends one request; its answer, or None when it comes by the reader
        self.next_id = 0
        self.waiting: dict[int, Any] = {}

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        import orjson

        self.next_id += 1
        request = {"jsonrpc": "2.0", "id": self.next_id, "method": "tools/call"}
        request["params"] = {"name": name, "arguments": arguments}
        answer = await self.exchange(orjson.dumps(request))
        if answer is None:  # stdio: the reader resolves it
            import asyncio

            future = self.waiting[self.next_id] = asyncio.get_running_loop().create_future()
            answer = await future
        return dict(orjson.loads(answer)["result"])


@contextlib.asynccontextmanager
async def _raw_client(transport: str, target: str, server_args: list[str]) -> AsyncIterator[RawClient]:
    import asyncio

    import orjson

    if transport == "memory":
        handle = _load_server_module(RAW).build_server("echo")

        async def direct(data: bytes) -> bytes:
            return handle(data)  # type: ignore[no-any-return]

        yield RawClient(direct)
    elif transport == "stdio":
        proc = await asyncio.create_subprocess_exec(
            sys.executable, *server_args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, limit=1 << 24
        )
        assert proc.stdin is not None and proc.stdout is not None
        stdin, stdout = proc.stdin, proc.stdout
        client: RawClient

        async def send(data: bytes) -> None:
            stdin.write(data + b"\n")  # asyncio writes at once, or buffers (several per tick: one write)
            return None

        async def read() -> None:
            while line := await stdout.readline():
                answer_id = orjson.loads(line)["id"]
                client.waiting.pop(answer_id).set_result(line)

        client = RawClient(send)
        reader = asyncio.ensure_future(read())
        try:
            yield client
        finally:
            stdin.close()
            await proc.wait()
            reader.cancel()
    else:
        import aiohttp

        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as http:
            headers = {"content-type": "application/json", "accept": "application/json"}

            async def post(data: bytes) -> bytes:
                async with http.post(target, data=data, headers=headers) as resp:
                    return await resp.read()

            yield RawClient(post)


def _echo_official(client: Any) -> Call:
    async def call(i: int) -> None:
        text = f"hello {i}"
        result = await client.call_tool("echo", {"text": text})
        if result.is_error or len(result.content) != 1 or result.content[0].text != text:
            raise CheckFailed(f"echo returned {result!r}")

    return call


# -- S1 / S2: the tool `book(date)` asks "Book a table on <date>?" with a 3-field form (name: str,
# party_size: int, confirm: bool). The client's callback answers from the question alone, so a
# result can only be right if the answer went to the call that asked: the call of index i books
# date "d<i>", and expects "booked <party_of(i)> for guest d<i> on d<i>".

QUESTION_PREFIX = "Book a table on "


def _party_of(date: str) -> int:
    return int(date[1:]) % 12 + 1


def _answer_for(message: str) -> dict[str, Any]:
    """The callback's answer to one question: derived from the date it names."""
    if not (message.startswith(QUESTION_PREFIX) and message.endswith("?")):
        raise CheckFailed(f"unexpected question {message!r}")
    date = message[len(QUESTION_PREFIX) : -1]
    return {"name": f"guest {date}", "party_size": _party_of(date), "confirm": True}


def _expected(i: int) -> str:
    date = f"d{i}"
    return f"booked {_party_of(date)} for guest {date} on {date}"


class Park:
    """Parking: while closed, every elicitation callback waits (a person who has not answered yet)."""

    def __init__(self) -> None:
        self.gate: Any = None  # an anyio.Event while parking; None: answer at once
        self.parked = 0
        self.target = 0
        self.all_parked: Any = None
        self.moved: Any = None  # set when a call parks or fails (see _park's pacing)

    def close(self, target: int) -> None:
        import anyio

        self.gate, self.parked, self.target, self.all_parked = anyio.Event(), 0, target, anyio.Event()
        self.moved = anyio.Event()

    def _moved(self) -> None:
        import anyio

        moved, self.moved = self.moved, anyio.Event()
        if moved is not None:
            moved.set()

    async def wait_if_closed(self) -> None:
        gate = self.gate
        if gate is None:
            return
        self.parked += 1
        if self.parked >= self.target:
            self.all_parked.set()
        self._moved()
        await gate.wait()

    def open(self) -> None:
        gate, self.gate = self.gate, None
        if gate is not None:
            gate.set()


PARK = Park()


def _book_check(result: Any, i: int) -> None:
    expected = _expected(i)
    if result.is_error or len(result.content) != 1 or result.content[0].text != expected:
        raise CheckFailed(f"book(d{i}) returned {result!r}, expected {expected!r}")


def _book_elicitkit(client: Any) -> Call:
    async def call(i: int) -> None:
        _book_check(await client.call_tool("book", {"date": f"d{i}"}), i)

    return call


def _book_official(client: Any) -> Call:
    async def call(i: int) -> None:
        _book_check(await client.call_tool("book", {"date": f"d{i}"}), i)

    return call


def _elicitkit_options(mode: str) -> Callable[[], dict[str, Any]]:
    def options() -> dict[str, Any]:
        from elicitkit import ElicitationResult, FormRequest

        async def answer(request: Any) -> Any:
            if not isinstance(request, FormRequest):
                raise CheckFailed(f"expected a form question, got {request!r}")
            await PARK.wait_if_closed()
            return ElicitationResult.accept(_answer_for(request.message))

        chosen: dict[str, Any] = {"mode": mode, "elicitation_callback": answer}
        if mode == "modern":  # a server under valgrind (instructions.py) takes longer to answer discover
            chosen["discover_timeout"] = float(os.environ.get("BENCH_DISCOVER_TIMEOUT", "10"))
        return chosen

    return options


def _official_options(mode: str) -> Callable[[], dict[str, Any]]:
    def options() -> dict[str, Any]:
        import mcp_types

        async def answer(context: Any, params: Any) -> Any:
            await PARK.wait_if_closed()
            return mcp_types.ElicitResult(action="accept", content=_answer_for(params.message))

        return {"mode": mode, "elicitation_callback": answer}

    return options


SCENARIOS: dict[str, Scenario] = {
    "echo": Scenario(
        name="echo",
        title="S0, tool `echo`: returns its text argument as one text content item",
        calls={"elicitkit": _echo_elicitkit, "official": _echo_official, RAW: _echo_raw},
    ),
    "form": Scenario(
        name="form",
        title="S1, tool `book` asks one 3-field form question mid-call (ctx.elicit); the client accepts at once",
        calls={"elicitkit": _book_elicitkit, "official": _book_official},
        client_options={"elicitkit": _elicitkit_options("legacy"), "official": _official_options("legacy")},
        parkable=True,
    ),
    "resolver": Scenario(
        name="resolver",
        title=(
            "S2, tool `book` gets the same form through a resolver (Resolve/Elicit) on 2026-07-28: "
            "InputRequiredResult, then the retry with the answer"
        ),
        calls={"elicitkit": _book_elicitkit, "official": _book_official},
        client_options={"elicitkit": _elicitkit_options("modern"), "official": _official_options("2026-07-28")},
        parkable=True,  # parked between its rounds: the server has answered and should hold nothing
    ),
}
SCENARIO_ORDER = ("echo", "form", "resolver")

# ============================================================================= the worker


def _pin(cpu: int | None) -> None:
    if cpu is not None and hasattr(os, "sched_setaffinity"):
        with contextlib.suppress(OSError):
            os.sched_setaffinity(0, {cpu})


def _server_args(
    sdk: str,
    mode: str,
    scenario: str,
    cpu: int | None,
    tag: str,
    profile: str | None,
    memfile: str | None = None,
    tracemalloc: bool = False,
) -> list[str]:
    """The server script and its arguments (``profile``: where it writes cProfile stats;
    ``memfile``: where it writes its memory use on SIGUSR1; ``tracemalloc``: trace allocations)."""
    args = [str(SERVER_SCRIPTS[sdk]), mode, "--scenario", scenario, "--tag", tag]
    if cpu is not None:
        args += ["--cpu", str(cpu)]
    if profile:
        args += ["--profile", profile]
    if memfile:
        args += ["--memfile", memfile]
    if tracemalloc:
        args += ["--tracemalloc"]
    return args


def _load_server_module(sdk: str) -> Any:
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"bench_{sdk}_server", SERVER_SCRIPTS[sdk])
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@contextlib.asynccontextmanager
async def _connect(args: argparse.Namespace, scenario: Scenario) -> AsyncIterator[tuple[Any, str]]:
    """Connect with the worker's SDK's own client; yields (client, negotiated protocol version)."""
    sdk, transport, target = args.sdk, args.transport, args.target
    server_args = _server_args(
        sdk,
        "stdio",
        scenario.name,
        args.server_cpu,
        args.tag,
        args.server_profile,
        args.server_memfile,
        args.server_tracemalloc,
    )
    if sdk == RAW:
        async with _raw_client(transport, target, server_args) as raw:
            yield raw, "none (raw JSON-RPC)"
        return
    options = scenario.client_options.get(sdk, dict)()
    # instructions.py runs a stdio server under valgrind: the command to put before Python
    wrapper = json.loads(os.environ.get("BENCH_STDIO_SERVER_WRAPPER", "[]"))
    if sdk == "elicitkit":
        from elicitkit import Client

        if transport == "memory":
            where: Any = _load_server_module(sdk).build_server(scenario.name)
        elif transport == "stdio":
            where = [*wrapper, sys.executable, *server_args]
        else:
            where = target
        async with Client(where, **options) as client:
            yield client, str(client.protocol_version)
    else:
        import mcp

        if transport == "memory":
            where = _load_server_module(sdk).build_server(scenario.name)
        elif transport == "stdio":
            command = [*wrapper, sys.executable, *server_args]
            where = mcp.StdioServerParameters(command=command[0], args=command[1:])
        elif args.parking:
            # Parking holds one HTTP connection per parked call: lift httpx's pool limit (100
            # connections), which would otherwise stop the 101st call before it reaches the server.
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            http = httpx2.AsyncClient(
                limits=httpx2.Limits(max_connections=None, max_keepalive_connections=None),
                timeout=httpx2.Timeout(300.0, read=900.0),
            )
            where = streamable_http_client(target, http_client=http)
        else:
            where = target
        # mode="legacy": the 2025-11-25 initialize handshake (the default "auto" would probe
        # server/discover first, and in-memory would bypass JSON-RPC entirely); S2 pins
        # "2026-07-28" instead (no probe; in-memory, the SDK's direct in-process dispatch).
        options.setdefault("mode", "legacy")
        async with mcp.Client(where, **options) as client:
            yield client, str(client.protocol_version)


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _percentile(sorted_values: list[float], q: float) -> float:
    """Nearest-rank percentile of an already sorted list."""
    if not sorted_values:
        return float("nan")
    rank = max(1, min(len(sorted_values), math.ceil(q / 100 * len(sorted_values))))
    return sorted_values[rank - 1]


async def _sequential(call: Call, n: int, collect: bool = True) -> dict[str, float]:
    """``n`` calls one at a time; ``collect=False`` when the caller collected already (instructions.py
    counts from before this call, and a full collection would add ~0.3M instructions per call)."""
    clock = time.perf_counter
    latencies: list[float] = []
    if collect:
        gc.collect()
    cpu0, t0 = _cpu_seconds(), clock()
    for i in range(n):
        start = clock()
        await call(i)
        latencies.append(clock() - start)
    wall, cpu = clock() - t0, _cpu_seconds() - cpu0
    latencies.sort()
    return {
        "p50_ms": _percentile(latencies, 50) * 1e3,
        "p90_ms": _percentile(latencies, 90) * 1e3,
        "p99_ms": _percentile(latencies, 99) * 1e3,
        "mean_ms": statistics.fmean(latencies) * 1e3,
        "seq_calls_per_s": n / wall,
        "seq_client_cpu_us_per_call": cpu / n * 1e6,
    }


async def _concurrent(call: Call, n: int, concurrency: int) -> dict[str, float]:
    import anyio

    clock = time.perf_counter
    next_index = 0

    async def worker() -> None:
        nonlocal next_index
        while next_index < n:
            i = next_index
            next_index += 1
            await call(i)

    gc.collect()
    cpu0, t0 = _cpu_seconds(), clock()
    async with anyio.create_task_group() as tg:
        for _ in range(concurrency):
            tg.start_soon(worker)
    wall, cpu = clock() - t0, _cpu_seconds() - cpu0
    return {"calls_per_s": n / wall, "conc_client_cpu_us_per_call": cpu / n * 1e6}


_RESULT_FD = 1


def _emit(obj: dict[str, Any]) -> None:
    """One result line to the runner."""
    os.write(_RESULT_FD, (RESULT_PREFIX + json.dumps(obj) + "\n").encode())


async def _worker_main(args: argparse.Namespace) -> None:
    import anyio

    global _RESULT_FD
    # Our stdout carries results only: keep a private copy of it and send fd 1 to stderr,
    # so nothing a library prints can end up in the result stream.
    _RESULT_FD = os.dup(1)
    os.dup2(2, 1)
    emit = _emit

    profile = None
    if args.profile:
        import cProfile

        profile = cProfile.Profile()  # switched on for the measured phases only
    scenario = SCENARIOS[args.scenario]
    async with _connect(args, scenario) as (client, version):
        call = scenario.calls[args.sdk](client)
        await call(-1)  # one checked call before anything is timed
        emit({"event": "ready", "protocol_version": version})
        while True:
            line = await anyio.to_thread.run_sync(sys.stdin.readline)
            command, *numbers = line.split() or ["quit"]
            if command == "quit":
                break
            if command == "mem":
                emit({"event": "mem", **_memory_use()})
                continue
            if command == "gc":  # instructions.py: collect before counting starts, not inside it
                gc.collect()
                emit({"event": "gc"})
                continue
            n = int(numbers[0])
            if command == "park":
                timeout = float(numbers[1]) if len(numbers) > 1 else 900.0
                emit(await _park(call, n, timeout, int(numbers[2]) if len(numbers) > 2 else 0))
                continue
            if command == "warmup":
                await _sequential(call, n)
                await _concurrent(call, n, args.concurrency)
                emit({"event": "warm"})
                continue
            if command not in ("seq", "conc"):
                raise SystemExit(f"unknown command {command!r}")
            if profile is not None:
                profile.enable()
            if command == "seq":
                result = await _sequential(call, n, collect=numbers[1:2] != ["0"])
            else:
                result = await _concurrent(call, n, args.concurrency)
            if profile is not None:
                profile.disable()
            emit({"event": command, **result})
    if profile is not None:
        profile.dump_stats(args.profile)


def _memory_use() -> dict[str, Any]:
    sys.path.insert(0, str(SERVERS))
    import _common  # the same probe the servers use

    return dict(_common.memory_use())


async def _park(call: Call, n: int, timeout: float, pace: int = 0) -> dict[str, Any]:
    """Start ``n`` calls whose questions all wait in the callback; report, then release on command.

    Emits ``parked`` (with this process's memory) once every call's question has reached the
    callback, waits for a ``release`` line on stdin, answers them all, and returns the tally:
    how many calls came back right (each checks that its own answer reached it). ``pace`` > 0:
    at most that many calls on their way to the callback at a time (0: all ``n`` at once).
    """
    import anyio
    import anyio.lowlevel

    clock = time.perf_counter
    failures: list[str] = []
    ok = 0

    async def one(i: int) -> None:
        nonlocal ok
        try:
            await call(i)
        except Exception as exc:  # counted and reported, never fatal: the tally is the result
            failures.append(f"{type(exc).__name__}: {exc}"[:300])
            PARK._moved()  # (a call that failed before its question never parks)
        else:
            ok += 1

    PARK.close(n)
    t0 = clock()
    async with anyio.create_task_group() as tg:
        for i in range(n):
            while pace and i - PARK.parked - len(failures) >= pace:
                await PARK.moved.wait()
            tg.start_soon(one, i)
            if i % 256 == 255:
                await anyio.lowlevel.checkpoint()  # let the first ones go out while the rest are started
        with anyio.move_on_after(timeout) as waited:
            await PARK.all_parked.wait()
        parked_s = clock() - t0
        report = {"event": "parked", "parked": PARK.parked, "parked_seconds": parked_s, **_memory_use()}
        if waited.cancelled_caught:
            report["timed_out"] = True
        _emit(report)
        line = await anyio.to_thread.run_sync(sys.stdin.readline)
        if line.strip() != "release":
            raise SystemExit(f"expected release, got {line!r}")
        t1 = clock()
        PARK.open()
    return {
        "event": "released",
        "ok": ok,
        "failed": len(failures),
        "failures": failures[:5],
        "release_seconds": clock() - t1,
    }


def worker(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="run.py _worker")
    parser.add_argument("--sdk", choices=[*SDKS, RAW], required=True)
    parser.add_argument("--transport", choices=TRANSPORTS, required=True)
    parser.add_argument("--scenario", default="echo")
    parser.add_argument("--target", default="")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--cpu", type=int, default=None)
    parser.add_argument("--server-cpu", type=int, default=None)
    parser.add_argument("--tag", default="")
    parser.add_argument("--profile", default=None, help="cProfile the measured rounds into this file")
    parser.add_argument("--server-profile", default=None, help="have a stdio server cProfile itself into this file")
    parser.add_argument("--server-memfile", default=None, help="a stdio server writes its memory use here on SIGUSR1")
    parser.add_argument("--server-tracemalloc", action="store_true", help="a stdio server traces its allocations")
    parser.add_argument("--tracemalloc", action="store_true", help="trace this process's allocations")
    parser.add_argument("--parking", action="store_true", help="set up for parking many calls (HTTP pool limits)")
    args = parser.parse_args(argv)
    if args.tracemalloc:
        import tracemalloc

        tracemalloc.start()
    _pin(args.cpu)
    import anyio

    anyio.run(_worker_main, args)


# ============================================================================= processes


class ProcessError(RuntimeError):
    pass


class Child:
    """A child process whose stdout we read line by line, with timeouts."""

    def __init__(self, name: str, argv: list[str], *, log: Path | None = None) -> None:
        self.name = name
        self._buffer = b""
        self._stderr = open(log, "ab") if log is not None else None  # noqa: SIM115
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            start_new_session=True,  # its own process group: a terminal ^C reaches only us
        )

    def readline(self, timeout: float) -> str:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while b"\n" not in self._buffer:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise ProcessError(f"{self.name}: no answer within {timeout:.0f}s")
                if not sel.select(left):
                    continue
                chunk = os.read(fd, 65536)
                if not chunk:
                    raise ProcessError(f"{self.name}: exited (code {self.proc.wait()}) before answering")
                self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line.decode()

    def result(self, timeout: float) -> dict[str, Any]:
        """The next result line (anything else on stdout is ignored)."""
        while True:
            line = self.readline(timeout)
            if line.startswith(RESULT_PREFIX):
                return dict(json.loads(line[len(RESULT_PREFIX) :]))

    def tell(self, command: str) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(command.encode() + b"\n")
            self.proc.stdin.flush()
        except BrokenPipeError as exc:
            raise ProcessError(f"{self.name}: gone (code {self.proc.poll()})") from exc

    def stop(self, polite: str | None = None, grace: float = 10.0) -> None:
        """Ask (``polite`` command, then EOF on stdin), then SIGTERM the group, then SIGKILL it."""
        proc = self.proc
        if proc.poll() is None:
            with contextlib.suppress(OSError, ValueError):
                if polite is not None:
                    self.tell(polite)
            with contextlib.suppress(OSError, ValueError):
                assert proc.stdin is not None
                proc.stdin.close()
            for sig in (None, signal.SIGTERM, signal.SIGKILL):
                if sig is not None:
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.killpg(proc.pid, sig)
                try:
                    proc.wait(grace if sig is not signal.SIGKILL else 30)
                    break
                except subprocess.TimeoutExpired:
                    continue
        for stream in (proc.stdin, proc.stdout):
            with contextlib.suppress(OSError, ValueError):
                if stream is not None:
                    stream.close()
        if self._stderr is not None:
            self._stderr.close()


def _cpu_of(*pids: int | None) -> float | None:
    """User+system CPU seconds these processes have used so far (Linux /proc; None elsewhere)."""
    total = 0.0
    for pid in pids:
        if pid is None:
            continue
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            return None
        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total if any(pid is not None for pid in pids) else None


def _machine_busy() -> float | None:
    """CPU seconds all CPUs of the machine have spent busy so far (Linux /proc/stat)."""
    try:
        fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    except OSError:
        return None
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(x) for x in fields[:8])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


class _Meter:
    """CPU use during one phase: the server's per call, and the rest of the machine's (other work)."""

    def __init__(self, client_pid: int, server_pid: int | None) -> None:
        self.client_pid, self.server_pid = client_pid, server_pid
        self.start = self._sample()

    def _sample(self) -> tuple[float | None, float | None, float | None, float]:
        ours = _cpu_of(self.client_pid, self.server_pid)
        return _cpu_of(self.server_pid), ours, _machine_busy(), time.monotonic()

    def read(self, phase: str, calls: int) -> dict[str, float]:
        (server0, ours0, busy0, t0), (server1, ours1, busy1, t1) = self.start, self._sample()
        out = {}
        if server0 is not None and server1 is not None:
            out[f"{phase}_server_cpu_us_per_call"] = (server1 - server0) / calls * 1e6
        if ours0 is not None and ours1 is not None and busy0 is not None and busy1 is not None and t1 > t0:
            foreign = (busy1 - busy0) - (ours1 - ours0)  # busy CPU time that was not ours
            out[f"{phase}_foreign_cpu_pct"] = max(0.0, foreign / (t1 - t0) / (os.cpu_count() or 1) * 100)
        return out


def _child_server_pid(parent: int, tag: str) -> int | None:
    """The stdio server a worker's client spawned: a tagged process whose parent is the worker."""
    for pid in _tagged_pids(tag):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == parent:
            return pid
    return None


def _tagged_pids(tag: str) -> list[int]:
    """Processes whose command line carries this run's tag: the servers we started, if any remain."""
    found: list[int] = []
    if not Path("/proc").is_dir():
        return found
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if tag.encode() in cmdline:
            found.append(int(entry.name))
    return found


@contextlib.contextmanager
def fleet(tag: str) -> Iterator[list[tuple[Child, str | None]]]:
    """Every child started in the block is stopped at its end, and nothing tagged survives it."""
    children: list[tuple[Child, str | None]] = []
    try:
        yield children
    finally:
        for child, polite in reversed(children):
            child.stop(polite)
        for pid in _tagged_pids(tag):
            print(f"warning: process {pid} outlived its parent; killing it", file=sys.stderr)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)


# ============================================================================= the runner


@dataclass
class Config:
    scenarios: list[str]
    transports: list[str]
    sdks: list[str]
    rounds: int
    calls: dict[str, int]  # per scenario
    warmup: int
    concurrency: int
    pin: bool
    timeout: float
    stderr_log: Path | None
    profile_dir: Path | None
    park_sizes: list[int]
    park_scenarios: list[str]
    park_transports: list[str]
    park_tracemalloc: bool
    park_timeout: float
    official_park_cap: dict[str, int]
    park_pace: int = 0

    @property
    def pinned(self) -> bool:
        return self.pin and hasattr(os, "sched_setaffinity") and len(os.sched_getaffinity(0)) >= 2

    def cpus(self) -> tuple[int | None, int | None]:
        """(client CPU, server CPU), or (None, None) unpinned."""
        return (CLIENT_CPU, SERVER_CPU) if self.pinned else (None, None)

    def as_dict(self) -> dict[str, Any]:
        keys = ("scenarios", "transports", "sdks", "rounds", "calls", "warmup", "concurrency")
        keys += ("park_sizes", "park_scenarios", "park_transports", "park_tracemalloc", "park_timeout")
        keys += ("official_park_cap", "park_pace")
        return {**{k: getattr(self, k) for k in keys}, "pinned": self.pinned, "profiled": self.profile_dir is not None}


@dataclass
class Pair:
    """One SDK's client worker and, for HTTP (or, found later, stdio), its server process."""

    worker: Child
    server: Child | None
    server_pid: int | None = None
    protocol_version: str = ""
    url: str = ""


def start_pairs(
    cfg: Config,
    children: list[tuple[Child, str | None]],
    scenario: str,
    transport: str,
    sdks: list[str],
    tag: str,
    *,
    profile: Callable[[str, str], str | None] = lambda sdk, role: None,
    memfile: Callable[[str], str | None] = lambda sdk: None,
    tracemalloc: bool = False,
    parking: bool = False,
) -> dict[str, Pair]:
    """Start the worker (and the HTTP server) of each SDK, side by side; returns once all are connected.

    The processes start in parallel (their imports take a second or so each); nothing is
    measured until every one of them is ready.
    """
    client_cpu, server_cpu = cfg.cpus()
    servers: dict[str, Child] = {}
    targets = dict.fromkeys(sdks, "")
    if transport == "http":
        for sdk in sdks:
            argv = _server_args(
                sdk, "http", scenario, server_cpu, tag, profile(sdk, "server"), memfile(sdk), tracemalloc
            )
            servers[sdk] = Child(f"{sdk} http server", [sys.executable, *argv], log=cfg.stderr_log)
            children.append((servers[sdk], None))
        for sdk, server in servers.items():
            line = ""
            while not line.startswith("LISTENING "):
                line = server.readline(cfg.timeout)
            targets[sdk] = line.split(None, 1)[1]
    workers: dict[str, Child] = {}
    for sdk in sdks:
        argv = [sys.executable, str(Path(__file__).resolve()), "_worker", "--sdk", sdk, "--transport", transport]
        argv += ["--scenario", scenario, "--target", targets[sdk], "--concurrency", str(cfg.concurrency)]
        argv += ["--tag", tag]
        if client_cpu is not None:
            argv += ["--cpu", str(client_cpu), "--server-cpu", str(server_cpu)]
        client_profile = profile(sdk, "client" if transport != "memory" else "process")
        if client_profile:
            argv += ["--profile", client_profile]
        if transport == "stdio":
            server_profile = profile(sdk, "server")
            if server_profile:
                argv += ["--server-profile", server_profile]
            if memfile(sdk):
                argv += ["--server-memfile", str(memfile(sdk))]
            if tracemalloc:
                argv += ["--server-tracemalloc"]
        if tracemalloc:
            argv += ["--tracemalloc"]
        if parking:
            argv += ["--parking"]
        workers[sdk] = Child(f"{sdk} {transport} client", argv, log=cfg.stderr_log)
        children.append((workers[sdk], "quit"))
    pairs: dict[str, Pair] = {}
    for sdk in sdks:
        worker, server = workers[sdk], servers.get(sdk)
        pair = Pair(worker, server, url=targets[sdk])
        pair.protocol_version = worker.result(cfg.timeout)["protocol_version"]
        pair.server_pid = server.proc.pid if server is not None else _child_server_pid(worker.proc.pid, tag)
        pairs[sdk] = pair
    return pairs


def run_transport(
    cfg: Config, scenario: str, transport: str, tag: str, sdks: list[str] | None = None
) -> dict[str, Any]:
    """Start one client (and server) per SDK for ``transport``, warm up, alternate rounds."""
    sdks = cfg.sdks if sdks is None else sdks
    out: dict[str, Any] = {sdk: {"rounds": []} for sdk in sdks}
    calls = cfg.calls[scenario]

    def profile(sdk: str, role: str) -> str | None:
        return str(cfg.profile_dir / f"{scenario}-{transport}-{sdk}-{role}.prof") if cfg.profile_dir else None

    with fleet(tag) as children:
        pairs = start_pairs(cfg, children, scenario, transport, sdks, tag, profile=profile)
        for sdk, pair in pairs.items():
            out[sdk]["protocol_version"] = pair.protocol_version
            if pair.url:
                out[sdk]["url"] = pair.url
        # Warm-ups one SDK at a time, so neither warms up while the other is measured.
        for pair in pairs.values():
            pair.worker.tell(f"warmup {cfg.warmup}")
            pair.worker.result(cfg.timeout)
        for r in range(cfg.rounds):
            order = sdks if r % 2 == 0 else sdks[::-1]  # alternate who goes first
            for sdk in order:
                pair = pairs[sdk]
                result: dict[str, Any] = {}
                for phase in ("seq", "conc"):
                    meter = _Meter(pair.worker.proc.pid, pair.server_pid)
                    pair.worker.tell(f"{phase} {calls}")
                    result |= pair.worker.result(cfg.timeout)
                    result |= meter.read(phase, calls)
                result.pop("event", None)
                out[sdk]["rounds"].append(result)
                _progress(
                    f"  {scenario:<8} {TRANSPORT_TITLES[transport]:<16} round {r + 1}/{cfg.rounds} {sdk:<9} "
                    f"p50 {result['p50_ms']:.3f} ms  {result['calls_per_s']:,.0f} calls/s"
                )
    return out


# ----------------------------------------------------------------------------- parking

PARK_SCENARIOS = ("form", "resolver")
PARK_WARMUP = 500
# Calls started but not yet parked, at most. Parking measures what a server holds per parked call;
# with all N started at once, a stateless round's figure is mostly the allocator's high-water mark
# of however many rounds the client managed to get in flight together, which is the client's speed
# (one SDK's client fires 1,000 in about 1 s, the other's in 8 s), not what the server keeps.
# Both SDKs get the same pace.
PARK_PACE = 32


def _server_memory(pid: int | None, memfile: Path, timeout: float) -> dict[str, Any] | None:
    """Ask a server (SIGUSR1) for its memory use; it writes it to ``memfile``."""
    if pid is None:
        return None
    with contextlib.suppress(FileNotFoundError):
        memfile.unlink()
    os.kill(pid, signal.SIGUSR1)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            return dict(json.loads(memfile.read_text()))
        except (FileNotFoundError, ValueError):
            time.sleep(0.02)
    raise ProcessError(f"server {pid} did not report its memory use within {timeout:.0f}s")


def run_parking(
    cfg: Config, transport: str, sdk: str, n: int, tag: str, *, tracemalloc: bool, scenario: str = "form"
) -> dict[str, Any]:
    """Park ``n`` calls (the client's callback holding every answer) on fresh processes: memory
    before and while parked, then release all and check each result. ``form`` (S1): legacy
    elicitations, each waiting in the server; ``resolver`` (S2): 2026 rounds, each answered by
    the server (InputRequiredResult) and waiting in the client before its retry."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="elicitkit-park-") as tmp, fleet(tag) as children:
        memfile = Path(tmp) / "server-memory.json"
        pairs = start_pairs(
            cfg,
            children,
            scenario,
            transport,
            [sdk],
            tag,
            memfile=lambda _sdk: str(memfile),
            tracemalloc=tracemalloc,
            parking=True,
        )
        pair = pairs[sdk]
        pair.worker.tell(f"warmup {min(cfg.warmup, PARK_WARMUP)}")
        pair.worker.result(cfg.timeout)
        pair.worker.tell("mem")
        client_before = pair.worker.result(cfg.timeout)
        server_before = _server_memory(pair.server_pid, memfile, cfg.timeout)
        pair.worker.tell(f"park {n} {cfg.park_timeout} {cfg.park_pace}")
        parked = pair.worker.result(cfg.park_timeout + cfg.timeout)
        server_parked = _server_memory(pair.server_pid, memfile, cfg.timeout)
        pair.worker.tell("release")
        released = pair.worker.result(cfg.park_timeout + cfg.timeout)
    entry: dict[str, Any] = {
        "scenario": scenario,
        "transport": transport,
        "sdk": sdk,
        "n": n,
        "tracemalloc": tracemalloc,
        "protocol_version": pair.protocol_version,
        "parked": parked["parked"],
        "pace": cfg.park_pace,
        "timed_out": bool(parked.get("timed_out")),
        "parked_seconds": parked["parked_seconds"],
        "release_seconds": released["release_seconds"],
        "ok": released["ok"],
        "failed": released["failed"],
        "failures": released["failures"],
        "client_before": {k: client_before.get(k) for k in ("rss", "traced")},
        "client_parked": {k: parked.get(k) for k in ("rss", "traced")},
        "server_before": server_before,
        "server_parked": server_parked,
    }
    for side in ("client", "server"):
        before, during = entry[f"{side}_before"], entry[f"{side}_parked"]
        for key in ("rss", "traced"):
            if before and during and before.get(key) is not None and during.get(key) is not None:
                entry[f"{side}_{key}_per_parked"] = (during[key] - before[key]) / max(1, entry["parked"])
    return entry


def run_all_parking(cfg: Config, tag: str) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = []
    passes = [(n, False) for n in cfg.park_sizes]
    if cfg.park_tracemalloc and cfg.park_sizes:
        passes.append((min(cfg.park_sizes), True))
    for scenario, (n, traced), transport, sdk in itertools.product(
        cfg.park_scenarios, passes, cfg.park_transports, cfg.sdks
    ):
        base = {"scenario": scenario, "transport": transport, "sdk": sdk, "n": n, "tracemalloc": traced}
        cap = cfg.official_park_cap.get(transport) if sdk == "official" else None
        if cap is not None and n > cap:
            _progress(f"  parking {n:,} on {TRANSPORT_TITLES[transport]} with {sdk}: skipped (cap {cap:,})")
            entries.append({**base, "skipped": cap})
            continue
        what = "tracemalloc " if traced else ""
        _progress(f"  parking {n:,} {scenario} {what}on {TRANSPORT_TITLES[transport]} with {sdk}")
        try:
            entry = run_parking(cfg, transport, sdk, n, tag, tracemalloc=traced, scenario=scenario)
        except ProcessError as exc:
            _progress(f"    failed: {exc}")
            entry = {**base, "error": str(exc)}
        else:
            _progress(
                f"    parked {entry['parked']:,} in {entry['parked_seconds']:.1f} s; server "
                f"{_kib(entry.get('server_rss_per_parked'))} KiB/parked RSS; "
                f"{entry['ok']:,} answered right, {entry['failed']:,} wrong"
            )
        entries.append(entry)
    return entries


def _kib(value: float | None) -> str:
    return "-" if value is None else f"{value / 1024:.1f}"


def _progress(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _spread(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def summarize(results: dict[str, Any], sdks: list[str]) -> None:
    """Add medians, ranges and the per-round-paired calls/s ratio to each transport's results."""
    for per_sdk in results.values():
        for sdk in sdks:
            rounds = per_sdk[sdk]["rounds"]
            per_sdk[sdk]["summary"] = {key: _spread([r[key] for r in rounds]) for key in rounds[0]}
            conc = [per_sdk[sdk]["summary"].get(f"conc_{side}_cpu_us_per_call") for side in ("client", "server")]
            per_sdk[sdk]["busiest_cpu_us_per_call"] = max(c["median"] for c in conc if c is not None)
        if "elicitkit" in per_sdk and "official" in per_sdk:
            ours, theirs = per_sdk["elicitkit"], per_sdk["official"]
            # What the calls/s ratio would be if each process had a core to itself and nothing else ran:
            # throughput is then set by the busier process of the pair.
            per_sdk["ratio_from_cpu"] = theirs["busiest_cpu_us_per_call"] / ours["busiest_cpu_us_per_call"]
            pairs = list(zip(ours["rounds"], theirs["rounds"], strict=True))
            paired = [a["calls_per_s"] / b["calls_per_s"] for a, b in pairs]
            medians = ours["summary"]["calls_per_s"]["median"] / theirs["summary"]["calls_per_s"]["median"]
            per_sdk["ratio_calls_per_s"] = {
                "of_medians": medians,
                "per_round_min": min(paired),
                "per_round_max": max(paired),
            }
            p50 = [a["p50_ms"] / b["p50_ms"] for a, b in pairs]
            per_sdk["ratio_p50"] = {
                "of_medians": ours["summary"]["p50_ms"]["median"] / theirs["summary"]["p50_ms"]["median"],
                "per_round_min": min(p50),
                "per_round_max": max(p50),
            }


def _cell(stat: dict[str, float], fmt: str) -> str:
    return f"{stat['median']:{fmt}} ({stat['min']:{fmt}}-{stat['max']:{fmt}})"


def _ratio(q: dict[str, float]) -> str:
    return f"{q['of_medians']:.2f}x ({q['per_round_min']:.2f}-{q['per_round_max']:.2f})"


def render_table(report: dict[str, Any]) -> str:
    cfg, env = report["config"], report["environment"]
    placement = "clients on CPU 1, servers on CPU 0" if cfg["pinned"] else "processes not pinned"
    head = [
        f"elicitkit {env['elicitkit']}, mcp {env['mcp']}, Python {env['python']}, uvicorn {env['uvicorn']} "
        f"({env['uvicorn_loop']}, {env['uvicorn_http']}); {env['cpus']} CPUs, {placement}; "
        f"load avg {env['loadavg_start']} -> {env['loadavg_end']}",
        f"median of {cfg['rounds']} rounds (min-max). Round: N calls one at a time (p50, p90, p99), then "
        f"N calls with {cfg['concurrency']} in flight (calls/s); N per scenario: "
        + ", ".join(f"{k} {v}" for k, v in cfg["calls"].items())
        + f". Warm-up: {cfg['warmup']} + {cfg['warmup']}.",
    ]
    foreign = [
        r[key]
        for per_transport in report["scenarios"].values()
        for per_sdk in per_transport.values()
        for sdk in cfg["sdks"]
        for r in per_sdk[sdk]["rounds"]
        for key in ("seq_foreign_cpu_pct", "conc_foreign_cpu_pct")
        if key in r
    ]
    if foreign:
        head.append(
            f"other work on the machine during the measurements: median {statistics.median(foreign):.0f}%, "
            f"max {max(foreign):.0f}% of all CPUs (near 0 is a clean run)"
        )
    if cfg["profiled"]:
        head.append("PROFILED RUN: cProfile overhead included, numbers are not comparable to normal runs")
    body: list[str] = []
    for scenario, results in report["scenarios"].items():
        versions = sorted({str(v[s]["protocol_version"]) for v in results.values() for s in cfg["sdks"]})
        body += ["", f"scenario {scenario}: {SCENARIOS[scenario].title}; protocol {', '.join(versions)}", ""]
        here = [sdk for sdk in (*cfg["sdks"], RAW) if all(sdk in v for v in results.values())]
        body += [*_latency_table(results, here), "", *_cpu_table(results, here)]
    body += _raw_table(report)
    parking = report.get("parking") or []
    for scenario in dict.fromkeys(e.get("scenario", "form") for e in parking):
        body += ["", *_parking_table([e for e in parking if e.get("scenario", "form") == scenario], scenario)]
    return "\n".join([*head, *body, "", f"total run time {report['elapsed_s']:.1f} s"])


def _raw_table(report: dict[str, Any]) -> list[str]:
    """How far each elicitkit round trip is from the raw JSON-RPC echo on the same transport."""
    scenarios = report["scenarios"]
    echo = scenarios.get("echo", {})
    if not any(RAW in per_sdk for per_sdk in echo.values()):
        return []
    rows: list[tuple[str, ...]] = [
        ("transport", "raw echo calls/s", *(f"{name}: raw / elicitkit" for name in scenarios))
    ]
    for transport, per_sdk in echo.items():
        if RAW not in per_sdk:
            continue
        raw = per_sdk[RAW]["summary"]["calls_per_s"]["median"]
        cells = []
        for name in scenarios:
            ours = scenarios[name].get(transport, {}).get("elicitkit")
            cells.append(f"{raw / ours['summary']['calls_per_s']['median']:.2f}x" if ours else "-")
        rows.append((TRANSPORT_TITLES[transport], f"{raw:,.0f}", *cells))
    head = "the raw JSON-RPC echo (servers/raw_server.py, no MCP): calls/s with 32 in flight, and how many times"
    return ["", head + " elicitkit's calls/s it makes in the same run (lower is closer to the floor)", "", *_grid(rows)]


def _latency_table(results: dict[str, Any], sdks: list[str]) -> list[str]:
    header = ("transport", "SDK", "p50 ms", "p90 ms", "p99 ms", "calls/s, 32 in flight", "calls/s ek/official")
    header += ("p50 ek/official",)
    rows: list[tuple[str, ...]] = [header]
    for transport, per_sdk in results.items():
        for k, sdk in enumerate(sdks):
            s = per_sdk[sdk]["summary"]
            ratio = p50_ratio = ""
            if sdk == "elicitkit" and "ratio_calls_per_s" in per_sdk:
                ratio, p50_ratio = _ratio(per_sdk["ratio_calls_per_s"]), _ratio(per_sdk["ratio_p50"])
            name = TRANSPORT_TITLES[transport] if k == 0 else ""
            latency = tuple(_cell(s[key], ".3f") for key in ("p50_ms", "p90_ms", "p99_ms"))
            rows.append((name, sdk, *latency, _cell(s["calls_per_s"], ",.0f"), ratio, p50_ratio))
    return _grid(rows)


def _cpu_table(results: dict[str, Any], sdks: list[str]) -> list[str]:
    """Median CPU time per call of the client and server processes, one at a time / 32 in flight.

    The last column divides the official SDK's busier process (with 32 in flight) by elicitkit's:
    the calls/s ratio to expect when each process has a core of its own, whatever else ran.
    """
    header = ("CPU us per call", "SDK", "client: 1 / many in flight", "server: 1 / many in flight", "ek/official")
    rows: list[tuple[str, ...]] = [header]

    def pair(summary: dict[str, Any], side: str) -> str:
        seq, conc = summary.get(f"seq_{side}_cpu_us_per_call"), summary.get(f"conc_{side}_cpu_us_per_call")
        if seq is None or conc is None:
            return "(in the client)" if side == "server" else "?"
        return f"{seq['median']:.0f} / {conc['median']:.0f}"

    for transport, per_sdk in results.items():
        for k, sdk in enumerate(sdks):
            summary = per_sdk[sdk]["summary"]
            name = TRANSPORT_TITLES[transport] if k == 0 else ""
            ratio = f"{per_sdk['ratio_from_cpu']:.2f}x" if sdk == "elicitkit" and "ratio_from_cpu" in per_sdk else ""
            rows.append((name, sdk, pair(summary, "client"), pair(summary, "server"), ratio))
    return _grid(rows)


PARK_TITLES = {
    "form": "S1's question on {versions}, N calls parked together",
    "resolver": "S2's rounds on {versions} (each answered by the server: InputRequiredResult), N calls parked together",
}


def _parking_table(entries: list[dict[str, Any]], scenario: str = "form") -> list[str]:
    """Memory per parked call, per transport, SDK and number parked (one scenario)."""
    versions = sorted({e["protocol_version"] for e in entries if "protocol_version" in e})
    paces = sorted({e.get("pace", 0) for e in entries})
    paced = (
        "all N started at once" if paces == [0] else f"at most {'/'.join(map(str, paces))} started and not yet parked"
    )
    lines = [
        f"parking: {PARK_TITLES[scenario].format(versions=', '.join(versions))}, "
        f"every answer held back by the client's callback (a person who has not answered); {paced}.",
        "KiB per parked call = (memory while all N are parked - memory before) / N; RSS from /proc, "
        "traced = tracemalloc (Python allocations only, separate run).",
        "",
    ]
    header = ("transport", "SDK", "parked", "server KiB/parked", "client KiB/parked", "parked in s")
    header += ("answered right", "server ek/official")
    for traced in (False, True):
        chosen = [e for e in entries if e.get("tracemalloc") is traced]
        if not chosen:
            continue
        key = "traced" if traced else "rss"
        if traced:
            lines += ["", "the same, Python allocations only (tracemalloc on in both processes)", ""]
        rows: list[tuple[str, ...]] = [header]
        last = ""
        for e in sorted(chosen, key=lambda e: (TRANSPORTS.index(e["transport"]), e["n"], SDKS.index(e["sdk"]))):
            name = TRANSPORT_TITLES[e["transport"]] if e["transport"] != last else ""
            last = e["transport"]
            if "error" in e:
                rows.append((name, e["sdk"], f"{e['n']:,}", "failed", "", "", "", e["error"][:60]))
                continue
            if "skipped" in e:
                note = f"not run (cap {e['skipped']:,})"
                rows.append((name, e["sdk"], f"{e['n']:,}", note, "", "", "", ""))
                continue
            client_label = _kib(e.get(f"client_{key}_per_parked"))
            server = _kib(e.get(f"server_{key}_per_parked")) if e["transport"] != "memory" else "(in the client)"
            parked = f"{e['parked']:,}" + ("" if e["parked"] == e["n"] else f" of {e['n']:,} (timed out)")
            ratio = ""
            theirs = next(
                (
                    o
                    for o in chosen
                    if o["sdk"] == "official"
                    and o["transport"] == e["transport"]
                    and o["n"] == e["n"]
                    and "error" not in o
                    and "skipped" not in o
                ),
                None,
            )
            marker = ""
            if theirs is None:  # not measured at this size: the official SDK's largest one on this transport
                measured = [
                    o
                    for o in chosen
                    if o["sdk"] == "official" and o["transport"] == e["transport"] and "error" not in o
                    if "skipped" not in o and o["n"] < e["n"]
                ]
                theirs = max(measured, key=lambda o: o["n"]) if measured else None
                marker = f" (vs {theirs['n']:,})" if theirs is not None else ""
            side = "server" if e["transport"] != "memory" else "client"
            mine, other = e.get(f"{side}_{key}_per_parked"), theirs.get(f"{side}_{key}_per_parked") if theirs else None
            if e["sdk"] == "elicitkit" and mine and other:
                ratio = f"{mine / other:.2f}x{marker}"
            rows.append(
                (
                    name,
                    e["sdk"],
                    parked,
                    server,
                    client_label,
                    f"{e['parked_seconds']:.1f}",
                    f"{e['ok']:,}/{e['n']:,}",
                    ratio,
                )
            )
        lines += _grid(rows)
    return lines


def _grid(rows: list[tuple[str, ...]]) -> list[str]:
    """Columns padded to width; the first two left-aligned, the rest right-aligned; a rule under the header."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = []
    for n, row in enumerate(rows):
        cells = [c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True))]
        lines.append("  ".join(cells).rstrip())
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return lines


def environment() -> dict[str, Any]:
    import importlib.metadata as md
    import importlib.util

    def version(name: str) -> str:
        try:
            return md.version(name)
        except md.PackageNotFoundError:
            return "not installed"

    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "elicitkit": version("elicitkit"),
        "mcp": version("mcp"),
        "anyio": version("anyio"),
        "uvicorn": version("uvicorn"),
        # What uvicorn's "auto" settings pick for both servers, given what is installed.
        "uvicorn_loop": "uvloop" if importlib.util.find_spec("uvloop") else "asyncio",
        "uvicorn_http": "httptools" if importlib.util.find_spec("httptools") else "h11",
        "loadavg_start": _loadavg(),
    }


def _loadavg() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "?"


IDLE = "<method 'poll' of 'select.epoll' objects>"  # waiting for I/O: idle, not work


def _package_of(filename: str, function: str) -> str:
    """Who a profiled function belongs to: a distribution, an elicitkit module, or the stdlib."""
    path = filename.replace("\\", "/")
    if "/site-packages/" in path:
        return path.split("/site-packages/", 1)[1].split("/", 1)[0].removesuffix(".py")
    if "/src/elicitkit/" in path:
        return "elicitkit/" + path.split("/src/elicitkit/", 1)[1].removesuffix(".py")
    if "/benchmarks/" in path:
        return "benchmark harness"
    if "/asyncio/" in path:
        return "asyncio"
    if filename == "~":
        return ""  # a builtin: charged to its caller
    if path.startswith("<frozen "):
        return "stdlib " + path.removeprefix("<frozen ").removesuffix(">")
    return "stdlib " + Path(path).stem


def package_breakdown(stats: Any) -> tuple[float, list[tuple[str, float]]]:
    """Busy time (everything but waiting in epoll) and its split by package, builtins charged to callers."""
    totals: dict[str, float] = {}
    busy = 0.0
    for (filename, _line, function), (_cc, _nc, tottime, _ct, callers) in stats.stats.items():
        if function == IDLE:
            continue
        busy += tottime
        owner = _package_of(filename, function)
        if owner:
            totals[owner] = totals.get(owner, 0.0) + tottime
            continue
        if function.startswith(
            ("<method 'send", "<method 'recv", "<built-in method posix.write", "<built-in method posix.read")
        ):
            totals["syscalls: socket/pipe I/O"] = totals.get("syscalls: socket/pipe I/O", 0.0) + tottime
            continue
        caller_total = sum(c[2] for c in callers.values()) or 1.0
        for (cfile, _cline, cfunc), (_c1, _c2, ctt, _c4) in callers.items():
            who = _package_of(cfile, cfunc) or "builtins"
            totals[who] = totals.get(who, 0.0) + tottime * ctt / caller_total
    return busy, sorted(totals.items(), key=lambda kv: -kv[1])


def profile_summary(directory: Path, top: int = 25) -> Path:
    """Write, for every profile: busy time by package, then the top functions by own and cumulative time."""
    import io
    import pstats

    out = io.StringIO()
    for path in sorted(directory.glob("*.prof")):
        stats = pstats.Stats(str(path), stream=out)
        busy, packages = package_breakdown(stats)
        out.write(f"===== {path.name}: {busy:.2f} s busy (waiting in epoll excluded), by package\n")
        for name, seconds in packages[:20]:
            out.write(f"  {seconds / busy * 100:5.1f}%  {seconds:7.3f} s  {name}\n")
        for order in ("tottime", "cumulative"):
            out.write(f"===== {path.name}, by {order}\n")
            stats.sort_stats(order).print_stats(top)
    summary = directory / "summary.txt"
    summary.write_text(out.getvalue())
    return summary


DEFAULT_CALLS = {"echo": 5000, "form": 2000, "resolver": 2000}
QUICK_CALLS = {"echo": 150, "form": 80, "resolver": 80}


def _int_list(text: str) -> list[int]:
    return [int(x.replace("_", "")) for x in text.split(",") if x.strip()]


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=(__doc__ or "").split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add = parser.add_argument
    add("--quick", action="store_true", help="a <1 minute run: fewer calls and rounds, parking 1,000")
    add("--rounds", type=int, help="rounds per scenario, SDK and transport (default 5; quick 3)")
    add(
        "--calls",
        type=int,
        help="calls per round, for each of the two measurements (default echo 5000, form and resolver 2000; "
        "quick 150 / 80)",
    )
    add("--warmup", type=int, help="warm-up calls, sequential and concurrent each (default 1000; quick 30)")
    add("--concurrency", type=int, default=32, help="calls in flight for calls/s (default 32)")
    add("--transports", default=",".join(TRANSPORTS), help="comma list of memory,stdio,http (default all)")
    add("--sdks", default=",".join(SDKS), help="comma list of elicitkit,official (default both)")
    add(
        "--scenario",
        default="all",
        help="comma list of echo (S0), form (S1), resolver (S2), or all (default), or none (parking only)",
    )
    add(
        "--park",
        default=None,
        help="how many elicitations to park at once, comma list (default 1000,10000; "
        "quick 1000); 0 or empty: no parking",
    )
    add(
        "--park-scenarios",
        default=",".join(PARK_SCENARIOS),
        help="what to park: form (S1, legacy questions waiting in the server), resolver (S2, 2026 rounds "
        "waiting in the client); default both",
    )
    add(
        "--park-transports",
        default=None,
        help="transports to park on (default memory,stdio,http; quick stdio,http)",
    )
    add(
        "--park-tracemalloc",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="also measure parking with tracemalloc, at the smallest size (default on; quick off)",
    )
    add(
        "--park-pace",
        type=int,
        default=PARK_PACE,
        help=f"at most this many calls on their way to being parked at a time (default {PARK_PACE}); "
        "0: start all N at once",
    )
    add("--park-timeout", type=float, default=600.0, help="give up parking after this many seconds (default 600)")
    add(
        "--official-park-cap",
        default="http=1000",
        help="park the official SDK at most this many per transport (default http=1000: parking 10,000 on its "
        "HTTP server takes about 11 minutes, see README); empty for no cap",
    )
    add(
        "--raw",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also run the raw JSON-RPC echo beside S0 (the floor; default on)",
    )
    add("--json", type=Path, help="also write the configuration and every round's raw numbers here")
    add("--render", type=Path, metavar="JSON", help="print the tables of a report saved with --json, and exit")
    add("--no-pin", action="store_true", help="let the OS place the processes (default: clients CPU 1, servers CPU 0)")
    add("--timeout", type=float, default=300.0, help="seconds to wait for any one answer from a child")
    add("--stderr-log", type=Path, help="append the children's stderr to this file instead of the terminal")
    add("--profile", type=Path, metavar="DIR", help="cProfile every client and server into DIR (skews the numbers)")
    args = parser.parse_args(argv)
    args.rounds = args.rounds if args.rounds is not None else (3 if args.quick else 5)
    args.warmup = args.warmup if args.warmup is not None else (30 if args.quick else 1000)
    if args.scenario == "all":
        args.scenarios = list(SCENARIO_ORDER)
    elif args.scenario == "none":
        args.scenarios = []
    else:
        args.scenarios = [x.strip() for x in args.scenario.split(",") if x.strip()]
        bad = [x for x in args.scenarios if x not in SCENARIOS]
        if bad:
            parser.error(f"--scenario: unknown {bad}; choose from {', '.join(SCENARIO_ORDER)}, all or none")
    defaults = QUICK_CALLS if args.quick else DEFAULT_CALLS
    args.calls_per = {name: args.calls if args.calls is not None else defaults[name] for name in args.scenarios}
    park = args.park if args.park is not None else ("1000" if args.quick else "1000,10000")
    args.park_sizes = [n for n in _int_list(park) if n > 0]
    if args.park_transports is None:
        args.park_transports = "stdio,http" if args.quick else "memory,stdio,http"
    if args.park_tracemalloc is None:
        args.park_tracemalloc = not args.quick
    caps: dict[str, int] = {}
    for item in (x.strip() for x in args.official_park_cap.split(",")):
        transport, _, number = item.partition("=")
        if not item:
            continue
        if transport not in TRANSPORTS or not number.replace("_", "").isdigit():
            parser.error(f"--official-park-cap: expected TRANSPORT=N items, got {item!r}")
        caps[transport] = int(number.replace("_", ""))
    args.official_park_cap = caps
    for name, allowed in (("transports", TRANSPORTS), ("sdks", SDKS), ("park_transports", TRANSPORTS)):
        chosen = [x.strip() for x in getattr(args, name).split(",") if x.strip()]
        bad = [x for x in chosen if x not in allowed]
        if bad or not chosen:
            flag = "--" + name.replace("_", "-")
            parser.error(f"{flag}: unknown {bad or 'empty list'}; choose from {', '.join(allowed)}")
        setattr(args, name, [x for x in allowed if x in chosen])
    args.park_transports = [t for t in args.park_transports if t in args.transports]
    args.park_scenarios = [x.strip() for x in args.park_scenarios.split(",") if x.strip()]
    bad = [x for x in args.park_scenarios if x not in PARK_SCENARIOS]
    if bad:
        parser.error(f"--park-scenarios: unknown {bad}; choose from {', '.join(PARK_SCENARIOS)}")
    if args.rounds < 1 or (args.calls is not None and args.calls < 1) or args.concurrency < 1 or args.warmup < 0:
        parser.error("--rounds, --calls and --concurrency must be positive, --warmup not negative")
    return args


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    if args.render is not None:
        print(render_table(json.loads(args.render.read_text())), flush=True)
        return 0

    def on_sigterm(signum: int, frame: Any) -> None:
        raise SystemExit(128 + signum)  # unwind through the finally blocks that stop the children

    signal.signal(signal.SIGTERM, on_sigterm)
    started = time.perf_counter()
    cfg = Config(
        scenarios=args.scenarios,
        transports=args.transports,
        sdks=args.sdks,
        rounds=args.rounds,
        calls=args.calls_per,
        warmup=args.warmup,
        concurrency=args.concurrency,
        pin=not args.no_pin,
        timeout=args.timeout,
        stderr_log=args.stderr_log.resolve() if args.stderr_log else None,
        profile_dir=args.profile.resolve() if args.profile else None,
        park_sizes=args.park_sizes,
        park_scenarios=args.park_scenarios,
        park_transports=args.park_transports,
        park_tracemalloc=args.park_tracemalloc,
        park_timeout=args.park_timeout,
        official_park_cap=args.official_park_cap,
        park_pace=args.park_pace,
    )
    if cfg.profile_dir is not None:
        cfg.profile_dir.mkdir(parents=True, exist_ok=True)
    env = environment()
    tag = f"elicitkit-bench-{secrets.token_hex(6)}"  # marks every process we start
    scenarios: dict[str, Any] = {}
    for scenario in cfg.scenarios:
        results: dict[str, Any] = {}
        sdks = [*cfg.sdks, RAW] if scenario == "echo" and args.raw else cfg.sdks
        for transport in cfg.transports:
            _progress(f"{scenario}, {TRANSPORT_TITLES[transport]}: starting {' and '.join(sdks)}")
            results[transport] = run_transport(cfg, scenario, transport, tag, sdks)
        summarize(results, sdks)
        scenarios[scenario] = results
    parking = run_all_parking(cfg, tag) if cfg.park_sizes and cfg.profile_dir is None else []
    env["loadavg_end"] = _loadavg()
    report = {
        "config": cfg.as_dict(),
        "environment": env,
        "scenarios": scenarios,
        "parking": parking,
        "elapsed_s": time.perf_counter() - started,
    }
    print(render_table(report), flush=True)
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    if cfg.profile_dir is not None:
        _progress(f"profiles in {cfg.profile_dir}; top functions in {profile_summary(cfg.profile_dir)}")
    failed = [e for e in parking if "error" in e or e.get("failed") or e.get("timed_out")]
    return 1 if failed else 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["_worker"]:
        sys.path.insert(0, str(SERVERS))
        import otel_mode  # ELICITKIT_BENCH_OTEL: before elicitkit loads

        otel_mode.apply()
        worker(sys.argv[2:])
    else:
        try:
            sys.exit(main(sys.argv[1:]))
        except KeyboardInterrupt:  # the children were stopped on the way out
            print("interrupted", file=sys.stderr)
            sys.exit(130)
