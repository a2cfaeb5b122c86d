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
SERVER_SCRIPTS = {"elicitkit": SERVERS / "elicitkit_server.py", "official": SERVERS / "official_server.py"}
SDKS = ("elicitkit", "official")
TRANSPORTS = ("memory", "stdio", "http")
TRANSPORT_TITLES = {"memory": "in-memory", "stdio": "stdio", "http": "Streamable HTTP"}
RESULT_PREFIX = "@@result "
SERVER_CPU, CLIENT_CPU = 0, 1

Call = Callable[[int], Awaitable[None]]

# ============================================================================= scenarios
#
# A scenario is what one "call" is. Each SDK gets a factory that, given a connected client of
# that SDK, returns ``call(i)``: one complete round trip, checked. ``client_options`` are
# extra keyword arguments for that SDK's client constructor (an elicitation callback, say).
# The server side of a scenario lives in servers/<sdk>_server.py under the same name.
#
# Planned: S1, a tool that elicits a 3-field form; S2, the 2026 multi-round-trip variant.


@dataclass(frozen=True)
class Scenario:
    name: str
    title: str
    calls: dict[str, Callable[[Any], Call]]
    client_options: dict[str, Callable[[], dict[str, Any]]] = field(default_factory=dict)


class CheckFailed(AssertionError):
    pass


def _echo_elicitkit(client: Any) -> Call:
    async def call(i: int) -> None:
        text = f"hello {i}"
        result = await client.call_tool("echo", {"text": text})
        if result.is_error or len(result.content) != 1 or result.content[0].text != text:
            raise CheckFailed(f"echo returned {result!r}")

    return call


def _echo_official(client: Any) -> Call:
    async def call(i: int) -> None:
        text = f"hello {i}"
        result = await client.call_tool("echo", {"text": text})
        if result.is_error or len(result.content) != 1 or result.content[0].text != text:
            raise CheckFailed(f"echo returned {result!r}")

    return call


SCENARIOS: dict[str, Scenario] = {
    "echo": Scenario(
        name="echo",
        title="tool `echo`: returns its text argument as one text content item",
        calls={"elicitkit": _echo_elicitkit, "official": _echo_official},
    ),
}

# ============================================================================= the worker


def _pin(cpu: int | None) -> None:
    if cpu is not None and hasattr(os, "sched_setaffinity"):
        with contextlib.suppress(OSError):
            os.sched_setaffinity(0, {cpu})


def _server_args(sdk: str, mode: str, scenario: str, cpu: int | None, tag: str, profile: str | None) -> list[str]:
    """The server script and its arguments (``profile``: where it writes cProfile stats)."""
    args = [str(SERVER_SCRIPTS[sdk]), mode, "--scenario", scenario, "--tag", tag]
    if cpu is not None:
        args += ["--cpu", str(cpu)]
    if profile:
        args += ["--profile", profile]
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
    server_args = _server_args(sdk, "stdio", scenario.name, args.server_cpu, args.tag, args.server_profile)
    options = scenario.client_options.get(sdk, dict)()
    if sdk == "elicitkit":
        from elicitkit import Client

        if transport == "memory":
            where: Any = _load_server_module(sdk).build_server(scenario.name)
        elif transport == "stdio":
            where = [sys.executable, *server_args]
        else:
            where = target
        async with Client(where, **options) as client:
            yield client, str(client.protocol_version)
    else:
        import mcp

        if transport == "memory":
            where = _load_server_module(sdk).build_server(scenario.name)
        elif transport == "stdio":
            where = mcp.StdioServerParameters(command=sys.executable, args=server_args)
        else:
            where = target
        # mode="legacy": the 2025-11-25 initialize handshake (the default "auto" would probe
        # server/discover first, and in-memory would bypass JSON-RPC entirely).
        async with mcp.Client(where, mode="legacy", **options) as client:
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


async def _sequential(call: Call, n: int) -> dict[str, float]:
    clock = time.perf_counter
    latencies: list[float] = []
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


async def _worker_main(args: argparse.Namespace) -> None:
    import anyio

    # Our stdout carries results only: keep a private copy of it and send fd 1 to stderr,
    # so nothing a library prints can end up in the result stream.
    out_fd = os.dup(1)
    os.dup2(2, 1)

    def emit(obj: dict[str, Any]) -> None:
        os.write(out_fd, (RESULT_PREFIX + json.dumps(obj) + "\n").encode())

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
            n = int(numbers[0])
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
                result = await _sequential(call, n)
            else:
                result = await _concurrent(call, n, args.concurrency)
            if profile is not None:
                profile.disable()
            emit({"event": command, **result})
    if profile is not None:
        profile.dump_stats(args.profile)


