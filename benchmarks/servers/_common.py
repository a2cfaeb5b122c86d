"""SDK-neutral plumbing shared by the two benchmark servers (nothing MCP-specific here).

Command line of either server script::

    python <server>.py stdio [--scenario echo] [--cpu N] [--tag TOKEN]
    python <server>.py http  [--scenario echo] [--cpu N] [--tag TOKEN] [--host 127.0.0.1] [--port 0]

plus ``--profile FILE`` on either: run the server under cProfile and write the stats
there when it exits (imports are not included; everything from the event loop's start is);
``--memfile FILE``: on SIGUSR1, collect garbage and write this process's memory use there as
one JSON object (``rss``: resident set size in bytes, from ``/proc/self/status``;
``traced``: bytes tracemalloc sees allocated, or null), which is how the runner measures
memory per parked elicitation; ``--tracemalloc``: trace Python allocations from the start
(``BENCH_TRACEMALLOC_FRAMES``: frames kept per allocation, default 1; with
``BENCH_TRACEMALLOC_DUMP=DIR`` every probe also dumps a tracemalloc snapshot into ``DIR``, to
compare with ``tracemalloc.Snapshot.load(...).compare_to(...)``).

In ``http`` mode the server binds (port 0: a free port chosen by the kernel), prints one line
``LISTENING <url>`` on stdout once uvicorn accepts connections, and shuts down when its stdin
reaches end-of-file, so it cannot outlive the benchmark runner that holds the other end.
``--tag`` is ignored by the server; the runner uses it to find any process it started.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import signal
import sys
from collections.abc import Iterator
from typing import Any

import anyio

# Both HTTP servers run uvicorn with exactly these settings.
UVICORN_SETTINGS: dict[str, Any] = {"log_level": "warning", "access_log": False, "lifespan": "on"}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["stdio", "http"])
    parser.add_argument("--scenario", default="echo")
    parser.add_argument("--cpu", type=int, default=None, help="pin this process to one CPU")
    parser.add_argument("--tag", default="", help="opaque marker for the runner's process bookkeeping")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--profile", default=None, help="write cProfile stats here on exit")
    parser.add_argument("--memfile", default=None, help="on SIGUSR1, write memory use (JSON) here")
    parser.add_argument("--tracemalloc", action="store_true", help="trace Python allocations (see --memfile)")
    args = parser.parse_args(argv)
    if args.tracemalloc:
        import tracemalloc

        tracemalloc.start(int(os.environ.get("BENCH_TRACEMALLOC_FRAMES", "1")))
    if args.memfile:
        install_memory_probe(args.memfile)
    if args.cpu is not None and hasattr(os, "sched_setaffinity"):
        try:
            os.sched_setaffinity(0, {args.cpu})
        except OSError as exc:  # fewer CPUs than asked for: run unpinned
            print(f"could not pin to CPU {args.cpu}: {exc}", file=sys.stderr)
    return args


def memory_use() -> dict[str, int | None]:
    """This process's resident set size and traced Python memory (bytes), after a full collection."""
    import tracemalloc

    gc.collect()
    rss = None
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in open("/proc/self/status").read().splitlines():  # noqa: SIM115
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1]) * 1024
    traced = tracemalloc.get_traced_memory()[0] if tracemalloc.is_tracing() else None
    return {"rss": rss, "traced": traced}


def install_memory_probe(path: str) -> None:
    """SIGUSR1 writes :func:`memory_use` to ``path`` (atomically: a temporary file, then a rename)."""

    dumps = os.environ.get("BENCH_TRACEMALLOC_DUMP")  # a directory: also dump each snapshot there
    taken = 0

    def on_signal(signum: int, frame: object) -> None:
        nonlocal taken
        use = memory_use()
        if dumps:
            import tracemalloc

            if tracemalloc.is_tracing():
                taken += 1
                tracemalloc.take_snapshot().dump(os.path.join(dumps, f"server-{os.getpid()}-{taken}.snapshot"))
        tmp = f"{path}.tmp"
        with open(tmp, "w") as out:
            json.dump(use, out)
        os.replace(tmp, path)

    signal.signal(signal.SIGUSR1, on_signal)


def announce(url: str) -> None:
    """Tell the runner where we listen (the only thing an HTTP server writes on stdout)."""
    sys.stdout.write(f"LISTENING {url}\n")
    sys.stdout.flush()


async def wait_for_stdin_eof() -> None:
    """Return once stdin is closed (the runner went away or asked us to stop)."""

    def drain() -> None:
        while sys.stdin.buffer.read(65536):
            pass

    await anyio.to_thread.run_sync(drain, abandon_on_cancel=True)


@contextlib.contextmanager
def profiled(path: str | None) -> Iterator[None]:
    """cProfile the block into ``path`` (no-op when ``path`` is None)."""
    if path is None:
        yield
        return
    import cProfile

    profile = cProfile.Profile()
    profile.enable()
    try:
        yield
    finally:
        profile.disable()
        profile.dump_stats(path)
