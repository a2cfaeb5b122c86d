"""The :class:`Client`: connect to a server object, a command or a URL, and use it.

One class for every transport. It performs the handshake, answers the server's requests
(elicitation, sampling, roots, ping) through the callbacks it was given, and turns results
into the typed models of :mod:`elicitkit.types` at the edge.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AsyncExitStack
from typing import Any, TypeVar

import orjson
from pydantic import BaseModel

from elicitkit.client.elicitation import (
    ElicitationCallback,
    ElicitationResponder,
    UrlElicitationRequiredError,
    to_wire_answer,
)
from elicitkit.elicitation.requests import Origin
from elicitkit.peer import IncomingRequest, Peer, ProgressCallback
from elicitkit.protocol.capabilities import declares
from elicitkit.protocol.connection import Role
from elicitkit.protocol.errors import METHOD_NOT_FOUND, URL_ELICITATION_REQUIRED, ConnectionClosed, MCPError
from elicitkit.protocol.handshake import INITIALIZE, INITIALIZED, ClientHandshake
from elicitkit.protocol.jsonrpc import DEFAULT_MAX_MESSAGE_BYTES, JSON, Notification, RequestId
from elicitkit.protocol.versions import LATEST_LEGACY, LEGACY_VERSIONS
from elicitkit.transports.base import ClientTransport
from elicitkit.types import (
    CallToolResult,
    CompleteResult,
    GetPromptResult,
    ListPromptsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListToolsResult,
    ReadResourceResult,
)

logger = logging.getLogger("elicitkit.client")

M = TypeVar("M", bound=BaseModel)
MaybeAwaitable = Awaitable[Any] | Any

SamplingCallback = Callable[[JSON], Awaitable[JSON]]
RootsCallback = Callable[[], Awaitable[list[JSON]]]
LoggingCallback = Callable[[JSON], MaybeAwaitable]
NotificationCallback = Callable[[str, JSON], MaybeAwaitable]

DEFAULT_CLIENT_INFO = {"name": "elicitkit", "version": "0.1.0"}


def transport_for(target: Any, **options: Any) -> ClientTransport:
    """A server object -> in-memory; ``http(s)://`` -> Streamable HTTP; anything else -> a command."""
    from elicitkit.server.lowlevel import LowLevelServer

    if isinstance(target, LowLevelServer):
        from elicitkit.transports.memory import MemoryTransport

        return MemoryTransport(target)
    if isinstance(target, str) and target.startswith(("http://", "https://")):
        from elicitkit.transports.http_client import StreamableHTTPTransport

        return StreamableHTTPTransport(target, **options)
    if isinstance(target, (str, list, tuple)):
        from elicitkit.transports.stdio import StdioTransport

        return StdioTransport(target, **options)
    if hasattr(target, "open") and hasattr(target, "describe"):
        return target  # type: ignore[no-any-return]
    raise TypeError(f"cannot connect to {target!r}: pass a server object, a command, a URL or a transport")


