"""One connection to one server, in one era: the transport, the peer, and how the era is chosen.

``mode="legacy"`` opens a session with the ``initialize`` handshake (and opens a new one when an
HTTP server says, with a 404, that it forgot ours). ``mode="modern"`` speaks 2026-07-28: no
handshake, ``server/discover`` first, the envelope in every request's ``_meta`` and, over HTTP,
the ``Mcp-*`` headers. ``mode="auto"`` sends ``server/discover`` with the 2026 envelope: a
``DiscoverResult`` (or an error only a 2026 server gives) means modern; any other answer,
including an HTTP 4xx without one of those errors, means ``initialize`` at once, as the
2026-07-28 HTTP binding's backward-compatibility rule says. A server that stays silent (stdio)
gets ``discover_timeout`` seconds.

:class:`Connection` is everything the :class:`~elicitkit.Client` needs below its typed API:
``request`` sends any method the right way for the era and returns the raw result.
"""

from __future__ import annotations

import logging
import shlex
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any, Literal, Protocol, cast, runtime_checkable

import anyio
import orjson

from elicitkit.protocol.connection import Role
from elicitkit.protocol.errors import (
    CONNECTION_CLOSED,
    HEADER_MISMATCH,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    UNSUPPORTED_PROTOCOL_VERSION,
    ConnectionClosed,
    MCPError,
)
from elicitkit.protocol.handshake import INITIALIZE, INITIALIZED, ClientHandshake
from elicitkit.protocol.jsonrpc import JSON, Notification, RequestId
from elicitkit.protocol.modern import (
    DISCOVER,
    NAME_PARAM,
    Envelope,
    InvalidToolHeaders,
    mutual_version,
    request_headers,
    speaks_modern,
    tool_header_params,
    wrap,
)
from elicitkit.protocol.versions import (
    LATEST_LEGACY,
    LEGACY_VERSIONS,
    META_PROTOCOL_VERSION,
    META_SERVER_INFO,
    MODERN_2026,
    Era,
)
from elicitkit.runtime.peer import IncomingRequest, Peer, ProgressCallback
from elicitkit.telemetry import hook as telemetry
from elicitkit.transports.base import ClientTransport

logger = logging.getLogger("elicitkit.client")

ClientMode = Literal["auto", "legacy", "modern"]
CLIENT_MODES: tuple[ClientMode, ...] = ("auto", "legacy", "modern")

# Errors only a 2026 server gives: seeing one in answer to the probe means the server is modern.
_MODERN_ERRORS = frozenset({HEADER_MISMATCH, MISSING_REQUIRED_CLIENT_CAPABILITY, UNSUPPORTED_PROTOCOL_VERSION})
# What an HTTP transport puts in ``data`` of the local error for a request answered 404 for its session
# (transports/http/client.py says the same; neither imports the other).
SESSION_EXPIRED_KEY = "sessionExpired"
_HEADERS_REMEMBERED = 256  # per-message header sets kept (tools and resources called by name; cleared when full)


class ServerUnreachable(ConnectionClosed):
    """The server could not be started or reached; the message says what to try."""


class SessionExpired(ConnectionClosed):
    """The server forgot our session (HTTP 404) and a new one could not be opened."""


class ModernNotSupported(MCPError):
    """``mode="modern"`` was asked for, but the server does not speak 2026-07-28."""


@runtime_checkable
class InMemoryServer(Protocol):
    """What a server object offers to an in-memory connection: a name and a session per client.

    Defined here so the client connects to any such object without importing the server side.
    """

    name: str

    def create_session(self, send: Any, **kwargs: Any) -> Any: ...


async def _close(stack: AsyncExitStack) -> None:
    """``stack.aclose()``, and an exception it raises without a loop in its ``__context__`` chain.

    On CPython 3.11, when two exit callbacks raise the same exception (the transport's and the
    peer's task groups both re-raise one cancellation) while another is being handled, the
    stack sets that exception as its own context; the next ExitStack that walks the chain
    (the client's) then loops forever: Ctrl-C during a call hung the program at 100 % CPU.
    """
    try:
        await stack.aclose()
    except BaseException as exc:
        _cut_context_loop(exc)
        raise


def _cut_context_loop(exc: BaseException) -> None:
    seen = {id(exc)}
    while exc.__context__ is not None:
        if id(exc.__context__) in seen:
            exc.__context__ = None
            return
        exc = exc.__context__
        seen.add(id(exc))


