"""stdio: newline-delimited JSON-RPC over a child process's stdin/stdout.

Server side: :func:`serve_stdio` reads our stdin, writes our stdout, and points ``sys.stdout``
at stderr meanwhile so a stray ``print`` cannot corrupt the protocol stream.
Client side: :class:`StdioTransport` spawns the server, passes its stderr through, and shuts it
down in the polite order: close stdin, then terminate, then kill.

The child runs in a session of its own (POSIX; a process group of its own on Windows). Ctrl-C
in the terminal signals the terminal's foreground process group: were the child in ours, it
would die mid-question while our client was still telling it "cancel". Now the client alone
hears Ctrl-C and stops the child in the polite order. The child still ends when the client
dies, even by SIGKILL: its stdin is our pipe, and a server reading EOF there leaves
(:func:`serve_stdio` does).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import select
import shlex
import stat
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Generator, Sequence
from contextlib import asynccontextmanager
from typing import IO, Any

import anyio
from anyio.abc import Process

from elicitkit.protocol.errors import INVALID_REQUEST, MCPError
from elicitkit.protocol.framing import LineFramer, Oversized
from elicitkit.protocol.jsonrpc import DEFAULT_MAX_MESSAGE_BYTES, JSON, ErrorResponse, RequestId, encode
from elicitkit.runtime.contract import Endpoint, Send
from elicitkit.transports.base import Feed, OnClose

logger = logging.getLogger("elicitkit.stdio")

_READ_CHUNK = 256 * 1024


def _oversized_reply(size: int, limit: int) -> JSON:
    error = MCPError(INVALID_REQUEST, f"message of {size} bytes exceeds the {limit}-byte limit")
    return ErrorResponse(None, error).to_wire()


async def _pipe_reader(stream: IO[bytes]) -> asyncio.StreamReader | None:
    """An asyncio reader over a pipe, socket or tty; None for anything else (read it in a thread)."""
    try:
        fd = stream.fileno()
        mode = os.fstat(fd).st_mode
    except (ValueError, OSError):
        return None
    # epoll takes pipes, sockets and terminals; anything else (a file, /dev/null) is read in a thread.
    if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or os.isatty(fd)):
        return None
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=_READ_CHUNK)
    try:
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), stream)
    except (ValueError, OSError):
        return None
    return reader


async def serve_stdio(
    server: Endpoint,
    *,
    stdin: IO[bytes] | None = None,
    stdout: IO[bytes] | None = None,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
) -> None:
    """Serve one client on stdin/stdout until stdin closes."""
    in_stream = stdin if stdin is not None else sys.stdin.buffer
    out_stream = stdout if stdout is not None else sys.stdout.buffer
    out_fd = out_stream.fileno()

    def broken() -> None:
        session.close("the client stopped reading")
        stop.set()

    out = _Batcher(out_fd, broken)

    def send(message: JSON, related: RequestId | None) -> Awaitable[None]:
        return out.write(encode(message))

    stop = anyio.Event()
    session = server.create_session(send, max_message_bytes=max_message_bytes)
    framer = LineFramer(max_message_bytes)
    saved_stdout = sys.stdout
    if stdout is None:
        sys.stdout = sys.stderr  # protect the protocol stream from print()
    try:
        async with session, anyio.create_task_group() as tg:
            tg.start_soon(_cancel_on, stop, tg.cancel_scope)
            reader = await _pipe_reader(in_stream)
            while True:
                if reader is not None:
                    chunk = await reader.read(_READ_CHUNK)
                else:
                    read1 = getattr(in_stream, "read1", in_stream.read)
                    chunk = await anyio.to_thread.run_sync(read1, _READ_CHUNK)
                frames = framer.feed(chunk) if chunk else framer.eof()
                for frame in frames:
                    if isinstance(frame, Oversized):
                        logger.warning("dropped a %d-byte message (limit %d)", frame.size, max_message_bytes)
                        await send(_oversized_reply(frame.size, max_message_bytes), None)
                    else:
                        await session.feed(frame)
                if not chunk:
                    break
            session.close("stdin closed")
            tg.cancel_scope.cancel()
    finally:
        out.flush_now()  # what the last tick queued: answers, a goodbye error
        sys.stdout = saved_stdout


class _Batcher:
    """The server's stdout: every message queued in one event-loop tick goes out in one write.

    With many calls in flight, answers (and questions) are ready together; a write per
    message is a system call each, and the writer's lock used to cost a trip through the event
    loop per message. ``write`` queues and returns at once (nothing to wait for) unless more
    than :data:`_HIGH_WATER` bytes wait for a reader that is not reading: then it waits until
    the pipe takes them, as the old writer did. A write the pipe refuses (full) is retried when
    the pipe is writable.
    """

    def __init__(self, fd: int, broken: Callable[[], None]) -> None:
        self.fd = fd
        self.broken = broken
        self.buf = bytearray()
        self.scheduled = False
        self.blocked = False  # the pipe was full: waiting until it is writable
        self.drained: asyncio.Event | None = None
        self.loop = asyncio.get_running_loop()
        self.gone = False

    def write(self, data: bytes) -> Awaitable[None]:
        if self.gone:
            return _DONE
        self.buf += data
        self.buf += b"\n"
        if not self.scheduled and not self.blocked:
            self.scheduled = True
            self.loop.call_soon(self._flush)
        if self.blocked and len(self.buf) > _HIGH_WATER:
            if self.drained is None:
                self.drained = asyncio.Event()
            return _until(self.drained)
        return _DONE

    def _flush(self) -> None:
        self.scheduled = False
        self._write_some()
        if self.buf and not self.gone and not self.blocked:
            self.blocked = True
            try:
                self.loop.add_writer(self.fd, self._writable)
            except (OSError, ValueError, NotImplementedError):  # not pollable: write blocking, as before
                self.blocked = False
                self.flush_now()

    def _writable(self) -> None:
        self._write_some()
        if not self.buf or self.gone:
            self.loop.remove_writer(self.fd)
            self.blocked = False
            if self.drained is not None:
                self.drained.set()
                self.drained = None

    def _write_some(self) -> None:
        while self.buf and not self.gone:
            try:
                written = os.write(self.fd, self.buf)
            except BlockingIOError:
                return
            except (BrokenPipeError, ConnectionResetError):
                self._lost()
                return
            del self.buf[:written]

    def _lost(self) -> None:
        self.gone = True
        self.buf.clear()
        if self.drained is not None:
            self.drained.set()
            self.drained = None
        self.broken()

    def flush_now(self) -> None:
        """Write whatever is queued before the process moves on (end of stdin: the last answers)."""
        if self.blocked:
            with contextlib.suppress(Exception):
                self.loop.remove_writer(self.fd)
            self.blocked = False
        while self.buf and not self.gone:
            try:
                written = os.write(self.fd, self.buf)
            except BlockingIOError:
                select.select([], [self.fd], [], 1.0)
                continue
            except OSError:
                self.gone = True
                self.buf.clear()
                return
            del self.buf[:written]


_HIGH_WATER = 1024 * 1024  # queued bytes a stalled reader may leave before senders wait


class _Done:
    """An awaitable that is already done (no coroutine, no trip through the event loop)."""

    def __await__(self) -> Generator[None, None, None]:
        return
        yield  # pragma: no cover - makes this a generator


_DONE = _Done()


async def _until(event: asyncio.Event) -> None:
    await event.wait()


async def _cancel_on(event: anyio.Event, scope: anyio.CancelScope) -> None:
    await event.wait()
    scope.cancel()


def _keeps_up(transport: asyncio.WriteTransport) -> bool:
    """Nothing queued for the child's stdin: a message written now goes straight into the pipe."""
    return not transport.is_closing() and not transport.get_write_buffer_size()


