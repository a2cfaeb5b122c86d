"""Where the server under test runs: in memory, as a stdio child, over HTTP (in-process or a child).

Only public entry points are used: the server object itself (in memory, and its
``asgi_app()`` under uvicorn), and the ``elicitkit serve MODULE:SERVER`` command line for child
processes. A child is found by its place in a module (``path/to/file.py:attr`` or
``package.module:attr``), so a server defined inside a test function can run in memory and
in-process HTTP only. Every child process is stopped by its PID (SIGTERM, then SIGKILL).
"""

from __future__ import annotations

import base64
import contextlib
import importlib.util
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from itertools import count
from pathlib import Path
from typing import IO, Any

import anyio
import orjson

from elicitkit import ConnectionClosed, Server

ERAS = ("2025-06-18", "2025-11-25", "2026-07-28")
MODERN_ERAS = frozenset({"2026-07-28"})
TASK_ERAS = ("2026-07-28",)  # the eras with the Tasks extension: a call may run as a task there
TASK_SUFFIX = "-task"  # "2026-07-28-task": the era's column run as a task (a marker argument and a test id)
TRANSPORTS = ("memory", "stdio", "http")
STATE_KEYS_ENV = "ELICITKIT_STATE_KEYS"  # documented in the README: processes that share it share rounds
STARTUP_TIMEOUT = 20.0

_fresh = count()


def client_options(era: str) -> dict[str, Any]:
    """The :class:`~elicitkit.Client` options that speak ``era``."""
    if era not in ERAS:
        raise ValueError(f"unknown era {era!r}; the kit knows {', '.join(ERAS)}")
    return {"mode": "modern" if era in MODERN_ERAS else "legacy", "protocol_version": era}


def new_state_keys() -> str:
    """A fresh key for ``ELICITKIT_STATE_KEYS``: 32 random bytes, base64url without padding."""
    return base64.urlsafe_b64encode(os.urandom(32)).rstrip(b"=").decode("ascii")


# ----------------------------------------------------------------------------- finding the server


@dataclass
class Target:
    """A server to test: the object (for in-process transports) and where a child finds it."""

    server: Server
    spec: str | None  # MODULE:ATTR or FILE.py:ATTR, for child processes

    def require_spec(self, transport: str) -> str:
        if self.spec is None:
            raise RuntimeError(
                f"the {transport} transport runs the server in a child process, which must be able to import it: "
                f"define {self.server.name!r} at module level, or pass 'path/to/file.py:attr' instead of the object"
            )
        return self.spec


def load_file(path: Path, attr: str) -> Any:
    """``attr`` of ``path``, imported afresh (a new module each time: a test starts from clean state)."""
    name = f"_elicitkit_fresh_{path.stem}_{next(_fresh)}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise RuntimeError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pydantic look their module up by name
    spec.loader.exec_module(module)
    return getattr(module, attr)


def resolve(target: Server | str) -> Target:
    """A server object, ``path/to/file.py:attr`` (loaded afresh) or ``package.module:attr``."""
    if isinstance(target, Server):
        return Target(target, locate(target))
    if not isinstance(target, str):
        raise TypeError(f"cannot test {target!r}: pass an elicitkit Server or 'path/to/file.py:attr'")
    where, _, attr = target.partition(":")
    attr = attr or "server"
    if where.endswith(".py") or "/" in where:
        path = Path(where).resolve()
        if not path.is_file():
            raise FileNotFoundError(f"no such file: {where} (relative paths start at {Path.cwd()})")
        server = load_file(path, attr)
        spec = f"{path}:{attr}"
    else:
        server = getattr(importlib.import_module(where), attr)
        spec = f"{where}:{attr}"
    if not isinstance(server, Server):
        raise TypeError(f"{target} is a {type(server).__name__}, not an elicitkit Server")
    return Target(server, spec)


def locate(server: Server) -> str | None:
    """Where a child process can import ``server`` from: a module-level name, or None."""
    for name, module in list(sys.modules.items()):
        namespace = getattr(module, "__dict__", None)
        if not namespace or name == "__main__":
            continue
        for attr, value in list(namespace.items()):
            if value is server:
                file = getattr(module, "__file__", None)
                if file and (name.startswith("_elicitkit_fresh_") or importlib.util.find_spec(name) is None):
                    return f"{file}:{attr}"
                return f"{name}:{attr}"
    return None