def transport_for(target: object, **options: Any) -> ClientTransport:
    """A server object -> in-memory; ``http(s)://`` -> Streamable HTTP; anything else -> a command."""
    if isinstance(target, str) and target.startswith(("http://", "https://")):
        from elicitkit.transports.http.client import StreamableHTTPTransport

        return StreamableHTTPTransport(target, **options)
    if isinstance(target, (str, list, tuple)):
        from elicitkit.transports.stdio import StdioTransport

        return StdioTransport(target, **options)
    if isinstance(target, InMemoryServer):
        from elicitkit.transports.memory import MemoryTransport

        return MemoryTransport(cast(Any, target))
    if hasattr(target, "open") and hasattr(target, "describe"):
        return cast(ClientTransport, target)
    raise TypeError(f"cannot connect to {target!r}: pass a server object, a command, a URL or a transport")


def start_hint(transport: ClientTransport, reason: object) -> str:
    """Why a server could not be started or reached, and what to try instead, in one line."""
    where = transport.describe()
    from elicitkit.transports.stdio import StdioTransport

    command = transport.command if isinstance(transport, StdioTransport) else None
    if command:
        program = str(command[0])
        if program.endswith(".py") and Path(program).is_file():
            argv = ["python", *command]
            return f"{program} is a Python file, not a command: run it as {argv!r} (or use sys.executable)"
        return f"could not start {shlex.join(command)}: {reason}"
    return f"could not reach {where}: {reason}"


