"""The :class:`Client`: the typed API over one connection to one server, on either protocol era.

Below this class: :mod:`~elicitkit.client.connect` (transport, peer, era selection, raw
requests), :mod:`~elicitkit.client.rounds` (the 2026 multi-round-trip driver) and
:mod:`~elicitkit.client.responder` (answering what the server asks). Results become the typed
models of :mod:`elicitkit.client.results` here, at the edge.
"""

from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager, AbstractContextManager, AsyncExitStack
from typing import Any, Literal, TypeVar, overload

from pydantic import BaseModel

from elicitkit.client import tasks
from elicitkit.client.connect import ClientMode, Connection, transport_for
from elicitkit.client.listening import Changes, Listening, wanted_filter
from elicitkit.client.responder import (
    ElicitationCallback,
    ElicitationResponder,
    Responder,
    RootsCallback,
    SamplingCallback,
    UrlElicitationRequiredError,
)
from elicitkit.client.results import (
    CallToolResult,
    CompleteResult,
    GetPromptResult,
    ListPromptsResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListToolsResult,
    ReadResourceResult,
)
from elicitkit.client.rounds import (
    InputRequiredHandling,
    InputRequiredResult,
    InvalidResultType,
    drive,
    result_type,
    retry_params,
)
from elicitkit.client.rounds import (
    complete_url_elicitations as finish_url_elicitations,
)
from elicitkit.elicitation.requests import Origin
from elicitkit.protocol.capabilities import declares
from elicitkit.protocol.errors import URL_ELICITATION_REQUIRED, LocalProtocolError, MCPError
from elicitkit.protocol.handshake import ClientHandshake
from elicitkit.protocol.jsonrpc import DEFAULT_MAX_MESSAGE_BYTES, JSON, Notification
from elicitkit.protocol.modern import RESERVED_PARAMS, RESULT_INPUT_REQUIRED
from elicitkit.protocol.versions import LATEST_LEGACY, Era
from elicitkit.runtime.peer import Peer, ProgressCallback
from elicitkit.transports.base import ClientTransport
from elicitkit.transports.http.auth import HTTPAuth

logger = logging.getLogger("elicitkit.client")

M = TypeVar("M", bound=BaseModel)
MaybeAwaitable = Awaitable[Any] | Any

LoggingCallback = Callable[[JSON], MaybeAwaitable]
NotificationCallback = Callable[[str, JSON], MaybeAwaitable]

DEFAULT_CLIENT_INFO = {"name": "elicitkit", "version": "0.1.0"}
DEFAULT_MODE: ClientMode = "legacy"

__all__ = ["Client", "ClientMode", "InputRequiredHandling", "transport_for"]