def child_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The test's environment, its import path included, so a child imports what the test imports."""
    env = dict(os.environ)
    paths = [p for p in sys.path if p and Path(p).is_dir()]
    env["PYTHONPATH"] = os.pathsep.join(paths)
    env.update(extra or {})
    return env


def serve_command(spec: str, *extra: str) -> list[str]:
    return [sys.executable, "-m", "elicitkit.cli", "serve", spec, *extra]


# ----------------------------------------------------------------------------- HTTP


@contextlib.asynccontextmanager
async def http_in_process(server: Server) -> AsyncIterator[str]:
    """``server.asgi_app()`` under uvicorn in this event loop on a free loopback port; yields the URL."""
    async with asgi_in_process(server.asgi_app()) as base:
        yield f"{base}/mcp"


@contextlib.asynccontextmanager
async def asgi_in_process(app: Any) -> AsyncIterator[str]:
    """Any ASGI app (its lifespan on) under uvicorn in this event loop; yields ``http://127.0.0.1:<port>``.

    For an app built around the endpoint: a user's Starlette app, an auth layer in front.
    """
    import uvicorn

    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", access_log=False, lifespan="on")
    config.timeout_graceful_shutdown = 2
    userver = uvicorn.Server(config)
    async with anyio.create_task_group() as tg:
        tg.start_soon(userver.serve)
        with anyio.fail_after(STARTUP_TIMEOUT):
            while not userver.started:  # uvicorn offers no started event
                if userver.should_exit:
                    raise RuntimeError("uvicorn did not start")
                await anyio.sleep(0.01)
        port = userver.servers[0].sockets[0].getsockname()[1]
        try:
            yield f"http://127.0.0.1:{port}"
        finally:
            userver.should_exit = True


