"""The :class:`Client`: connect to a server object, a command or a URL, and use it.

One class for every transport and both protocol eras. With a handshake-era (legacy) server it
performs ``initialize`` and answers the server's requests (elicitation, sampling, roots, ping)
through the callbacks it was given. With a 2026-07-28 (modern) server there is no handshake:
every request carries the envelope in ``_meta`` (and, over HTTP, the ``Mcp-*`` headers), and
the same callbacks answer the ``inputRequests`` of ``input_required`` results, after which the
request is sent again (the multi-round-trip loop). ``mode="auto"`` finds out which era the
server speaks with a ``server/discover`` probe. Results become the typed models of
:mod:`elicitkit.types` at the edge.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AsyncExitStack
from typing import Any, Literal, TypeVar, overload

import anyio
import orjson
from pydantic import BaseModel

from elicitkit.client.elicitation import (
    ElicitationCallback,
    ElicitationResponder,
    UrlElicitationRequiredError,
    to_wire_answer,
)
from elicitkit.client.mrtr import (
    ELICIT,
    LIST_ROOTS,
    SAMPLE,
    InputRequest,
    InputRequestViolation,
    InputRequiredResult,
    InvalidResultType,
    MultiRoundTripError,
    TooManyInputRounds,
    result_type,
    retry_params,
)
from elicitkit.elicitation.requests import Origin
from elicitkit.peer import IncomingRequest, Peer, ProgressCallback
from elicitkit.protocol.capabilities import declares
from elicitkit.protocol.connection import Role
from elicitkit.protocol.errors import (
    HEADER_MISMATCH,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    UNSUPPORTED_PROTOCOL_VERSION,
    URL_ELICITATION_REQUIRED,
    ConnectionClosed,
    MCPError,
)
from elicitkit.protocol.handshake import INITIALIZE, INITIALIZED, ClientHandshake
from elicitkit.protocol.jsonrpc import DEFAULT_MAX_MESSAGE_BYTES, JSON, Notification, RequestId
from elicitkit.protocol.modern import (
    MRTR_METHODS,
    RESULT_INPUT_REQUIRED,
    Envelope,
    InvalidToolHeaders,
    request_headers,
    tool_header_params,
    wrap,
)
from elicitkit.protocol.versions import (
    LATEST_LEGACY,
    LEGACY_VERSIONS,
    META_PROTOCOL_VERSION,
    META_SERVER_INFO,
    MODERN_2026,
    MODERN_VERSIONS,
    Era,
)
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


ClientMode = Literal["auto", "legacy", "modern"]
InputRequiredHandling = Literal["handle", "return"]

DISCOVER = "server/discover"
# Errors only a 2026 server gives: seeing one in answer to the probe means the server is modern.
_MODERN_ERRORS = frozenset({HEADER_MISMATCH, MISSING_REQUIRED_CLIENT_CAPABILITY, UNSUPPORTED_PROTOCOL_VERSION})
_MAX_BACKOFF = 2.0


class Client:
    """An MCP client. ``async with Client(target) as client: await client.call_tool(...)``.

    ``target`` is a server object (in-memory), a command line (stdio: a string or argv list) or
    an ``http(s)://`` URL (Streamable HTTP). ``timeout`` bounds each request in seconds.

    ``mode`` picks the protocol era: ``"legacy"`` (the ``initialize`` handshake; the default
    for now, see below), ``"modern"`` (2026-07-28: no handshake, an envelope in every
    request) or ``"auto"`` (probe with ``server/discover``; a 2026 answer means modern,
    anything else falls back to the handshake). ``protocol_version`` is the version offered:
    a handshake version for the legacy era, or a 2026 version for the modern one.

    The default stays ``"legacy"`` while tests written for the handshake era connect to
    servers that now also speak 2026 without saying which era they mean.

    In the modern era a ``tools/call``, ``prompts/get`` or ``resources/read`` may come back
    ``input_required``; the client then answers every input request through the same
    callbacks it uses for a legacy server's requests and sends the request again, at most
    ``max_input_rounds`` times.
    """

    def __init__(
        self,
        target: Any,
        *,
        mode: ClientMode = "legacy",
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
        discover_timeout: float = 10.0,
        max_input_rounds: int = 10,
        input_backoff: float = 0.05,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
        transport_options: dict[str, Any] | None = None,
        trace: Callable[[str, JSON], None] | None = None,
    ) -> None:
        if mode not in ("auto", "legacy", "modern"):
            raise ValueError(f"mode must be 'auto', 'legacy' or 'modern', not {mode!r}")
        self.transport = transport_for(target, **(transport_options or {}))
        self.mode: ClientMode = mode
        self.client_info = client_info or dict(DEFAULT_CLIENT_INFO)
        modern_offer = protocol_version in MODERN_VERSIONS
        self.handshake = ClientHandshake(
            protocol_version=LATEST_LEGACY if modern_offer else protocol_version, accepted_versions=LEGACY_VERSIONS
        )
        # The 2026 version every modern request carries; a -32022 answer may change it.
        self.modern_version = protocol_version if modern_offer else MODERN_2026
        self.era: Era | None = None
        self.elicitation = ElicitationResponder(elicitation_callback, tuple(elicitation_modes))
        self.auto_url_elicitation = auto_url_elicitation
        self.url_elicitation_timeout = url_elicitation_timeout
        self.sampling_callback = sampling_callback
        self.roots = roots
        self.logging_callback = logging_callback
        self.notification_callback = notification_callback
        self.timeout = timeout
        self.discover_timeout = discover_timeout
        self.max_input_rounds = max_input_rounds
        self.input_backoff = input_backoff
        self.log_level: str | None = None
        self.discover_result: JSON | None = None
        self._tool_headers: dict[str, dict[str, str]] = {}
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
            await self._connect()
        except BaseException:
            await stack.aclose()
            raise
        self._stack = stack
        return self

    async def __aexit__(self, *exc: object) -> None:
        stack, self._stack = self._stack, None
        if stack is not None:
            await stack.aclose()

    async def _connect(self) -> None:
        if self.mode == "legacy":
            await self._initialize()
        elif self.mode == "modern":
            self._enter_modern()
            await self._discover(required=False)
        elif not await self._probe():
            self._set_stateless(False)
            self.era = None
            await self._initialize()

    def _set_stateless(self, stateless: bool) -> None:
        setter = getattr(self.transport, "set_stateless", None)
        if setter is not None:
            setter(stateless)

    def _enter_modern(self) -> None:
        self.era = Era.MODERN
        self._set_stateless(True)

    async def _probe(self) -> bool:
        """``server/discover`` with the 2026 envelope; True (and modern) when the server speaks 2026."""
        self._enter_modern()
        try:
            result = await self._modern_request(DISCOVER, None, timeout=self.discover_timeout)
        except MCPError as exc:
            if exc.code == UNSUPPORTED_PROTOCOL_VERSION:
                return self._pick_version(exc.data) is not None
            if exc.code in _MODERN_ERRORS:
                logger.warning("the server speaks 2026-07-28 but refused our discover: %s", exc)
                return True
            logger.debug("server/discover probe failed (%s): falling back to initialize", exc)
            return False
        if not self._accept_discover(result):
            logger.debug("server/discover answer is not a DiscoverResult: falling back to initialize")
            return False
        return True

    def _accept_discover(self, result: JSON) -> bool:
        versions = result.get("supportedVersions") if isinstance(result, dict) else None
        if not isinstance(versions, list):
            return False
        if self.modern_version not in versions:
            chosen = next((v for v in MODERN_VERSIONS if v in versions), None)
            if chosen is None:
                return False
            self.modern_version = chosen
        self.discover_result = result
        return True

    async def _discover(self, *, required: bool) -> None:
        try:
            result = await self._modern_request(DISCOVER, None)
        except MCPError as exc:
            if required or exc.code != METHOD_NOT_FOUND:
                raise
            logger.warning("the server does not implement server/discover: %s", exc)
            return
        if not self._accept_discover(result):
            versions = result.get("supportedVersions")
            logger.warning("the server's discover result names no version we speak: %s", versions)
            self.discover_result = result

    async def _transport_send(self, message: JSON, related: RequestId | None) -> None:
        if self._send is None:
            raise ConnectionClosed("transport not open")
        if self.trace is not None:
            self.trace("send", message)
        headers = self._headers_for(message)
        if headers:
            await self._send(message, related, headers=headers)
        else:
            await self._send(message, related)

    def _headers_for(self, message: JSON) -> dict[str, str] | None:
        """The per-message HTTP headers of a 2026 request (None elsewhere)."""
        if self.era is not Era.MODERN or not getattr(self.transport, "per_message_headers", False):
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
            header_params = self._tool_headers.get(params["name"], {})
        if not isinstance(version, str):
            version = self.modern_version
        return request_headers(method, params, version, header_params)

    async def _traced_feed(self, data: Any) -> None:
        assert self.trace is not None
        try:
            self.trace("recv", orjson.loads(data) if isinstance(data, (bytes, str)) else data)
        except orjson.JSONDecodeError:
            self.trace("recv", {"unparseable": repr(data[:200])})
        await self.peer.feed(data)

    def capabilities(self) -> JSON:
        """What this client declares, derived from the callbacks it was given."""
        if self.era is Era.MODERN:
            return self.modern_capabilities()
        caps: JSON = {}
        elicitation = self.elicitation.capability(self.handshake.protocol_version)
        if elicitation is not None:
            caps["elicitation"] = elicitation
        if self.sampling_callback is not None:
            caps["sampling"] = {}
        if self.roots is not None:
            caps["roots"] = {"listChanged": True}
        return caps

    def modern_capabilities(self) -> JSON:
        """The same declaration in the 2026 shape (no ``listChanged`` for roots: that notification is gone)."""
        caps: JSON = {}
        elicitation = self.elicitation.capability(self.modern_version)
        if elicitation is not None:
            caps["elicitation"] = elicitation
        if self.sampling_callback is not None:
            caps["sampling"] = {}
        if self.roots is not None:
            caps["roots"] = {}
        return caps

    def envelope(self) -> Envelope:
        """What every 2026 request says about this client."""
        return Envelope(self.modern_version, self.modern_capabilities(), dict(self.client_info), self.log_level)

    async def _initialize(self) -> None:
        params = self.handshake.initialize_params(self.capabilities(), self.client_info)
        result = await self.peer.request(INITIALIZE, params)
        self.handshake.accept(result)
        assert self.handshake.negotiated_version is not None
        self.era = Era.LEGACY
        self.transport.set_protocol_version(self.handshake.negotiated_version)
        await self.peer.notify(INITIALIZED)
        await self.transport.start_listening()

    # ------------------------------------------------------------------ what the server said

    @property
    def protocol_version(self) -> str | None:
        if self.era is Era.MODERN:
            return self.modern_version
        return self.handshake.negotiated_version

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

    @property
    def origin(self) -> Origin:
        """Who this client is talking to, as shown to a person asked a question."""
        info = self.server_info
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
        """Any request, raw: the result dict, or :class:`MCPError` raised.

        In the modern era the envelope is added here (and a -32022 answer retried once with a
        version from its ``supported`` list); an ``input_required`` result comes back as is.
        """
        if self.era is Era.MODERN:
            return await self._modern_request(method, params, timeout=timeout, on_progress=on_progress)
        return await self.peer.request(method, params, timeout=timeout, on_progress=on_progress)

    async def _modern_request(
        self,
        method: str,
        params: JSON | None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> JSON:
        retried = False
        while True:
            wired = wrap(params, self.envelope())
            try:
                return await self.peer.request(method, wired, timeout=timeout, on_progress=on_progress)
            except MCPError as exc:
                if exc.code != UNSUPPORTED_PROTOCOL_VERSION or retried:
                    raise
                version = self._pick_version(exc.data)
                if version is None:
                    raise
                logger.info("server refused protocol version %s; retrying with %s", self.modern_version, version)
                self.modern_version = version
                retried = True

    def _pick_version(self, data: Any) -> str | None:
        """A 2026 version both sides speak, from a -32022 error's ``data.supported`` (ours first)."""
        supported = data.get("supported") if isinstance(data, dict) else None
        if not isinstance(supported, list):
            return None
        if self.modern_version in supported:
            return self.modern_version
        return next((v for v in MODERN_VERSIONS if v in supported), None)

    async def _typed(self, model: type[M], method: str, params: JSON | None = None, **kw: Any) -> M:
        result = await self.request(method, params, **kw)
        if result_type(result) == RESULT_INPUT_REQUIRED:
            raise InvalidResultType(f"{method} may not answer input_required")
        return model.model_validate(result)

    async def ping(self) -> None:
        await self.request("ping")

    async def list_tools(self, cursor: str | None = None) -> ListToolsResult:
        """List tools. In the modern era tools whose ``x-mcp-header`` annotations break the rules
        are dropped (with a warning), and the others' header parameters remembered for calls."""
        result = await self._typed(ListToolsResult, "tools/list", {"cursor": cursor} if cursor else None)
        if self.era is not Era.MODERN:
            return result
        if cursor is None:
            self._tool_headers = {}
        kept = []
        for tool in result.tools:
            try:
                headers = tool_header_params(tool.input_schema)
            except InvalidToolHeaders as exc:
                logger.warning("ignoring tool %r: invalid x-mcp-header annotation: %s", tool.name, exc)
                continue
            self._tool_headers[tool.name] = headers
            kept.append(tool)
        result.tools = kept
        return result

    @overload
    async def call_tool(
        self,
        name: str,
        arguments: JSON | None = ...,
        *,
        timeout: float | None = ...,
        progress_callback: ProgressCallback | None = ...,
        complete_url_elicitations: bool | None = ...,
        input_required: Literal["handle"] = ...,
    ) -> CallToolResult: ...

    @overload
    async def call_tool(
        self,
        name: str,
        arguments: JSON | None = ...,
        *,
        timeout: float | None = ...,
        progress_callback: ProgressCallback | None = ...,
        complete_url_elicitations: bool | None = ...,
        input_required: InputRequiredHandling,
    ) -> CallToolResult | InputRequiredResult: ...

    async def call_tool(
        self,
        name: str,
        arguments: JSON | None = None,
        *,
        timeout: float | None = None,
        progress_callback: ProgressCallback | None = None,
        complete_url_elicitations: bool | None = None,
        input_required: InputRequiredHandling = "handle",
    ) -> CallToolResult | InputRequiredResult:
        """Call a tool.

        ``input_required="handle"`` (default) answers a 2026 server's input requests through
        the callbacks and retries until the tool completes; ``"return"`` hands the first
        :class:`InputRequiredResult` back instead (continue with :meth:`resume_tool`).

        A -32042 answer (2025-11-25) raises :class:`UrlElicitationRequiredError`, or, with
        ``complete_url_elicitations`` (default: the client's ``auto_url_elicitation``), runs the
        URL callback for each elicitation, waits for their completion and retries once per new URL.
        """
        params: JSON = {"name": name, "arguments": arguments or {}}
        auto = self.auto_url_elicitation if complete_url_elicitations is None else complete_url_elicitations
        seen: set[tuple[str, str]] = set()
        while True:
            try:
                outcome = await self._mrtr(
                    "tools/call", params, timeout=timeout, on_progress=progress_callback, input_required=input_required
                )
            except MCPError as exc:
                if exc.code != URL_ELICITATION_REQUIRED:
                    raise
                required = UrlElicitationRequiredError.from_mcp_error(exc, self.origin)
                if not auto:
                    raise required from None
                await self._complete_url_elicitations(required, seen)
                continue
            return outcome if isinstance(outcome, InputRequiredResult) else CallToolResult.model_validate(outcome)

    async def _complete_url_elicitations(
        self, required: UrlElicitationRequiredError, seen: set[tuple[str, str]]
    ) -> None:
        keys = {(e.elicitation_id, e.url) for e in required.elicitations}
        if not keys or keys & seen or self.elicitation.callback is None:
            raise required  # nothing new to do: retrying would loop
        seen |= keys
        required.elicitations = [self.elicitation.with_completion(r) for r in required.elicitations]
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

    @overload
    async def read_resource(self, uri: str, *, input_required: Literal["handle"] = ...) -> ReadResourceResult: ...

    @overload
    async def read_resource(
        self, uri: str, *, input_required: InputRequiredHandling
    ) -> ReadResourceResult | InputRequiredResult: ...

    async def read_resource(
        self, uri: str, *, input_required: InputRequiredHandling = "handle"
    ) -> ReadResourceResult | InputRequiredResult:
        outcome = await self._mrtr("resources/read", {"uri": uri}, input_required=input_required)
        return outcome if isinstance(outcome, InputRequiredResult) else ReadResourceResult.model_validate(outcome)

    async def subscribe_resource(self, uri: str) -> None:
        await self.request("resources/subscribe", {"uri": uri})

    async def unsubscribe_resource(self, uri: str) -> None:
        await self.request("resources/unsubscribe", {"uri": uri})

    async def list_prompts(self, cursor: str | None = None) -> ListPromptsResult:
        return await self._typed(ListPromptsResult, "prompts/list", {"cursor": cursor} if cursor else None)

    @overload
    async def get_prompt(
        self, name: str, arguments: dict[str, str] | None = ..., *, input_required: Literal["handle"] = ...
    ) -> GetPromptResult: ...

    @overload
    async def get_prompt(
        self, name: str, arguments: dict[str, str] | None = ..., *, input_required: InputRequiredHandling
    ) -> GetPromptResult | InputRequiredResult: ...

    async def get_prompt(
        self, name: str, arguments: dict[str, str] | None = None, *, input_required: InputRequiredHandling = "handle"
    ) -> GetPromptResult | InputRequiredResult:
        params: JSON = {"name": name}
        if arguments:
            params["arguments"] = arguments
        outcome = await self._mrtr("prompts/get", params, input_required=input_required)
        return outcome if isinstance(outcome, InputRequiredResult) else GetPromptResult.model_validate(outcome)

    async def complete(self, ref: JSON, argument: JSON, context: JSON | None = None) -> CompleteResult:
        params: JSON = {"ref": ref, "argument": argument}
        if context:
            params["context"] = context
        return await self._typed(CompleteResult, "completion/complete", params)

    async def set_logging_level(self, level: str) -> None:
        """Legacy: ``logging/setLevel``. Modern: the level travels in every request's envelope."""
        if self.era is Era.MODERN:
            self.log_level = level
            return
        await self.request("logging/setLevel", {"level": level})

    async def send_roots_list_changed(self) -> None:
        if self.era is Era.MODERN:
            return  # gone in 2026-07-28: servers ask for roots with each request that needs them
        await self.peer.notify("notifications/roots/list_changed")

    # ------------------------------------------------------------------ multi-round trips (2026)

    async def _mrtr(
        self,
        method: str,
        params: JSON,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
        input_required: InputRequiredHandling = "handle",
        input_responses: JSON | None = None,
        request_state: str | None = None,
    ) -> JSON | InputRequiredResult:
        """Send ``method`` until it completes: each ``input_required`` round is answered in full
        and the request sent again (a new request) with the responses and the state, untouched."""
        if input_required not in ("handle", "return"):
            raise ValueError(f"input_required must be 'handle' or 'return', not {input_required!r}")
        responses, state = input_responses, request_state
        rounds = idle = 0
        while True:
            result = await self.request(
                method, retry_params(params, responses, state), timeout=timeout, on_progress=on_progress
            )
            if result_type(result) != RESULT_INPUT_REQUIRED:
                return result
            if method not in MRTR_METHODS:
                raise InvalidResultType(f"{method} may not answer input_required")
            pending = InputRequiredResult.from_wire(method, params, result)
            if input_required == "return":
                return pending
            rounds += 1
            if rounds > self.max_input_rounds:
                raise TooManyInputRounds(
                    f"{method} still needs input after {self.max_input_rounds} rounds (max_input_rounds); giving up"
                )
            if pending.input_requests:
                responses = await self.answer_input_requests(pending)
                idle = 0
            else:  # state only: the server is working on something; do not hammer it
                responses = None
                await anyio.sleep(min(self.input_backoff * (2**idle), _MAX_BACKOFF))
                idle += 1
            state = pending.request_state

    async def answer_input_requests(self, pending: InputRequiredResult) -> JSON:
        """Answer every input request of ``pending`` through this client's callbacks.

        Everything is checked before anyone is asked: a request for a capability this client
        never declared is a protocol violation (:class:`InputRequestViolation`), not a question.
        """
        for key, item in pending.input_requests.items():
            self._check_input_request(key, item)
        answers: JSON = {}
        for key, item in pending.input_requests.items():
            answers[key] = await self._answer_input_request(key, item)
        return answers

    def _check_input_request(self, key: str, item: InputRequest) -> None:
        if item.method == ELICIT:
            if self.elicitation.callback is None:
                raise InputRequestViolation(f"input request {key!r}: elicitation, which this client did not declare")
            mode = item.params.get("mode", "form")
            if mode not in self.elicitation.modes:
                raise InputRequestViolation(f"input request {key!r}: elicitation mode {mode!r} was not declared")
        elif item.method == SAMPLE:
            if self.sampling_callback is None:
                raise InputRequestViolation(f"input request {key!r}: sampling, which this client did not declare")
        elif item.method == LIST_ROOTS:
            if self.roots is None:
                raise InputRequestViolation(f"input request {key!r}: roots, which this client did not declare")
        else:
            raise InputRequestViolation(f"input request {key!r}: unknown method {item.method!r}")

    async def _answer_input_request(self, key: str, item: InputRequest) -> JSON:
        if item.method == ELICIT:
            version = self.protocol_version or self.modern_version
            try:
                return await self.elicitation.answer(item.params, version=version, origin=self.origin)
            except MCPError as exc:
                if exc.code == INVALID_PARAMS:
                    raise InputRequestViolation(f"input request {key!r}: {exc.message}") from None
                raise MultiRoundTripError(f"input request {key!r}: {exc.message}") from exc
        if item.method == SAMPLE:
            assert self.sampling_callback is not None
            return await self.sampling_callback(item.params)
        roots = await self.roots() if callable(self.roots) else list(self.roots or [])
        return {"roots": roots}

    async def retry(
        self,
        method: str,
        params: JSON,
        input_responses: JSON | None = None,
        request_state: str | None = None,
        *,
        input_required: InputRequiredHandling = "handle",
        timeout: float | None = None,
    ) -> JSON | InputRequiredResult:
        """Continue a multi-round-trip request, possibly started by another process: send
        ``method`` with its original ``params`` plus ``input_responses`` and ``request_state``
        (exactly as the server sent it). Raw result dict, or an :class:`InputRequiredResult`."""
        return await self._mrtr(
            method,
            params,
            timeout=timeout,
            input_required=input_required,
            input_responses=input_responses,
            request_state=request_state,
        )

    async def resume(
        self,
        pending: InputRequiredResult,
        input_responses: JSON | None = None,
        *,
        input_required: InputRequiredHandling = "handle",
        timeout: float | None = None,
    ) -> JSON | InputRequiredResult:
        """:meth:`retry` for a stored :class:`InputRequiredResult`; without ``input_responses``
        the client answers its input requests through its own callbacks first."""
        if input_responses is None and pending.input_requests:
            input_responses = await self.answer_input_requests(pending)
        return await self.retry(
            pending.method,
            pending.params,
            input_responses,
            pending.request_state,
            input_required=input_required,
            timeout=timeout,
        )

    @overload
    async def resume_tool(
        self,
        name: str,
        arguments: JSON | None,
        input_responses: JSON | None,
        request_state: str | None,
        *,
        input_required: Literal["handle"] = ...,
        timeout: float | None = ...,
    ) -> CallToolResult: ...

    @overload
    async def resume_tool(
        self,
        name: str,
        arguments: JSON | None,
        input_responses: JSON | None,
        request_state: str | None,
        *,
        input_required: InputRequiredHandling,
        timeout: float | None = ...,
    ) -> CallToolResult | InputRequiredResult: ...

    async def resume_tool(
        self,
        name: str,
        arguments: JSON | None,
        input_responses: JSON | None,
        request_state: str | None,
        *,
        input_required: InputRequiredHandling = "handle",
        timeout: float | None = None,
    ) -> CallToolResult | InputRequiredResult:
        """Continue a tool call that came back ``input_required`` (see ``call_tool(input_required="return")``)."""
        params: JSON = {"name": name, "arguments": arguments or {}}
        outcome = await self.retry(
            "tools/call", params, input_responses, request_state, input_required=input_required, timeout=timeout
        )
        return outcome if isinstance(outcome, InputRequiredResult) else CallToolResult.model_validate(outcome)

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
        return declares(self.server_capabilities, capability)
