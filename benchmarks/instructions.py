#!/usr/bin/env python3
"""CPU instructions per call, elicitkit against the official ``mcp`` SDK, under callgrind.

    python benchmarks/instructions.py                       # S0 + S1, in-memory + HTTP, 60 calls
    python benchmarks/instructions.py --scenario form --transports http --calls 200

Why a second benchmark: ``run.py`` times calls, and times move with whatever else the machine
is doing (a CI box, other jobs, a laptop's fan curve). Valgrind's callgrind counts the
instructions a process executes, which do not depend on load: the same build and inputs give
the same counts within a percent or two, so a change's cost shows even on a busy machine. It
counts user space only (a syscall's kernel work is not in it) and runs Python about 50x
slower, so it complements ``run.py`` rather than replacing it.

Each (scenario, transport, SDK) runs ``run.py``'s own worker (the same client code and the
same servers as the timed benchmark) under ``valgrind --tool=callgrind --instr-atstart=no``;
after the warm-up and a full garbage collection, ``callgrind_control -i on`` switches counting
on in the client and (HTTP) the server, ``--calls`` sequential calls run (without run.py's own
collection first, which would count a whole-heap walk, ~0.3M instructions, into every call), and
counting goes off again. In-memory is one
process (client and server together).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import run  # noqa: E402 - the timed benchmark's worker, servers and process helper

SCENARIOS = ("echo", "form", "resolver")
TRANSPORTS = ("memory", "stdio", "http")
TIMEOUT = 900.0  # seconds for any one step under valgrind
os.environ.setdefault("BENCH_DISCOVER_TIMEOUT", "300")  # a 2026 client waits for a server under valgrind


def _callgrind(out: Path) -> list[str]:
    return ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}", "-q"]


def _switch(pids: list[int], on: bool) -> None:
    for pid in pids:
        subprocess.run(["callgrind_control", "-i", "on" if on else "off", str(pid)], check=True, capture_output=True)


def _instructions(out: Path) -> int:
    """The total ``Ir`` of one callgrind output file (its ``summary:`` or ``totals:`` line)."""
    total = 0
    for line in out.read_text().splitlines():
        if line.startswith(("summary:", "totals:")):
            total = max(total, int(line.split()[1]))
    return total


def _result(child: run.Child, event: str) -> dict[str, object]:
    while True:
        line = child.readline(TIMEOUT)
        if line.startswith(run.RESULT_PREFIX):
            obj: dict[str, object] = json.loads(line[len(run.RESULT_PREFIX) :])
            if obj.get("event") == event:
                return obj


def measure(
    sdk: str, scenario: str, transport: str, calls: int, warmup: int, work: Path, otel: str = "off"
) -> dict[str, int]:
    """Instructions per call for one SDK: ``{"client": n, "server": n}`` (in-memory: ``{"process": n}``).

    ``otel`` (elicitkit only): ``absent`` (as without the extra), ``off`` (the extra, no SDK),
    ``sdk`` (an SDK with batch exporters; see servers/otel_mode.py), for the client and server."""
    os.environ["ELICITKIT_BENCH_OTEL"] = otel  # the children inherit it
    sdk_label = sdk if otel == "off" else f"{sdk}-{otel}"
    children: list[run.Child | _Pid] = []
    outs: dict[str, Path] = {}
    try:
        target = ""
        if transport == "http":
            outs["server"] = work / f"{scenario}-{sdk_label}-server.cg"
            argv = [
                *_callgrind(outs["server"]),
                sys.executable,
                *run._server_args(sdk, "http", scenario, None, "", None),
            ]
            server = run.Child(f"{sdk} server", argv)
            children.append(server)
            line = ""
            while not line.startswith("LISTENING "):
                line = server.readline(TIMEOUT)
            target = line.split(None, 1)[1].strip()
        role = "process" if transport == "memory" else "client"
        outs[role] = work / f"{scenario}-{transport}-{sdk_label}-{role}.cg"
        tag = f"elicitkit-callgrind-{os.getpid()}-{scenario}-{transport}-{sdk_label}"
        if transport == "stdio":  # the worker's client spawns the server: under callgrind too
            outs["server"] = work / f"{scenario}-{sdk_label}-stdio-server.cg"
            os.environ["BENCH_STDIO_SERVER_WRAPPER"] = json.dumps(_callgrind(outs["server"]))
        argv = [*_callgrind(outs[role]), sys.executable, str(HERE / "run.py"), "_worker", "--sdk", sdk]
        argv += ["--transport", transport, "--scenario", scenario, "--target", target, "--tag", tag]
        worker = run.Child(f"{sdk} {transport} client", argv)
        os.environ.pop("BENCH_STDIO_SERVER_WRAPPER", None)
        children.append(worker)
        _result(worker, "ready")
        if transport == "stdio":
            server_pid = run._child_server_pid(worker.proc.pid, tag)
            if server_pid is None:
                raise RuntimeError(f"{sdk}: the stdio server the worker started was not found")
            children.append(_Pid(server_pid))
        assert worker.proc.stdin is not None
        worker.proc.stdin.write(f"warmup {warmup}\n".encode())
        worker.proc.stdin.flush()
        _result(worker, "warm")
        worker.proc.stdin.write(b"gc\n")  # the full collection before the calls, outside the count
        worker.proc.stdin.flush()
        _result(worker, "gc")
        pids = [child.pid if isinstance(child, _Pid) else child.proc.pid for child in children]
        _switch(pids, True)
        worker.proc.stdin.write(f"seq {calls} 0\n".encode())
        worker.proc.stdin.flush()
        _result(worker, "seq")
        _switch(pids, False)
    finally:
        for child in reversed(children):
            if isinstance(child, _Pid):
                continue  # the worker's client stops it, and callgrind writes its file on exit
            if child.proc.stdin is not None and child.proc.poll() is None:
                try:
                    child.proc.stdin.write(b"quit\n")
                    child.proc.stdin.close()
                except OSError:
                    pass
            try:
                child.proc.wait(TIMEOUT)
            except subprocess.TimeoutExpired:
                child.proc.kill()
                child.proc.wait()
    if "server" in outs and transport == "stdio":
        _wait_for(outs["server"])
    return {role: _instructions(path) // calls for role, path in outs.items()}


class _Pid:
    """A process the worker started (a stdio server): counted, stopped by the worker."""

    def __init__(self, pid: int) -> None:
        self.pid = pid


def _wait_for(out: Path, timeout: float = 120.0) -> None:
    """callgrind writes a stopped process's totals as it exits: wait for them."""
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if out.exists() and "totals:" in out.read_text():
            return
        time.sleep(0.2)
    raise RuntimeError(f"{out} has no totals after {timeout:.0f}s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenario", default=",".join(SCENARIOS), help="echo,form,resolver")
    parser.add_argument("--transports", default=",".join(TRANSPORTS), help="memory,stdio,http")
    parser.add_argument("--sdks", default=",".join(run.SDKS))
    parser.add_argument("--calls", type=int, default=60, help="counted calls per SDK (default 60)")
    parser.add_argument("--warmup", type=int, default=20, help="uncounted calls before (each phase; default 20)")
    parser.add_argument(
        "--otel",
        action="store_true",
        help="elicitkit three ways instead of the SDKs: without the otel extra, with it and no SDK, with an SDK",
    )
    args = parser.parse_args()
    if args.otel:
        _otel_main(args)
        return
    for tool in ("valgrind", "callgrind_control"):
        if shutil.which(tool) is None:
            raise SystemExit(f"{tool} not found: apt-get install valgrind")
    sdks = args.sdks.split(",")
    rows = []
    with tempfile.TemporaryDirectory(prefix="elicitkit-callgrind-") as tmp:
        for scenario in args.scenario.split(","):
            for transport in args.transports.split(","):
                counts = {}
                for sdk in sdks:
                    print(f"{scenario} {transport} {sdk}: counting {args.calls} calls", file=sys.stderr)
                    counts[sdk] = measure(sdk, scenario, transport, args.calls, args.warmup, Path(tmp))
                    print(f"  {counts[sdk]}", file=sys.stderr, flush=True)  # kept if a later one fails
                rows.append((scenario, transport, counts))
    print(f"instructions per call (callgrind, {args.calls} sequential calls after {args.warmup}+{args.warmup} warm-up)")
    print(
        f"{'scenario':9} {'transport':10} {'role':8} " + " ".join(f"{sdk:>14}" for sdk in sdks) + "  official/elicitkit"
    )
    for scenario, transport, counts in rows:
        for role in counts[sdks[0]]:
            figures = " ".join(f"{counts[sdk][role]:>14,}" for sdk in sdks)
            ratio = ""
            if "official" in counts and "elicitkit" in counts and counts["elicitkit"][role]:
                ratio = f"  {counts['official'][role] / counts['elicitkit'][role]:.2f}x"
            print(f"{scenario:9} {transport:10} {role:8} {figures}{ratio}")