def worker(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="run.py _worker")
    parser.add_argument("--sdk", choices=SDKS, required=True)
    parser.add_argument("--transport", choices=TRANSPORTS, required=True)
    parser.add_argument("--scenario", default="echo")
    parser.add_argument("--target", default="")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--cpu", type=int, default=None)
    parser.add_argument("--server-cpu", type=int, default=None)
    parser.add_argument("--tag", default="")
    parser.add_argument("--profile", default=None, help="cProfile the measured rounds into this file")
    parser.add_argument("--server-profile", default=None, help="have a stdio server cProfile itself into this file")
    args = parser.parse_args(argv)
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
    scenario: str
    transports: list[str]
    sdks: list[str]
    rounds: int
    calls: int
    warmup: int
    concurrency: int
    pin: bool
    timeout: float
    stderr_log: Path | None
    profile_dir: Path | None

    @property
    def pinned(self) -> bool:
        return self.pin and hasattr(os, "sched_setaffinity") and len(os.sched_getaffinity(0)) >= 2

    def as_dict(self) -> dict[str, Any]:
        keys = ("scenario", "transports", "sdks", "rounds", "calls", "warmup", "concurrency")
        return {**{k: getattr(self, k) for k in keys}, "pinned": self.pinned, "profiled": self.profile_dir is not None}


def run_transport(cfg: Config, transport: str, tag: str) -> dict[str, Any]:
    """Start one client (and server) per SDK for ``transport``, warm up, alternate rounds."""
    client_cpu, server_cpu = (CLIENT_CPU, SERVER_CPU) if cfg.pinned else (None, None)
    out: dict[str, Any] = {sdk: {"rounds": []} for sdk in cfg.sdks}

    def profile_path(sdk: str, role: str) -> str | None:
        return str(cfg.profile_dir / f"{transport}-{sdk}-{role}.prof") if cfg.profile_dir else None

    with fleet(tag) as children:
        workers: dict[str, Child] = {}
        servers: dict[str, Child] = {}
        for sdk in cfg.sdks:
            target = ""
            if transport == "http":
                argv = _server_args(sdk, "http", cfg.scenario, server_cpu, tag, profile_path(sdk, "server"))
                server = Child(f"{sdk} http server", [sys.executable, *argv], log=cfg.stderr_log)
                children.append((server, None))
                servers[sdk] = server
                line = ""
                while not line.startswith("LISTENING "):
                    line = server.readline(cfg.timeout)
                target = line.split(None, 1)[1]
                out[sdk]["url"] = target
            argv = [sys.executable, str(Path(__file__).resolve()), "_worker", "--sdk", sdk, "--transport", transport]
            argv += ["--scenario", cfg.scenario, "--target", target, "--concurrency", str(cfg.concurrency)]
            argv += ["--tag", tag]
            if cfg.pinned:
                argv += ["--cpu", str(client_cpu), "--server-cpu", str(server_cpu)]
            if cfg.profile_dir is not None:
                argv += ["--profile", str(profile_path(sdk, "client" if transport != "memory" else "process"))]
                if transport == "stdio":
                    argv += ["--server-profile", str(profile_path(sdk, "server"))]
            workers[sdk] = Child(f"{sdk} {transport} client", argv, log=cfg.stderr_log)
            children.append((workers[sdk], "quit"))
        server_pids: dict[str, int | None] = {}
        for sdk, child in workers.items():
            out[sdk]["protocol_version"] = child.result(cfg.timeout)["protocol_version"]
            server_pids[sdk] = servers[sdk].proc.pid if sdk in servers else _child_server_pid(child.proc.pid, tag)
        # Warm-ups one SDK at a time, so neither warms up while the other is measured.
        for child in workers.values():
            child.tell(f"warmup {cfg.warmup}")
            child.result(cfg.timeout)
        for r in range(cfg.rounds):
            order = cfg.sdks if r % 2 == 0 else cfg.sdks[::-1]  # alternate who goes first
            for sdk in order:
                result: dict[str, Any] = {}
                for phase in ("seq", "conc"):
                    meter = _Meter(workers[sdk].proc.pid, server_pids[sdk])
                    workers[sdk].tell(f"{phase} {cfg.calls}")
                    result |= workers[sdk].result(cfg.timeout)
                    result |= meter.read(phase, cfg.calls)
                result.pop("event", None)
                out[sdk]["rounds"].append(result)
                _progress(
                    f"  {TRANSPORT_TITLES[transport]:<16} round {r + 1}/{cfg.rounds} {sdk:<9} "
                    f"p50 {result['p50_ms']:.3f} ms  {result['calls_per_s']:,.0f} calls/s"
                )
    return out


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
            pairs = zip(ours["rounds"], theirs["rounds"], strict=True)
            paired = [a["calls_per_s"] / b["calls_per_s"] for a, b in pairs]
            medians = ours["summary"]["calls_per_s"]["median"] / theirs["summary"]["calls_per_s"]["median"]
            per_sdk["ratio_calls_per_s"] = {
                "of_medians": medians,
                "per_round_min": min(paired),
                "per_round_max": max(paired),
            }