@dataclass
class Child:
    """A server child process over HTTP: its URL, PID and log."""

    url: str
    process: subprocess.Popen[bytes]
    log: IO[bytes]

    @property
    def pid(self) -> int:
        return self.process.pid

    def output(self) -> str:
        self.log.flush()
        self.log.seek(0)
        return self.log.read().decode(errors="replace")

    def stop(self, grace: float = 5.0) -> None:
        """SIGTERM, wait, SIGKILL: by PID, never leaving the child behind."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=grace)


def start_http_child(spec: str, env: dict[str, str]) -> Child:
    """``elicitkit serve SPEC --transport http`` on a port the child's system chooses, returned once
    it says where it listens (the URL read from its output).

    Not a port probed free here and handed to the child: another process (another pytest-xdist
    worker's child) can take it in between, and a connection test would then find *that*
    server listening, and the test would talk to it. Blocking (run it in a worker thread).
    """
    log = _append_only(tempfile.TemporaryFile())  # noqa: SIM115 - the Child owns it and closes it
    command = serve_command(spec, "--transport", "http", "--port", "0")
    proc = subprocess.Popen(command, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
    child = Child("", proc, log)
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while proc.poll() is None and time.monotonic() < deadline:
        said = _LISTENING.search(child.output())
        if said is not None:
            child.url = said.group(1)
            return child
        time.sleep(0.05)
    child.stop()
    output = child.output()
    log.close()
    raise RuntimeError(f"{' '.join(command)} did not start serving; its output:\n{output[-4000:]}")


# What ``elicitkit serve --transport http`` says once it listens (on stderr, into the child's log).
_LISTENING = re.compile(r"serving MCP at (http://\S+)")


def _append_only(log: IO[bytes]) -> IO[bytes]:
    """The child writes its output through a copy of this file's descriptor, which shares the
    file's offset: reading the log here (seek, read) would move where the child writes next,
    and a line written in between would land over the start. Opened for appending, every write
    goes to the end whatever the reader does (POSIX; elsewhere the file stays as it is)."""
    with contextlib.suppress(ImportError, OSError):
        import fcntl

        flags = fcntl.fcntl(log.fileno(), fcntl.F_GETFL)
        fcntl.fcntl(log.fileno(), fcntl.F_SETFL, flags | os.O_APPEND)
    return log


# ----------------------------------------------------------------------------- the tap


def _decode(data: Any) -> Any:
    if isinstance(data, (bytes, bytearray, memoryview, str)):
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:
            return None
    return data


class Tap:
    """A client transport around the real one: puts scripted wrong answers on the wire, drops the line.

    It sees the questions coming in (2025: ``elicitation/create`` requests; 2026: the
    ``inputRequests`` of a result) and rewrites the client's stand-in answer to a question the
    person answered ``wrong(...)`` into an accept with that content, past the client's own check.
    """

    def __init__(self, inner: Any, take_wrong: Callable[[str], dict[str, Any] | None]) -> None:
        self.inner = inner
        self.take_wrong = take_wrong
        self._questions: dict[Any, str] = {}  # 2025: request id -> message
        self._inputs: dict[str, str] = {}  # 2026: input key -> message
        self._dropped = anyio.Event()
        self._on_close: Callable[[str], None] | None = None

    def __getattr__(self, name: str) -> Any:  # per_message_headers, set_stateless, ... of the real one
        return getattr(self.inner, name)

    def describe(self) -> str:
        return str(self.inner.describe())

    def set_protocol_version(self, version: str) -> None:
        self.inner.set_protocol_version(version)

    async def start_listening(self) -> None:
        await self.inner.start_listening()

    async def hang_up(self) -> None:
        """Drop the connection: the server sees it go, the client's waiting calls fail."""
        self._dropped.set()
        if self._on_close is not None:
            self._on_close("the test dropped the connection (hang_up)")

    def _see(self, data: Any) -> None:
        message = _decode(data)
        for item in message if isinstance(message, list) else [message]:
            if not isinstance(item, dict):
                continue
            params = item.get("params")
            if item.get("method") == "elicitation/create" and isinstance(params, dict):
                self._questions[item.get("id")] = str(params.get("message"))
            result = item.get("result")
            requests = result.get("inputRequests") if isinstance(result, dict) else None
            if isinstance(requests, dict):
                for key, entry in requests.items():
                    inner = entry.get("params") if isinstance(entry, dict) else None
                    if isinstance(inner, dict):
                        self._inputs[key] = str(inner.get("message"))

    def _rewrite(self, message: Any) -> Any:
        if not isinstance(message, dict):
            return message
        if "result" in message and message.get("id") in self._questions:
            content = self.take_wrong(self._questions.pop(message["id"]))
            if content is not None:
                return {**message, "result": {"action": "accept", "content": content}}
            return message
        params = message.get("params")
        responses = params.get("inputResponses") if isinstance(params, dict) else None
        if isinstance(responses, dict):
            changed = dict(responses)
            for key in responses:
                content = self.take_wrong(self._inputs[key]) if key in self._inputs else None
                if content is not None:
                    changed[key] = {"action": "accept", "content": content}
            if changed != responses:
                assert isinstance(params, dict)
                return {**message, "params": {**params, "inputResponses": changed}}
        return message

    @contextlib.asynccontextmanager
    async def open(self, feed: Callable[[Any], Awaitable[None]], on_close: Callable[[str], None]) -> AsyncIterator[Any]:
        self._on_close = on_close

        async def seen(data: Any) -> None:
            self._see(data)
            await feed(data)

        async with anyio.create_task_group() as tg:
            opened: list[Any] = []
            ready = anyio.Event()

            async def hold() -> None:  # the real transport lives in its own task, so it can be dropped
                async with self.inner.open(seen, on_close) as send:
                    opened.append(send)
                    ready.set()
                    await self._dropped.wait()

            tg.start_soon(hold)
            await ready.wait()
            send = opened[0]

            async def tapped(message: Any, related: Any, **headers: Any) -> None:
                if self._dropped.is_set():
                    raise ConnectionClosed("the test dropped the connection (hang_up)")
                await send(self._rewrite(message), related, **headers)

            try:
                yield tapped
            finally:
                self._dropped.set()