OTEL_MODES = ("absent", "off", "sdk")
OTEL_TITLES = {"absent": "no extra", "off": "extra, no SDK", "sdk": "SDK+batch"}


def _otel_main(args: argparse.Namespace) -> None:
    """What telemetry costs elicitkit per call, all in one run: the extra installed and no SDK
    configured against no extra (the budget: within 3%), and with an SDK and batch exporters."""
    for tool in ("valgrind", "callgrind_control"):
        if shutil.which(tool) is None:
            raise SystemExit(f"{tool} not found: apt-get install valgrind")
    rows = []
    with tempfile.TemporaryDirectory(prefix="elicitkit-callgrind-") as tmp:
        for scenario in args.scenario.split(","):
            for transport in args.transports.split(","):
                counts = {}
                for otel in OTEL_MODES:
                    print(f"{scenario} {transport} otel={otel}: counting {args.calls} calls", file=sys.stderr)
                    counts[otel] = measure("elicitkit", scenario, transport, args.calls, args.warmup, Path(tmp), otel)
                rows.append((scenario, transport, counts))
    print(
        f"elicitkit instructions per call (callgrind, {args.calls} sequential calls "
        f"after {args.warmup}+{args.warmup} warm-up)"
    )
    print(
        f"{'scenario':9} {'transport':10} {'role':8} "
        + " ".join(f"{OTEL_TITLES[m]:>14}" for m in OTEL_MODES)
        + "  no-SDK vs no-extra  SDK cost/call"
    )
    for scenario, transport, counts in rows:
        for role in counts["absent"]:
            base, off, sdk = counts["absent"][role], counts["off"][role], counts["sdk"][role]
            figures = " ".join(f"{counts[m][role]:>14,}" for m in OTEL_MODES)
            print(f"{scenario:9} {transport:10} {role:8} {figures}  {(off - base) / base:+18.2%}  {sdk - off:>+13,}")


if __name__ == "__main__":
    main()