def _cell(stat: dict[str, float], fmt: str) -> str:
    return f"{stat['median']:{fmt}} ({stat['min']:{fmt}}-{stat['max']:{fmt}})"


def render_table(report: dict[str, Any]) -> str:
    cfg, env = report["config"], report["environment"]
    header = ("transport", "SDK", "p50 ms", "p99 ms", f"calls/s, {cfg['concurrency']} in flight", "calls/s ek/official")
    rows: list[tuple[str, ...]] = [header]
    for transport, per_sdk in report["results"].items():
        for k, sdk in enumerate(cfg["sdks"]):
            s = per_sdk[sdk]["summary"]
            ratio = ""
            if sdk == "elicitkit" and "ratio_calls_per_s" in per_sdk:
                q = per_sdk["ratio_calls_per_s"]
                ratio = f"{q['of_medians']:.2f}x ({q['per_round_min']:.2f}-{q['per_round_max']:.2f})"
            name = TRANSPORT_TITLES[transport] if k == 0 else ""
            latency = (_cell(s["p50_ms"], ".3f"), _cell(s["p99_ms"], ".3f"))
            rows.append((name, sdk, *latency, _cell(s["calls_per_s"], ",.0f"), ratio))
    lines = [*_grid(rows), "", *_cpu_table(report)]
    versions = sorted({str(v[s]["protocol_version"]) for v in report["results"].values() for s in cfg["sdks"]})
    placement = "clients on CPU 1, servers on CPU 0" if cfg["pinned"] else "processes not pinned"
    head = [
        f"scenario {cfg['scenario']}: {SCENARIOS[cfg['scenario']].title}; protocol {', '.join(versions)}",
        f"median of {cfg['rounds']} rounds (min-max). Round: {cfg['calls']} calls one at a time (p50, p99), then "
        f"{cfg['calls']} calls with {cfg['concurrency']} in flight (calls/s). "
        f"Warm-up: {cfg['warmup']} + {cfg['warmup']}.",
        f"elicitkit {env['elicitkit']}, mcp {env['mcp']}, Python {env['python']}, uvicorn {env['uvicorn']} "
        f"({env['uvicorn_loop']}, {env['uvicorn_http']}); {env['cpus']} CPUs, {placement}; "
        f"load avg {env['loadavg_start']} -> {env['loadavg_end']}",
    ]
    foreign = [
        r[key]
        for per_sdk in report["results"].values()
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
    return "\n".join([*head, "", *lines, "", f"total run time {report['elapsed_s']:.1f} s"])


def _cpu_table(report: dict[str, Any]) -> list[str]:
    """Median CPU time per call of the client and server processes, one at a time / 32 in flight.

    The last column divides the official SDK's busier process (with 32 in flight) by elicitkit's:
    the calls/s ratio to expect when each process has a core of its own, whatever else ran.
    """
    cfg = report["config"]
    header = ("CPU us per call", "SDK", "client: 1 / many in flight", "server: 1 / many in flight", "ek/official")
    rows: list[tuple[str, ...]] = [header]

    def pair(summary: dict[str, Any], side: str) -> str:
        seq, conc = summary.get(f"seq_{side}_cpu_us_per_call"), summary.get(f"conc_{side}_cpu_us_per_call")
        if seq is None or conc is None:
            return "(in the client)" if side == "server" else "?"
        return f"{seq['median']:.0f} / {conc['median']:.0f}"

    for transport, per_sdk in report["results"].items():
        for k, sdk in enumerate(cfg["sdks"]):
            summary = per_sdk[sdk]["summary"]
            name = TRANSPORT_TITLES[transport] if k == 0 else ""
            ratio = f"{per_sdk['ratio_from_cpu']:.2f}x" if sdk == "elicitkit" and "ratio_from_cpu" in per_sdk else ""
            rows.append((name, sdk, pair(summary, "client"), pair(summary, "server"), ratio))
    return _grid(rows)


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


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=(__doc__ or "").split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add = parser.add_argument
    add("--quick", action="store_true", help="a <1 minute run: 3 rounds of 1000 calls, 200 warm-up calls")
    add("--rounds", type=int, help="rounds per SDK and transport (default 5; quick 3)")
    add("--calls", type=int, help="calls per round, for each of the two measurements (default 5000; quick 1000)")
    add("--warmup", type=int, help="warm-up calls, sequential and concurrent each (default 1000; quick 200)")
    add("--concurrency", type=int, default=32, help="calls in flight for calls/s (default 32)")
    add("--transports", default=",".join(TRANSPORTS), help="comma list of memory,stdio,http (default all)")
    add("--sdks", default=",".join(SDKS), help="comma list of elicitkit,official (default both)")
    add("--scenario", default="echo", choices=sorted(SCENARIOS), help="what one call is (default echo)")
    add("--json", type=Path, help="also write the configuration and every round's raw numbers here")
    add("--no-pin", action="store_true", help="let the OS place the processes (default: clients CPU 1, servers CPU 0)")
    add("--timeout", type=float, default=300.0, help="seconds to wait for any one answer from a child")
    add("--stderr-log", type=Path, help="append the children's stderr to this file instead of the terminal")
    add("--profile", type=Path, metavar="DIR", help="cProfile every client and server into DIR (skews the numbers)")
    args = parser.parse_args(argv)
    args.rounds = args.rounds if args.rounds is not None else (3 if args.quick else 5)
    args.calls = args.calls if args.calls is not None else (1000 if args.quick else 5000)
    args.warmup = args.warmup if args.warmup is not None else (200 if args.quick else 1000)
    for name, allowed in (("transports", TRANSPORTS), ("sdks", SDKS)):
        chosen = [x.strip() for x in getattr(args, name).split(",") if x.strip()]
        bad = [x for x in chosen if x not in allowed]
        if bad or not chosen:
            parser.error(f"--{name}: unknown {bad or 'empty list'}; choose from {', '.join(allowed)}")
        setattr(args, name, [x for x in allowed if x in chosen])
    if args.rounds < 1 or args.calls < 1 or args.concurrency < 1 or args.warmup < 0:
        parser.error("--rounds, --calls and --concurrency must be positive, --warmup not negative")
    return args


def main(argv: list[str]) -> int:
    args = parse_args(argv)

    def on_sigterm(signum: int, frame: Any) -> None:
        raise SystemExit(128 + signum)  # unwind through the finally blocks that stop the children

    signal.signal(signal.SIGTERM, on_sigterm)
    started = time.perf_counter()
    cfg = Config(
        scenario=args.scenario,
        transports=args.transports,
        sdks=args.sdks,
        rounds=args.rounds,
        calls=args.calls,
        warmup=args.warmup,
        concurrency=args.concurrency,
        pin=not args.no_pin,
        timeout=args.timeout,
        stderr_log=args.stderr_log.resolve() if args.stderr_log else None,
        profile_dir=args.profile.resolve() if args.profile else None,
    )
    if cfg.profile_dir is not None:
        cfg.profile_dir.mkdir(parents=True, exist_ok=True)
    env = environment()
    tag = f"elicitkit-bench-{secrets.token_hex(6)}"  # marks every process we start
    results: dict[str, Any] = {}
    for transport in cfg.transports:
        _progress(f"{TRANSPORT_TITLES[transport]}: starting {' and '.join(cfg.sdks)}")
        results[transport] = run_transport(cfg, transport, tag)
    summarize(results, cfg.sdks)
    env["loadavg_end"] = _loadavg()
    report = {
        "config": cfg.as_dict(),
        "environment": env,
        "results": results,
        "elapsed_s": time.perf_counter() - started,
    }
    print(render_table(report), flush=True)
    if args.json is not None:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    if cfg.profile_dir is not None:
        _progress(f"profiles in {cfg.profile_dir}; top functions in {profile_summary(cfg.profile_dir)}")
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["_worker"]:
        worker(sys.argv[2:])
    else:
        try:
            sys.exit(main(sys.argv[1:]))
        except KeyboardInterrupt:  # the children were stopped on the way out
            print("interrupted", file=sys.stderr)
            sys.exit(130)