class Connection:
    """A transport, the peer over it, and the era they settled on; ``request`` sends anything raw."""

    def __init__(
        self,
        transport: ClientTransport,
        *,
        mode: ClientMode,
        protocol_version: str,
        client_info: JSON,
        capabilities: Callable[[str], JSON],
        on_request: Callable[[IncomingRequest], Awaitable[JSON]],
        on_notification: Callable[[Notification], Awaitable[None]],
        timeout: float | None,
        discover_timeout: float,
        max_message_bytes: int,
        trace: Callable[[str, JSON], None] | None,
    ) -> None:
        if mode not in CLIENT_MODES:
            raise ValueError(f"mode must be 'auto', 'legacy' or 'modern', not {mode!r}")
        self.transport = transport
        self.mode: ClientMode = mode
        telemetry.auto()  # on when an OpenTelemetry SDK is configured; else nothing, not even an import
        self.client_info = client_info
        self._capabilities = capabilities
        # A 2026 version we speak means the modern era; anything else (even an unknown future
        # date) is offered to ``initialize``, which settles on a version both sides know.
        modern_offer = speaks_modern(protocol_version)
        self.handshake = ClientHandshake(
            protocol_version=LATEST_LEGACY if modern_offer else protocol_version, accepted_versions=LEGACY_VERSIONS
        )
        # The 2026 version every modern request carries; a -32022 answer may change it.
        self.modern_version = protocol_version if modern_offer else MODERN_2026
        self.era: Era | None = None
        self.discover_timeout = discover_timeout
        self.discover_result: JSON | None = None
        self.log_level: str | None = None
        self._envelope: Envelope | None = None  # the last one sent (see envelope())
        self._meta_made: tuple[Envelope, JSON] | None = None  # (an envelope, its _meta; see _wired())
        self.tool_headers: dict[str, dict[str, str]] = {}
        self._headers_made: dict[tuple[str, str | None, str], dict[str, str]] = {}  # see _headers_for
        self.trace = trace
        self._send: Any = None
        # the session id a 404 made us forget while no new session could be opened yet (the next request tries again)
        self._orphaned: str | None = None
        self._renewed: set[str] = set()  # session ids a new session replaced (a late 404 for one renews nothing)
        self._renewing = anyio.Lock()
        self.peer = Peer(
            Role.CLIENT,
            self._transport_send,
            on_request=on_request,
            on_notification=on_notification,
            max_message_bytes=max_message_bytes,
            default_timeout=timeout,
        )

    # ------------------------------------------------------------------ opening

    @asynccontextmanager
    async def open(self) -> AsyncIterator[Connection]:
        """Start the peer and the transport, settle the era; unreachable servers raise :class:`ServerUnreachable`."""
        # The stack closes without the exception: the peer's task group must not wrap it in a group.
        stack = AsyncExitStack()
        try:
            await stack.enter_async_context(self.peer)
            feed = self.peer.feed if self.trace is None else self._traced_feed
            self._send = await stack.enter_async_context(self.transport.open(feed, self.peer.close))
            await self._connect()
        except BaseException as exc:
            await _close(stack)
            if isinstance(exc, OSError):  # the command could not be run
                raise ServerUnreachable(start_hint(self.transport, exc)) from exc
            if isinstance(exc, MCPError) and exc.code == CONNECTION_CLOSED and not isinstance(exc, SessionExpired):
                if isinstance(exc, ServerUnreachable):
                    raise
                raise ServerUnreachable(start_hint(self.transport, exc.message)) from exc
            raise
        try:
            yield self
        finally:
            await _close(stack)

    async def _connect(self) -> None:
        if self.mode == "legacy":
            await self._initialize()
        elif self.mode == "modern":
            self._enter_modern()
            await self._discover()
        elif not await self._probe():
            self._set_stateless(False)
            self.era = None
            await self._initialize()

    def _set_stateless(self, stateless: bool) -> None:
        self.transport.set_stateless(stateless)

    def _enter_modern(self) -> None:
        self.era = Era.MODERN
        self._set_stateless(True)

    async def _initialize(self) -> None:
        params = self.handshake.initialize_params(self._capabilities(self.handshake.protocol_version), self.client_info)
        result = await self.peer.request(INITIALIZE, params)
        self.handshake.accept(result)
        assert self.handshake.negotiated_version is not None
        self.era = Era.LEGACY
        self.transport.set_protocol_version(self.handshake.negotiated_version)
        self.peer.span_attributes = {"mcp.protocol.version": self.handshake.negotiated_version}
        await self.peer.notify(INITIALIZED)
        await self.transport.start_listening()

    async def _probe(self) -> bool:
        """``server/discover`` with the 2026 envelope; True (and modern) when the server speaks 2026."""
        self._enter_modern()
        try:
            result = await self._modern_request(DISCOVER, None, timeout=self.discover_timeout)
        except MCPError as exc:
            if exc.code == UNSUPPORTED_PROTOCOL_VERSION:
                return mutual_version(self.modern_version, _supported(exc.data)) is not None
            if exc.code in _MODERN_ERRORS:
                logger.warning("the server speaks 2026-07-28 but refused our discover: %s", exc)
                return True
            if exc.code == CONNECTION_CLOSED and not self.peer_alive():
                raise  # nothing to fall back on: the server is gone
            logger.debug("server/discover probe failed (%s): falling back to initialize", exc)
            return False
        if not self._accept_discover(result):
            logger.debug("server/discover answer is not a DiscoverResult: falling back to initialize")
            return False
        return True

    def peer_alive(self) -> bool:
        return not self.peer.closed

    def _accept_discover(self, result: JSON) -> bool:
        versions = result.get("supportedVersions") if isinstance(result, dict) else None
        chosen = mutual_version(self.modern_version, versions)
        if chosen is None:
            return False
        self.modern_version = chosen
        self.discover_result = result
        return True

    async def _discover(self) -> None:
        """Forced modern: the server must answer ``server/discover`` (within ``discover_timeout``:
        a 2026 server answers it at once), or the connection fails now."""
        try:
            result = await self._modern_request(DISCOVER, None, timeout=self.discover_timeout)
        except MCPError as exc:
            if exc.code in _MODERN_ERRORS or exc.code == CONNECTION_CLOSED:
                raise  # a 2026 refusal, or nothing there at all: not a server of another era (open() says which)
            said = f"did not answer {DISCOVER}" if exc.is_local else f"answered {DISCOVER} with"
            raise ModernNotSupported(
                exc.code,
                f"the server does not speak 2026-07-28: it {said} {exc.message!r} ({exc.code});"
                " connect with mode='legacy' or mode='auto'",
                exc.data,
            ) from exc
        if not self._accept_discover(result):
            versions = result.get("supportedVersions") if isinstance(result, dict) else None
            logger.warning("the server's discover result names no version we speak: %s", versions)
            self.discover_result = result

    # ------------------------------------------------------------------ sending

    def request(
        self,
        method: str,
        params: JSON | None = None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
        on_started: Callable[[RequestId], object] | None = None,
    ) -> Coroutine[Any, Any, JSON]:
        """Any request, raw: (to await) the result dict, or :class:`MCPError` raised.

        Modern: the envelope is added (and a -32022 answer retried once with a version from its
        ``supported`` list). Legacy: a request refused because the server forgot our session
        opens a new session and is sent once more (it never reached a tool).

        Not a coroutine itself: it hands back the era's own, so a request costs one coroutine
        frame less (every await of a response resumes through each frame of the chain).
        """
        if self.era is Era.MODERN:
            return self._modern_request(method, params, timeout=timeout, on_progress=on_progress, on_started=on_started)
        return self._legacy_request(method, params, timeout=timeout, on_progress=on_progress, on_started=on_started)

    async def _legacy_request(
        self,
        method: str,
        params: JSON | None,
        *,
        timeout: float | None,
        on_progress: ProgressCallback | None,
        on_started: Callable[[RequestId], object] | None,
    ) -> JSON:
        if self._renewing.locked():  # a new session is being opened: send in it, not without one
            async with self._renewing:
                pass
        if self._orphaned is not None:  # the last opening was refused: try again rather than send with none
            await self._renew_session(self._orphaned)
        try:
            return await self.peer.request(
                method, params, timeout=timeout, on_progress=on_progress, on_started=on_started
            )
        except MCPError as exc:
            if not _session_expired(exc):
                raise
            lost = exc.data[SESSION_EXPIRED_KEY] if isinstance(exc.data, dict) else None
        await self._renew_session(lost if isinstance(lost, str) else None)
        return await self.peer.request(method, params, timeout=timeout, on_progress=on_progress, on_started=on_started)

    async def _renew_session(self, lost: str | None) -> None:
        """Open a new session after a 404 (2025-11-25 transport rules); once for all requests that saw it.

        Judged by the session the 404 named, not by who asked first: a request sent in the new
        session before its opening finished may see 404 too (a fleet instance that does not know
        it yet), and that drops the new id; such a loss is renewed again, never left with no
        session (every later request refused as sent without one). A renewal that fails is tried
        again by the next request.
        """
        async with self._renewing:
            if lost is not None and lost in self._renewed and self._orphaned is None:
                return  # another request already opened a new session in its place
            logger.info("the server forgot our session (HTTP 404): initializing a new one")
            try:
                await self._initialize()
            except MCPError as exc:
                self._orphaned = lost if lost is not None else (self._orphaned or "")
                raise SessionExpired(
                    f"the server at {self.transport.describe()} ended our session and refused a new one: {exc.message}"
                ) from exc
            self._orphaned = None
            if lost is not None:
                self._renewed.add(lost)

    async def _modern_request(
        self,
        method: str,
        params: JSON | None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
        on_started: Callable[[RequestId], object] | None = None,
    ) -> JSON:
        retried = False
        while True:
            wired = self._wired(params)
            try:
                return await self.peer.request(
                    method, wired, timeout=timeout, on_progress=on_progress, on_started=on_started
                )
            except MCPError as exc:
                if exc.code != UNSUPPORTED_PROTOCOL_VERSION or retried:
                    raise
                version = mutual_version(self.modern_version, _supported(exc.data))
                if version is None:
                    raise
                logger.info("server refused protocol version %s; retrying with %s", self.modern_version, version)
                self.modern_version = version
                retried = True

    def _wired(self, params: JSON | None) -> JSON:
        """``params`` with the envelope: :func:`wrap`, with the ``_meta`` of a request that
        brings none of its own made once per envelope and copied (every round of a call, every
        call, sends the same one)."""
        envelope = self.envelope()
        if params is not None and "_meta" in params:
            return wrap(params, envelope)
        made = self._meta_made
        if made is None or made[0] is not envelope:
            made = self._meta_made = (envelope, wrap(None, envelope)["_meta"])
        out = dict(params) if params else {}
        out["_meta"] = dict(made[1])
        return out

    def envelope(self) -> Envelope:
        """What every 2026 request says about this client.

        The same object while the version, the log level and the client info stay what they
        were (the capabilities follow from the callbacks the client was made with, which do not
        change): building it, a frozen dataclass and the capabilities, cost as much as the rest
        of wrapping a request."""
        last = self._envelope
        if (
            last is not None
            and last.protocol_version == self.modern_version
            and last.log_level == self.log_level
            and last.client_info == self.client_info
        ):
            return last
        caps = self._capabilities(self.modern_version)
        self._envelope = last = Envelope(self.modern_version, caps, dict(self.client_info), self.log_level)
        return last

    def _transport_send(self, message: JSON, related: RequestId | None) -> Awaitable[None]:
        """The peer's send: hands back the transport's own awaitable (no coroutine frame of its
        own between the peer and the transport)."""
        if self._send is None:
            raise ConnectionClosed("transport not open")
        if self.trace is not None:
            self.trace("send", message)
        headers = self._headers_for(message)
        if headers:
            return cast(Awaitable[None], self._send(message, related, headers=headers))
        return cast(Awaitable[None], self._send(message, related))

    def _headers_for(self, message: JSON) -> dict[str, str] | None:
        """The per-message HTTP headers of a 2026 request (None elsewhere)."""
        if self.era is not Era.MODERN or not self.transport.per_message_headers:
            return None
        method = message.get("method")
        if not isinstance(method, str):
            return None
        params = message.get("params")
        params = params if isinstance(params, dict) else {}
        meta = params.get("_meta")
        version = meta.get(META_PROTOCOL_VERSION) if isinstance(meta, dict) else None
        header_params: dict[str, str] = {}
        if method == "tools/call" and isinstance(params.get("name"), str):
            header_params = self.tool_headers.get(params["name"], {})
        if not isinstance(version, str):
            version = self.modern_version
        if header_params:  # Mcp-Param-* follow the arguments: made for each request
            return request_headers(method, params, version, header_params)
        # Otherwise they follow the method, its name parameter and the version: the same for
        # every round of a call and every call of a tool, made once (a copy handed out).
        name_key = NAME_PARAM.get(method)
        name = params.get(name_key) if name_key is not None else None
        key = (method, name if type(name) is str else None, version)
        made = self._headers_made.get(key)
        if made is None:
            made = request_headers(method, params, version, header_params)
            if len(self._headers_made) >= _HEADERS_REMEMBERED:
                self._headers_made.clear()
            self._headers_made[key] = made
        return dict(made)

    async def _traced_feed(self, data: Any) -> None:
        assert self.trace is not None
        try:
            self.trace("recv", orjson.loads(data) if isinstance(data, (bytes, str)) else data)
        except orjson.JSONDecodeError:
            self.trace("recv", {"unparseable": repr(data[:200])})
        await self.peer.feed(data)

    # ------------------------------------------------------------------ what the server said

    @property
    def protocol_version(self) -> str | None:
        if self.era is Era.MODERN:
            return self.modern_version
        return self.handshake.negotiated_version

    @property
    def declared_version(self) -> str:
        """The version our capabilities are declared in (their shape differs between eras)."""
        return self.modern_version if self.era is Era.MODERN else self.handshake.protocol_version

    # ------------------------------------------------------------------ what differs between eras

    @property
    def has_tasks(self) -> bool:
        """Tasks (the 2026 extension) exist on this connection."""
        return self.era is Era.MODERN

    @property
    def changes_come_on_streams(self) -> bool:
        """A server's changes come on ``subscriptions/listen`` streams (2026), not on a session (2025)."""
        return self.era is Era.MODERN

    async def set_log_level(self, level: str) -> None:
        """2025: ``logging/setLevel``. 2026: the level travels in every request's envelope."""
        if self.era is Era.MODERN:
            self.log_level = level
            return
        await self.request("logging/setLevel", {"level": level})

    async def roots_changed(self) -> None:
        """2025: ``notifications/roots/list_changed``. 2026: nothing (servers ask for roots with
        each request that needs them)."""
        if self.era is not Era.MODERN:
            await self.peer.notify("notifications/roots/list_changed")

    def tools_listed(self, tools: list[Any], *, first_page: bool) -> list[Any]:
        """2026: remember each tool's ``x-mcp-header`` parameters for its calls, and drop (with a
        warning) tools whose annotations break the rules. 2025: the tools as they are."""
        if self.era is not Era.MODERN:
            return tools
        headers = self.tool_headers
        if first_page:
            headers.clear()
        kept = []
        for tool in tools:
            try:
                headers[tool.name] = tool_header_params(tool.input_schema)
            except InvalidToolHeaders as exc:
                logger.warning("ignoring tool %r: invalid x-mcp-header annotation: %s", tool.name, exc)
                continue
            kept.append(tool)
        return kept

    @property
    def server_info(self) -> JSON:
        if self.era is Era.MODERN:
            found = self.discover_result or {}
            meta = found.get("_meta")
            info = meta.get(META_SERVER_INFO) if isinstance(meta, dict) else None
            if not isinstance(info, dict):
                info = found.get("serverInfo")  # where some 2026 servers put it
            return info if isinstance(info, dict) else {}
        return self.handshake.server_info

    @property
    def server_capabilities(self) -> JSON:
        if self.era is Era.MODERN:
            caps = (self.discover_result or {}).get("capabilities")
            return caps if isinstance(caps, dict) else {}
        return self.handshake.server_capabilities

    @property
    def instructions(self) -> str | None:
        if self.era is Era.MODERN:
            text = (self.discover_result or {}).get("instructions")
            return text if isinstance(text, str) else None
        return self.handshake.instructions


def _supported(data: Any) -> Any:
    """``data.supported`` of a -32022 error (anything else: None)."""
    return data.get("supported") if isinstance(data, dict) else None


def _session_expired(exc: MCPError) -> bool:
    return exc.code == CONNECTION_CLOSED and isinstance(exc.data, dict) and SESSION_EXPIRED_KEY in exc.data


__all__ = [
    "CLIENT_MODES",
    "ClientMode",
    "Connection",
    "InMemoryServer",
    "ModernNotSupported",
    "ServerUnreachable",
    "SessionExpired",
    "transport_for",
]