def _new_process_group() -> int:
    """Windows: Ctrl-C goes to every process on the console unless the child has a group of its own."""
    if sys.platform == "win32":
        return subprocess.CREATE_NEW_PROCESS_GROUP
    return 0


class StdioTransport:
    """Spawn a server process and talk to it over its stdin/stdout.

    ``own_session`` (default True): start it in a session of its own, so Ctrl-C in the terminal
    reaches only this client, which then stops it cleanly (close stdin, wait
    ``shutdown_timeout``, terminate, kill).
    """

    per_message_headers = False  # nothing to put them in

    def __init__(
        self,
        command: str | Sequence[str],
        *,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
        stderr: int | IO[Any] | None = None,
        shutdown_timeout: float = 2.0,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
        own_session: bool = True,
    ) -> None:
        self.command = shlex.split(command) if isinstance(command, str) else list(command)
        if not self.command:
            raise ValueError("empty server command")
        self.env = env
        self.cwd = cwd
        self.stderr = stderr
        self.shutdown_timeout = shutdown_timeout
        self.max_message_bytes = max_message_bytes
        # Keep terminal signals (Ctrl-C) away from the child: see the module docstring.
        self.own_session = own_session
        self.process: Process | None = None

    def describe(self) -> str:
        return shlex.join(self.command)

    def set_stateless(self, stateless: bool) -> None:
        return None  # no sessions, no second stream, nothing to resume either way

    def set_protocol_version(self, version: str) -> None:
        return None

    async def start_listening(self) -> None:
        return None  # one duplex channel carries everything already

    @asynccontextmanager
    async def open(self, feed: Feed, on_close: OnClose) -> AsyncIterator[Send]:
        env = None if self.env is None else {**os.environ, **self.env}
        process = await anyio.open_process(
            self.command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            env=env,
            cwd=self.cwd,
            start_new_session=self.own_session and os.name == "posix",
            creationflags=_new_process_group() if self.own_session else 0,
        )
        self.process = process
        assert process.stdin is not None and process.stdout is not None
        stdin, stdout = process.stdin, process.stdout
        lock = anyio.Lock(fast_acquire=True)  # uncontended (the common case): no trip through the event loop
        writer = getattr(stdin, "_stream", None)  # anyio's send ends in a checkpoint: a trip per message
        direct = writer.transport if isinstance(writer, asyncio.StreamWriter) else None

        async def send(message: JSON, related: RequestId | None, headers: dict[str, str] | None = None) -> None:
            data = encode(message) + b"\n"
            if direct is not None and not lock.locked() and _keeps_up(direct):  # written now, no waiting
                direct.write(data)
                return
            async with lock:
                await stdin.send(data)

        async def read_loop() -> None:
            framer = LineFramer(self.max_message_bytes)
            try:
                async for chunk in stdout:
                    for frame in framer.feed(chunk):
                        if isinstance(frame, Oversized):
                            logger.warning("server sent a %d-byte message; dropped", frame.size)
                        else:
                            await feed(frame)
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                pass
            on_close("server process closed its stdout")

        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(read_loop)
                try:
                    yield send
                finally:
                    tg.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                await self._shutdown(process)

    async def _shutdown(self, process: Process) -> None:
        """Close stdin and wait; then SIGTERM and wait; then SIGKILL."""
        try:
            if process.stdin is not None:
                await process.stdin.aclose()
        except Exception:  # already gone
            pass
        with anyio.move_on_after(self.shutdown_timeout):
            await process.wait()
            return
        try:
            process.terminate()
        except ProcessLookupError:
            return
        with anyio.move_on_after(self.shutdown_timeout):
            await process.wait()
            return
        try:
            process.kill()
        except ProcessLookupError:
            return
        await process.wait()