async def _maybe_await(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


class Client:
    """An MCP client. ``async with Client(target) as client: await client.call_tool(...)``.

    ``target`` is a server object (in-memory), a command line (stdio: a string or argv list) or
    an ``http(s)://`` URL (Streamable HTTP). ``timeout`` bounds each request in seconds.
    """

    def __init__(
        self,
        target: Any,
        *,
        client_info: dict[str, Any] | None = None,
        protocol_version: str = LATEST_LEGACY,
        elicitation_callback: ElicitationCallback | None = None,
        elicitation_modes: Sequence[str] = ("form", "url"),
        auto_url_elicitation: bool = False,
        url_elicitation_timeout: float = 300.0,
        sampling_callback: SamplingCallback | None = None,
        roots: Sequence[JSON] | RootsCallback | None = None,
        logging_callback: LoggingCallback | None = None,
        notification_callback: NotificationCallback | None = None,
        timeout: float | None = 300.0,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
        transport_options: dict[str, Any] | None = None,
        trace: Callable[[str, JSON], None] | None = None,
    ) -> None:
        self.transport = transport_for(target, **(transport_options or {}))
        self.client_info = client_info or dict(DEFAULT_CLIENT_INFO)
        self.handshake = ClientHandshake(protocol_version=protocol_version, accepted_versions=LEGACY_VERSIONS)
        self.elicitation = ElicitationResponder(elicitation_callback, tuple(elicitation_modes))
        self.auto_url_elicitation = auto_url_elicitation
        self.url_elicitation_timeout = url_elicitation_timeout
        self.sampling_callback = sampling_callback
        self.roots = roots
        self.logging_callback = logging_callback
        self.notification_callback = notification_callback
        self.timeout = timeout
        self._send: Any = None
        self.trace = trace
        self._stack: AsyncExitStack | None = None
        self.peer = Peer(
            Role.CLIENT,
            self._transport_send,
            on_request=self._on_request,
            on_notification=self._on_notification,
            max_message_bytes=max_message_bytes,
            default_timeout=timeout,
        )

    # ------------------------------------------------------------------ lifecycle

    async def __aenter__(self) -> Client:
        stack = AsyncExitStack()
        try:
            await stack.enter_async_context(self.peer)
            feed = self.peer.feed if self.trace is None else self._traced_feed
            self._send = await stack.enter_async_context(self.transport.open(feed, self.peer.close))
            await self._initialize()
        except BaseException:
            await stack.aclose()
            raise
        self._stack = stack
        return self

    async def __aexit__(self, *exc: object) -> None:
        stack, self._stack = self._stack, None
        if stack is not None:
            await stack.aclose()

    async def _transport_send(self, message: JSON, related: RequestId | None) -> None:
        if self._send is None:
            raise ConnectionClosed("transport not open")
        if self.trace is not None:
            self.trace("send", message)
        await self._send(message, related)

    async def _traced_feed(self, data: Any) -> None:
        assert self.trace is not None
        try:
            self.trace("recv", orjson.loads(data) if isinstance(data, (bytes, str)) else data)
        except orjson.JSONDecodeError:
            self.trace("recv", {"unparseable": repr(data[:200])})
        await self.peer.feed(data)

    def capabilities(self) -> JSON:
        """What this client declares, derived from the callbacks it was given."""
        caps: JSON = {}
        elicitation = self.elicitation.capability(self.handshake.protocol_version)
        if elicitation is not None:
            caps["elicitation"] = elicitation
        if self.sampling_callback is not None:
            caps["sampling"] = {}
        if self.roots is not None:
            caps["roots"] = {"listChanged": True}
        return caps

    async def _initialize(self) -> None:
        params = self.handshake.initialize_params(self.capabilities(), self.client_info)
        result = await self.peer.request(INITIALIZE, params)
        self.handshake.accept(result)
        assert self.handshake.negotiated_version is not None
        self.transport.set_protocol_version(self.handshake.negotiated_version)
        await self.peer.notify(INITIALIZED)
        await self.transport.start_listening()

    # ------------------------------------------------------------------ what the server said

    @property
    def protocol_version(self) -> str | None:
        return self.handshake.negotiated_version

    @property
    def server_info(self) -> JSON:
        return self.handshake.server_info

    @property
    def server_capabilities(self) -> JSON:
        return self.handshake.server_capabilities

    @property
    def instructions(self) -> str | None:
        return self.handshake.instructions

    @property
    def origin(self) -> Origin:
        """Who this client is talking to, as shown to a person asked a question."""
        info = self.handshake.server_info
        return Origin(
            name=str(info.get("name", "unknown server")),
            version=info.get("version"),
            title=info.get("title"),
            location=self.transport.describe(),
        )

    async def wait_for_elicitation_complete(self, elicitation_id: str, timeout: float | None = None) -> bool:
        """Wait for ``notifications/elicitation/complete`` of a URL elicitation; False on timeout."""
        return await self.elicitation.wait_complete(elicitation_id, timeout)

    # ------------------------------------------------------------------ requests

    async def request(
        self,
        method: str,
        params: JSON | None = None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> JSON:
        """Any request, raw: the result dict, or :class:`MCPError` raised."""
        return await self.peer.request(method, params, timeout=timeout, on_progress=on_progress)

    async def _typed(self, model: type[M], method: str, params: JSON | None = None, **kw: Any) -> M:
        return model.model_validate(await self.request(method, params, **kw))

    async def ping(self) -> None:
        await self.request("ping")

    async def list_tools(self, cursor: str | None = None) -> ListToolsResult:
        return await self._typed(ListToolsResult, "tools/list", {"cursor": cursor} if cursor else None)

    async def call_tool(
        self,
        name: str,
        arguments: JSON | None = None,
        *,
        timeout: float | None = None,
        progress_callback: ProgressCallback | None = None,
        complete_url_elicitations: bool | None = None,
    ) -> CallToolResult:
        """Call a tool. A -32042 answer raises :class:`UrlElicitationRequiredError`, or, with
        ``complete_url_elicitations`` (default: the client's ``auto_url_elicitation``), runs the
        URL callback for each elicitation, waits for their completion and retries once per new URL.
        """
        params: JSON = {"name": name, "arguments": arguments or {}}
        auto = self.auto_url_elicitation if complete_url_elicitations is None else complete_url_elicitations
        seen: set[tuple[str, str]] = set()
        while True:
            try:
                return await self._typed(
                    CallToolResult, "tools/call", params, timeout=timeout, on_progress=progress_callback
                )
            except MCPError as exc:
                if exc.code != URL_ELICITATION_REQUIRED:
                    raise
                required = UrlElicitationRequiredError.from_mcp_error(exc, self.origin)
                if not auto:
                    raise required from None
                await self._complete_url_elicitations(required, seen)

    async def _complete_url_elicitations(
        self, required: UrlElicitationRequiredError, seen: set[tuple[str, str]]
    ) -> None:
        keys = {(e.elicitation_id, e.url) for e in required.elicitations}
        if not keys or keys & seen or self.elicitation.callback is None:
            raise required  # nothing new to do: retrying would loop
        seen |= keys
        for request in required.elicitations:
            answer = to_wire_answer(await _maybe_await(self.elicitation.callback(request)))
            if answer.get("action") != "accept":
                raise required
        for request in required.elicitations:
            if not await self.elicitation.wait_complete(request.elicitation_id, self.url_elicitation_timeout):
                raise required

    async def list_resources(self, cursor: str | None = None) -> ListResourcesResult:
        return await self._typed(ListResourcesResult, "resources/list", {"cursor": cursor} if cursor else None)

    async def list_resource_templates(self, cursor: str | None = None) -> ListResourceTemplatesResult:
        params = {"cursor": cursor} if cursor else None
        return await self._typed(ListResourceTemplatesResult, "resources/templates/list", params)

    async def read_resource(self, uri: str) -> ReadResourceResult:
        return await self._typed(ReadResourceResult, "resources/read", {"uri": uri})

    async def subscribe_resource(self, uri: str) -> None:
        await self.request("resources/subscribe", {"uri": uri})

    async def unsubscribe_resource(self, uri: str) -> None:
        await self.request("resources/unsubscribe", {"uri": uri})

    async def list_prompts(self, cursor: str | None = None) -> ListPromptsResult:
        return await self._typed(ListPromptsResult, "prompts/list", {"cursor": cursor} if cursor else None)

    async def get_prompt(self, name: str, arguments: dict[str, str] | None = None) -> GetPromptResult:
        params: JSON = {"name": name}
        if arguments:
            params["arguments"] = arguments
        return await self._typed(GetPromptResult, "prompts/get", params)

    async def complete(self, ref: JSON, argument: JSON, context: JSON | None = None) -> CompleteResult:
        params: JSON = {"ref": ref, "argument": argument}
        if context:
            params["context"] = context
        return await self._typed(CompleteResult, "completion/complete", params)

    async def set_logging_level(self, level: str) -> None:
        await self.request("logging/setLevel", {"level": level})

    async def send_roots_list_changed(self) -> None:
        await self.peer.notify("notifications/roots/list_changed")

    # ------------------------------------------------------------------ server -> client

    async def _on_request(self, request: IncomingRequest) -> JSON:
        method = request.method
        if method == "ping":
            return {}
        if method == "elicitation/create":
            if self.elicitation.callback is None:
                raise MCPError(METHOD_NOT_FOUND, "this client does not support elicitation")
            version = self.handshake.negotiated_version or self.handshake.protocol_version
            with self.peer.timeouts_paused():  # a person is answering: our own calls must not time out
                return await self.elicitation.answer(request.params, version=version, origin=self.origin)
        if method == "sampling/createMessage":
            if self.sampling_callback is None:
                raise MCPError(METHOD_NOT_FOUND, "this client does not support sampling")
            return await self.sampling_callback(request.params)
        if method == "roots/list":
            if self.roots is None:
                raise MCPError(METHOD_NOT_FOUND, "this client does not expose roots")
            roots = await self.roots() if callable(self.roots) else list(self.roots)
            return {"roots": roots}
        raise MCPError(METHOD_NOT_FOUND, f"Method not found: {method}")

    async def _on_notification(self, notification: Notification) -> None:
        params = notification.params or {}
        if notification.method == "notifications/elicitation/complete":
            elicitation_id = params.get("elicitationId")
            if isinstance(elicitation_id, str):
                self.elicitation.completed(elicitation_id)
        if notification.method == "notifications/message" and self.logging_callback is not None:
            await _maybe_await(self.logging_callback(params))
        if self.notification_callback is not None:
            await _maybe_await(self.notification_callback(notification.method, params))

    def server_declares(self, capability: str) -> bool:
        return declares(self.handshake.server_capabilities, capability)
