"""Child processes for tests: start a server on a free loopback port, and stop any child for sure.

One stopper per process flavour (anyio for async tests, :class:`subprocess.Popen` for sync ones),
both with the same order: close stdin (a stdio server's cue to leave), give it ``grace`` seconds,
then terminate/kill. Nothing a test starts may outlive it.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import suppress
from pathlib import Path
from typing import IO

import anyio
import pytest
from anyio.abc import Process

STARTUP_TIMEOUT = 15.0


def free_port() -> int:
    """A loopback port nobody listens on right now (it may be taken again before use: callers retry)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def accepts_connections(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


async def stop_child(process: Process, grace: float = 5.0) -> None:
    """Stop an anyio child the way a real client does; shielded, so a cancelled test leaves none behind."""
    with anyio.CancelScope(shield=True):
        if process.returncode is None:
            if process.stdin is not None:
                with suppress(anyio.BrokenResourceError, OSError):
                    await process.stdin.aclose()
            with anyio.move_on_after(grace):
                await process.wait()
            if process.returncode is None:
                process.kill()
                await process.wait()
        await process.aclose()


def stop_process(proc: subprocess.Popen[bytes], grace: float = 5.0) -> None:
    """Close stdin, SIGTERM, wait, then SIGKILL; close our ends of its pipes."""
    if proc.poll() is None:
        if proc.stdin is not None:
            with suppress(OSError):
                proc.stdin.close()
        proc.terminate()
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=grace)
    for pipe in (proc.stdin, proc.stdout):
        if pipe is not None:
            with suppress(OSError):
                pipe.close()


@contextlib.contextmanager
def serve_on_free_port(
    argv_for_port: Callable[[int], list[str]],
    name: str,
    *,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    startup_timeout: float = STARTUP_TIMEOUT,
) -> Iterator[tuple[int, subprocess.Popen[bytes], IO[bytes]]]:
    """Run ``argv_for_port(port)`` on a free port; yield (port, process, log) once it accepts connections.

    Stopped on the way out (:func:`stop_process`) unless the caller did already.
    """
    with tempfile.TemporaryFile() as log:
        for _attempt in range(3):  # a free port can be taken between probing and binding it
            port = free_port()
            proc = subprocess.Popen(
                argv_for_port(port), cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT
            )
            try:
                deadline = time.monotonic() + startup_timeout
                while proc.poll() is None and time.monotonic() < deadline and not accepts_connections(port):
                    time.sleep(0.05)
                if proc.poll() is not None:
                    continue  # died while starting (port clash?): try another port
                if not accepts_connections(port):
                    break  # alive but not serving: give up
                yield port, proc, log
                return
            finally:
                stop_process(proc)
        log.seek(0)
        output = log.read().decode(errors="replace")
    pytest.fail(f"{name} did not start serving HTTP; its output:\n{output[-4000:]}")


@contextlib.contextmanager
def serve_several_on_free_ports(
    starts: Sequence[tuple[Callable[[int], list[str]], str, dict[str, str] | None]],
) -> Iterator[list[tuple[int, subprocess.Popen[bytes], IO[bytes]]]]:
    """:func:`serve_on_free_port` for each ``(argv_for_port, name, env)``, started side by side (their
    imports overlap: a fleet comes up in about the time of its slowest instance, not their sum).

    Each gets the patience of all of them started one after another: on a loaded machine they
    share the same cores, and starting side by side must not make one give up sooner.
    """
    patience = STARTUP_TIMEOUT * max(1, len(starts))
    managers = [serve_on_free_port(argv, name, env=env, startup_timeout=patience) for argv, name, env in starts]
    with contextlib.ExitStack() as stack:
        with ThreadPoolExecutor(max(1, len(managers))) as pool:
            entering = [pool.submit(manager.__enter__) for manager in managers]
        served, failure = [], None
        for manager, started in zip(managers, entering, strict=True):
            try:
                served.append(started.result())
            except BaseException as exc:  # pytest.fail's outcome too; the others are stopped on the way out
                failure = failure or exc
            else:
                stack.push(manager.__exit__)
        if failure is not None:
            raise failure
        stack.callback(_terminate_all, [proc for _, proc, _ in served])  # runs first: they shut down side by side
        yield served


def _terminate_all(procs: list[subprocess.Popen[bytes]]) -> None:
    for proc in procs:
        if proc.poll() is None:
            proc.terminate()


def start_announcing(argv: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    """A server that picks its own port and prints ``URL <url>`` on stdout (stop it with :func:`stop_process`).

    Callers may start several before reading any URL, so their imports overlap.
    """
    with log.open("wb") as stderr:
        return subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, env=env)


def read_url(proc: subprocess.Popen[bytes], log: Path) -> str:
    """The ``URL ...`` line a :func:`start_announcing` server prints once it serves (blocking)."""
    assert proc.stdout is not None
    line = proc.stdout.readline().decode()
    assert line.startswith("URL "), f"server did not start: {line!r}\n{log.read_text()[-3000:]}"
    return line[4:].strip()
