"""SDK-neutral plumbing shared by the two benchmark servers (nothing MCP-specific here).

Command line of either server script::

    python <server>.py stdio [--scenario echo] [--cpu N] [--tag TOKEN]
    python <server>.py http  [--scenario echo] [--cpu N] [--tag TOKEN] [--host 127.0.0.1] [--port 0]

plus ``--profile FILE`` on either: run the server under cProfile and write the stats
there when it exits (imports are not included; everything from the event loop's start is).

In ``http`` mode the server binds (port 0: a free port chosen by the kernel), prints one line
``LISTENING <url>`` on stdout once uvicorn accepts connections, and shuts down when its stdin
reaches end-of-file, so it cannot outlive the benchmark runner that holds the other end.
``--tag`` is ignored by the server; the runner uses it to find any process it started.
"""

from __future__ import annotations

import argparse
import contextlib
import os
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
    args = parser.parse_args(argv)
    if args.cpu is not None and hasattr(os, "sched_setaffinity"):
        try:
            os.sched_setaffinity(0, {args.cpu})
        except OSError as exc:  # fewer CPUs than asked for: run unpinned
            print(f"could not pin to CPU {args.cpu}: {exc}", file=sys.stderr)
    return args


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