async def _maybe_await(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


class Client:
    """An MCP client. ``async with Client(target) as client: await client.call_tool(...)``.

    ``target`` is a server object (in-memory), a command line (stdio: a string or argv list) or
    an ``http(s)://`` URL (Streamable HTTP). ``timeout`` bounds each request in seconds.

    ``mode`` picks the protocol era: ``"legacy"`` (the ``initialize`` handshake), ``"modern"``
    (2026-07-28: no handshake, an envelope in every request; a server that does not answer
    ``server/discover`` fails the connection with :class:`~elicitkit.client.connect.ModernNotSupported`)
    or ``"auto"`` (probe with ``server/discover``: a 2026 answer means modern, anything else,
    an HTTP 4xx included, falls back to the handshake at once). ``protocol_version`` is the
    version offered: a handshake version for the legacy era, or a 2026 version for the modern one.

    The default is ``"legacy"``, chosen by measurement (docs/modern.md, client section): servers built
    on the official ``mcp`` SDK answer ``server/discover``, so ``auto`` speaks 2026 to them, and
    then every tool of theirs that asks (``ctx.elicit``, ``elicit_form``, ``elicit_url``, a
    ping) fails: 10 of 10 such calls over stdio and HTTP, against none with the handshake. Pass
    ``mode="auto"`` for servers known to speak 2026 completely.

    A 2026 ``tools/call``, ``prompts/get`` or ``resources/read`` may come back
    ``input_required``. There are two ways to go on, and only two:

    * automatically (the default, ``input_required="handle"``): the client answers every input
      request through the same callbacks it uses for a legacy server's requests and sends the
      request again, at most ``max_input_rounds`` times;
    * by hand: ``input_required="return"`` hands back the :class:`InputRequiredResult` (which
      can be stored with ``to_json`` and read back with ``from_json``, in any process); then
      :meth:`resume` it, with your own ``input_responses`` or with this client's answers.

    A server or URL that cannot be reached raises
    :class:`~elicitkit.client.connect.ServerUnreachable` saying what to try.

    ``auth`` authorizes requests to an ``http(s)://`` server, on every era: an
    ``elicitkit.auth`` object (``OAuth()``, ``ClientCredentials(...)``, ``StaticToken(...)``,
    ...) or your own :class:`~elicitkit.transports.http.auth.HTTPAuth`. A flow that fails
    raises an :class:`~elicitkit.errors.AuthError` saying what was wrong (docs/auth.md).
    """

    def __init__(
        self,
        target: Any,
        *,
        mode: ClientMode = DEFAULT_MODE,
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
        auth: HTTPAuth | None = None,
    ) -> None:
        options = dict(transport_options or {})
        if auth is not None:
            if not (isinstance(target, str) and target.startswith(("http://", "https://"))):
                raise TypeError("auth= applies to http(s):// servers only; stdio and in-memory servers take no auth")
            options["auth"] = auth
        self.elicitation = ElicitationResponder(elicitation_callback, tuple(elicitation_modes))
        self.responder = Responder(self.elicitation, sampling_callback, roots)
        self.client_info = client_info or dict(DEFAULT_CLIENT_INFO)
        self.connection = Connection(
            transport_for(target, **options),
            mode=mode,
            protocol_version=protocol_version,
            client_info=self.client_info,
            capabilities=self.responder.capabilities,
            on_request=self.responder.on_request,
            on_notification=self._on_notification,
            timeout=timeout,
            discover_timeout=discover_timeout,
            max_message_bytes=max_message_bytes,
            trace=trace,
        )
        self.auto_url_elicitation = auto_url_elicitation
        self.url_elicitation_timeout = url_elicitation_timeout
        # A person signing in (OAuth consent in the browser) must not have the request that
        # needed the sign-in time out underneath them: auth objects that ask a person take this.
        pause = getattr(auth, "pause_during_consent", None)
        if callable(pause):
            pause(self.timeouts_paused)
        self.logging_callback = logging_callback
        self.notification_callback = notification_callback
        self.timeout = timeout
        self.max_input_rounds = max_input_rounds
        self.input_backoff = input_backoff
        self._stack: AsyncExitStack | None = None
        self._origin: tuple[JSON, Origin] | None = None  # (the server info it was made from, it)
        self._listening = Listening()
        self.responder.asked = self

    # ------------------------------------------------------------------ lifecycle

    async def __aenter__(self) -> Client:
        stack = AsyncExitStack()
        try:
            await stack.enter_async_context(self.connection.open())
        except BaseException:
            await stack.aclose()
            raise
        self._stack = stack
        return self

    async def __aexit__(self, *exc: object) -> None:
        stack, self._stack = self._stack, None
        if stack is not None:
            await stack.aclose()

    # ------------------------------------------------------------------ what each side said

    @property
    def mode(self) -> ClientMode:
        return self.connection.mode

    @property
    def era(self) -> Era | None:
        return self.connection.era

    @property
    def peer(self) -> Peer:
        return self.connection.peer

    @property
    def transport(self) -> ClientTransport:
        return self.connection.transport

    @property
    def handshake(self) -> ClientHandshake:
        return self.connection.handshake

    @property
    def discover_result(self) -> JSON | None:
        return self.connection.discover_result

    @property
    def protocol_version(self) -> str | None:
        return self.connection.protocol_version

    @property
    def server_info(self) -> JSON:
        return self.connection.server_info

    @property
    def server_capabilities(self) -> JSON:
        return self.connection.server_capabilities

    @property
    def instructions(self) -> str | None:
        return self.connection.instructions

    def server_declares(self, capability: str) -> bool:
        return declares(self.server_capabilities, capability)

    def capabilities(self) -> JSON:
        """What this client declares, derived from the callbacks it was given."""
        return self.responder.capabilities(self.connection.declared_version)

    def modern_capabilities(self) -> JSON:
        """The same declaration in the 2026 shape (no ``listChanged`` for roots: that notification is gone)."""
        return self.responder.capabilities(self.connection.modern_version)

    @property
    def asked_version(self) -> str:
        """The version a legacy server's own requests are read in."""
        return self.handshake.negotiated_version or self.handshake.protocol_version

    def timeouts_paused(self) -> AbstractContextManager[None]:
        """Our own requests' timeouts stand still inside this block (a person is answering)."""
        return self.peer.timeouts_paused()

    @property
    def origin(self) -> Origin:
        """Who this client is talking to, as shown to a person asked a question (made once per
        server info: every question of a connection asks for it)."""
        info = self.server_info
        made = self._origin
        if made is not None and made[0] is info:
            return made[1]
        origin = Origin(
            name=str(info.get("name", "unknown server")),
            version=info.get("version"),
            title=info.get("title"),
            location=self.transport.describe(),
        )
        self._origin = (info, origin)
        return origin

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
        """Any request, raw: the result dict, or :class:`MCPError` raised (``input_required`` comes back as is)."""
        return await self.connection.request(method, params, timeout=timeout, on_progress=on_progress)

    async def _typed(self, model: type[M], method: str, params: JSON | None = None, **kw: Any) -> M:
        result = await self.connection.request(method, params, **kw)
        if result_type(result) == RESULT_INPUT_REQUIRED:
            raise InvalidResultType(f"{method} may not answer input_required")
        return model.model_validate(result)

    async def ping(self) -> None:
        await self.request("ping")

    async def list_tools(self, cursor: str | None = None) -> ListToolsResult:
        """List tools. In the modern era tools whose ``x-mcp-header`` annotations break the rules
        are dropped (with a warning), and the others' header parameters remembered for calls."""
        result = await self._typed(ListToolsResult, "tools/list", {"cursor": cursor} if cursor else None)
        result.tools = self.connection.tools_listed(result.tools, first_page=cursor is None)
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
        task: bool = ...,
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
        task: bool = ...,
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
        task: bool = False,
    ) -> CallToolResult | InputRequiredResult:
        """Call a tool.

        ``task=True`` (2026-07-28): declare the Tasks extension; if the server answers with a
        task, poll it at its interval, answer its questions with this client's callbacks and
        return its result (see :meth:`start_task` for the hands-off form).

        ``input_required="handle"`` (default) answers a 2026 server's input requests through
        the callbacks and retries until the tool completes; ``"return"`` hands the first
        :class:`InputRequiredResult` back instead (continue with :meth:`resume`).

        A -32042 answer (2025-11-25) raises :class:`UrlElicitationRequiredError`, or, with
        ``complete_url_elicitations`` (default: the client's ``auto_url_elicitation``), runs the
        URL callback for each elicitation, waits for their completion and retries once per new URL.
        """
        if task and self.connection.has_tasks:
            return CallToolResult.model_validate(await self._call_as_task(name, arguments, timeout))
        params: JSON = {"name": name, "arguments": arguments or {}}
        auto = self.auto_url_elicitation if complete_url_elicitations is None else complete_url_elicitations
        seen: set[tuple[str, str]] | None = None  # URL elicitations done (made on the first -32042)
        while True:
            try:
                outcome = await self._rounds(
                    "tools/call", params, timeout=timeout, on_progress=progress_callback, input_required=input_required
                )
            except MCPError as exc:
                if exc.code != URL_ELICITATION_REQUIRED:
                    raise
                required = UrlElicitationRequiredError.from_mcp_error(exc, self.origin)
                if not auto:
                    raise required from None
                if seen is None:
                    seen = set()
                await finish_url_elicitations(required, seen, self.elicitation, self.url_elicitation_timeout)
                continue
            return outcome if isinstance(outcome, InputRequiredResult) else CallToolResult.model_validate(outcome)

    # -- tasks (2026-07-28, Tasks extension) -------------------------------------------

    def _need_tasks(self, what: str) -> None:
        if not self.connection.has_tasks:
            raise LocalProtocolError(
                f"{what}: tasks exist on 2026-07-28 only, and this client speaks {self.protocol_version}"
                " (the initialize handshake). Connect with Client(target, mode='auto') or mode='modern'"
                " to a server that speaks 2026-07-28 (elicitkit call: --task does this)."
            )

    async def _call_as_task(self, name: str, arguments: JSON | None, timeout: float | None) -> JSON:
        started = await tasks.start_task(self, name, arguments, timeout=timeout)
        if isinstance(started, tasks.TaskHandle):
            return await tasks.follow_task(self, started.task_id)
        return started

    async def start_task(self, name: str, arguments: JSON | None = None) -> tasks.TaskHandle | CallToolResult:
        """Hands-off: call ``name`` as a task and return its handle at once (or the result, if
        the server answered without a task). Look, answer or cancel later, from any client.

        Tasks exist on 2026-07-28 only: on a handshake connection (the default ``mode="legacy"``)
        this raises :class:`~elicitkit.errors.LocalProtocolError` before anything is sent, rather
        than run the tool as a plain call (asking at once, doing its work) where a handle was wanted.
        """
        self._need_tasks("start_task")
        started = await tasks.start_task(self, name, arguments)
        return started if isinstance(started, tasks.TaskHandle) else CallToolResult.model_validate(started)

    async def follow_task(self, task_id: str) -> CallToolResult:
        """Poll a task to its end, answering its questions with this client's callbacks."""
        self._need_tasks("follow_task")
        return CallToolResult.model_validate(await tasks.follow_task(self, task_id))

    async def get_task(self, task_id: str) -> JSON:
        """``tasks/get``: the task as it stands."""
        self._need_tasks("get_task")
        return await tasks.get_task(self, task_id)

    async def answer_task(self, task_id: str, responses: JSON) -> None:
        """``tasks/update``: answers by input request key."""
        self._need_tasks("answer_task")
        await tasks.answer_task(self, task_id, responses)

    async def cancel_task(self, task_id: str) -> None:
        """``tasks/cancel``."""
        self._need_tasks("cancel_task")
        await tasks.cancel_task(self, task_id)

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
        outcome = await self._rounds("resources/read", {"uri": uri}, input_required=input_required)
        return outcome if isinstance(outcome, InputRequiredResult) else ReadResourceResult.model_validate(outcome)

    def listen(
        self,
        *,
        tools: bool = False,
        prompts: bool = False,
        resources: bool = False,
        resource_uris: Sequence[str] = (),
        timeout: float | None = None,
    ) -> AbstractAsyncContextManager[Changes]:
        """Follow the server's changes, on any era: list changes of ``tools``, ``prompts`` and
        ``resources``, and updates of the resources at ``resource_uris``::

            async with client.listen(tools=True) as changes:
                async for change in changes:      # change.kind == "tools"
                    tools = await client.list_tools()

        On 2026-07-28 this is a ``subscriptions/listen`` stream, closed when the block is left; on
        2025 the session's own notifications, with ``resources/subscribe`` for the URIs (and
        ``resources/unsubscribe`` after). ``changes.agreed`` says what the server will send (a kind
        it cannot send is left out, not an error). ``timeout``: how long to wait for the server to
        acknowledge (default: the client's). Changes also reach ``notification_callback``.
        """
        wanted = wanted_filter(tools=tools, prompts=prompts, resources=resources, resource_uris=resource_uris)
        return self._listening.open(self, wanted, self.timeout if timeout is None else timeout)

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
        outcome = await self._rounds("prompts/get", params, input_required=input_required)
        return outcome if isinstance(outcome, InputRequiredResult) else GetPromptResult.model_validate(outcome)

    async def complete(self, ref: JSON, argument: JSON, context: JSON | None = None) -> CompleteResult:
        params: JSON = {"ref": ref, "argument": argument}
        if context:
            params["context"] = context
        return await self._typed(CompleteResult, "completion/complete", params)

    async def set_logging_level(self, level: str) -> None:
        """Legacy: ``logging/setLevel``. Modern: the level travels in every request's envelope."""
        await self.connection.set_log_level(level)

    async def send_roots_list_changed(self) -> None:
        await self.connection.roots_changed()  # (gone in 2026-07-28: nothing is sent)

    # ------------------------------------------------------------------ multi-round trips (2026)

    async def _rounds(
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
        if input_required not in ("handle", "return"):
            raise ValueError(f"input_required must be 'handle' or 'return', not {input_required!r}")
        connection = self.connection
        # The first round inline: a call that needs no input costs no more than a plain request.
        # A 2026 request's params are copied as the envelope goes in (wrap): a first round with
        # nothing of a round's own to drop or add is sent as given, not copied twice.
        first = params
        if (
            input_responses is not None
            or request_state is not None
            or connection.era is not Era.MODERN
            or not RESERVED_PARAMS.isdisjoint(params)
        ):
            first = retry_params(params, input_responses, request_state)
        result = await connection.request(method, first, timeout=timeout, on_progress=on_progress)
        if result_type(result) == RESULT_INPUT_REQUIRED:
            # The later rounds go straight to the connection's request (no wrapper coroutine: a
            # response resumes every frame between it and the waiting future).
            send = functools.partial(connection.request, timeout=timeout, on_progress=on_progress)
            return await drive(
                send,
                self.answer_input_requests,
                method,
                params,
                first=result,
                input_required=input_required,
                max_rounds=self.max_input_rounds,
                backoff=self.input_backoff,
            )
        return result

    async def answer_input_requests(self, pending: InputRequiredResult) -> JSON:
        """This client's answers to every input request of ``pending``, through its callbacks.

        Everything is checked before anyone is asked: a request for a capability this client
        never declared is a protocol violation (:class:`InputRequestViolation`), not a question.
        """
        version = self.protocol_version or self.connection.modern_version
        return await self.responder.answer_round(pending, version=version, origin=self.origin)

    async def resume(
        self,
        pending: InputRequiredResult,
        input_responses: JSON | None = None,
        *,
        input_required: InputRequiredHandling = "handle",
        timeout: float | None = None,
    ) -> JSON | InputRequiredResult:
        """Continue a request that came back ``input_required``: the one way to do it by hand.

        Sends ``pending.method`` with its original params, ``input_responses`` and the server's
        ``requestState`` untouched. Without ``input_responses`` this client answers the input
        requests through its own callbacks first. ``pending`` may come from another client or
        process (``InputRequiredResult.from_json``). Raw result dict, or the next round.
        """
        if input_responses is None and pending.input_requests:
            input_responses = await self.answer_input_requests(pending)
        return await self._rounds(
            pending.method,
            pending.params,
            timeout=timeout,
            input_required=input_required,
            input_responses=input_responses,
            request_state=pending.request_state,
        )

    # Kept for existing callers: both are :meth:`resume` of a round rebuilt from its parts.

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
        """:meth:`resume` from the round's parts (prefer :meth:`resume` with a stored result)."""
        pending = InputRequiredResult(method=method, params=params, request_state=request_state)
        return await self.resume(pending, input_responses, input_required=input_required, timeout=timeout)

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
        """:meth:`retry` of a ``tools/call``, typed (prefer :meth:`resume`)."""
        params: JSON = {"name": name, "arguments": arguments or {}}
        outcome = await self.retry(
            "tools/call", params, input_responses, request_state, input_required=input_required, timeout=timeout
        )
        return outcome if isinstance(outcome, InputRequiredResult) else CallToolResult.model_validate(outcome)

    # ------------------------------------------------------------------ server -> client

    async def _on_notification(self, notification: Notification) -> None:
        params = notification.params or {}
        if notification.method == "notifications/elicitation/complete":
            elicitation_id = params.get("elicitationId")
            if isinstance(elicitation_id, str):
                self.elicitation.completed(elicitation_id)
        if self._listening:
            self._listening.deliver(notification.method, params)
        if notification.method == "notifications/message" and self.logging_callback is not None:
            await _maybe_await(self.logging_callback(params))
        if self.notification_callback is not None:
            await _maybe_await(self.notification_callback(notification.method, params))
