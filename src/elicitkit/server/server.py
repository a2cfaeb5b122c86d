"""The decorator framework: :class:`Server` with ``@tool``, ``@resource``, ``@prompt``.

It registers MCP method handlers (:mod:`elicitkit.server.methods`) on the low-level server
and turns plain Python functions into tools, resources and prompts. One instance can serve
any number of connections, over any transport, at once.
"""

from __future__ import annotations

import functools
import logging
import os
import sys
import weakref
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import anyio

from elicitkit.backplane.base import Backplane
from elicitkit.elicitation.results import ElicitationResult
from elicitkit.protocol import tasks as wire_tasks
from elicitkit.protocol.errors import RESOURCE_NOT_FOUND, MCPError
from elicitkit.protocol.handshake import Phase
from elicitkit.protocol.jsonrpc import JSON
from elicitkit.protocol.modern import InvalidToolHeaders, tool_header_params
from elicitkit.protocol.subscriptions import LISTEN
from elicitkit.server import calling, methods
from elicitkit.server.context import Context
from elicitkit.server.listen import Listeners, listen
from elicitkit.server.lowlevel import LowLevelServer
from elicitkit.server.prompts import Prompt, make_prompt
from elicitkit.server.resolvers import Resolve, build_graph
from elicitkit.server.resources import Resource, ResourceTemplate, make_resource
from elicitkit.server.rounds.sealing import AeadStateCodec, SpentStates, StateCodec, default_codec
from elicitkit.server.scope import RequestScope, current_scope
from elicitkit.server.session import ServerSession
from elicitkit.server.tasks.serving import TaskMode, TaskOptions, TaskSupport
from elicitkit.server.tasks.store import TaskStore
from elicitkit.server.tools import Tool, make_tool

if TYPE_CHECKING:
    from elicitkit.server.auth.connections import Connections
    from elicitkit.server.auth.gate import ResourceServer

logger = logging.getLogger("elicitkit.server")

F = TypeVar("F", bound=Callable[..., Any])
CompletionFn = Callable[..., Any]


class Server(LowLevelServer):
    """An MCP server built from decorated functions.

    >>> server = Server("weather")
    >>> @server.tool()
    ... async def forecast(city: str, days: int = 3) -> str:
    ...     return f"sunny in {city} for {days} days"
    """

    def __init__(
        self,
        name: str,
        version: str = "0.1.0",
        *,
        title: str | None = None,
        instructions: str | None = None,
        page_size: int = 100,
        tool_timeout: float | None = None,
        state_codec: StateCodec | None = None,
        max_questions: int = LowLevelServer.max_questions,
        principal: Callable[[Context], str | None] | None = None,
        task_store: TaskStore | None = None,
        backplane: Backplane | None = None,
        auth: ResourceServer | None = None,
        connections: Connections | None = None,
    ) -> None:
        """``max_questions``: the most questions one request may ask (each re-ask counts); past it
        the call ends with an error naming the cap. ``principal``: who a request acts for (say,
        the user behind its token); 2026 ``requestState`` is bound to it, so a state sealed for
        one principal is refused for another. ``task_store``: where tasks (``@tool(task=...)``)
        live; default a SQLite file at ``$ELICITKIT_TASK_DB`` or under the user's state directory,
        opened only when the first task is made (pass ``InMemoryTaskStore()`` for tests).
        ``backplane``: what the instances of a fleet share over Streamable HTTP (sessions, their
        streams, broadcasts; see ``docs/fleet.md``): ``RedisBackplane.from_url(url)``. Default:
        one from ``$ELICITKIT_REDIS_URL`` when HTTP serving starts, else none (one process).
        ``auth``: a :class:`~elicitkit.server.auth.ResourceServer`: every HTTP request then needs
        a bearer token, and its subject (and client) is the principal of everything the request
        makes (docs/auth.md). Stdio stays unauthenticated. ``connections``: third-party
        providers tools sign their principal in to (``await ctx.authorize("github")``,
        :class:`~elicitkit.server.auth.connections.Connections`)."""
        super().__init__(name, version, title=title, instructions=instructions)
        self.auth = auth
        self.connections = connections
        if max_questions < 1:
            raise ValueError("max_questions must be at least 1")
        self.page_size = page_size
        self.tool_timeout = tool_timeout
        self.max_questions = max_questions
        # What a 2026 round asks for its principal (None: rounds are bound to no principal).
        self.principal_hook: Callable[[RequestScope], str | None] | None = None
        self.principal = principal
        # Seals 2026 requestState. Default: keys from ELICITKIT_STATE_KEYS (shared by processes), else fresh.
        self.state_codec: StateCodec = state_codec if state_codec is not None else default_codec()
        self.tools: dict[str, Tool] = {}
        self.resources: dict[str, Resource] = {}
        self.templates: dict[str, ResourceTemplate] = {}
        self.prompts: dict[str, Prompt] = {}
        self.completion_fn: CompletionFn | None = None
        self._sessions: weakref.WeakSet[ServerSession] = weakref.WeakSet()
        self.tasks = TaskSupport(self, task_store)
        self.listeners = Listeners()  # open subscriptions/listen streams (2026)
        self.backplane: Backplane | None = None
        if backplane is not None:
            self.use_backplane(backplane)
        handlers = {
            "tools/list": methods.list_tools,
            "tools/call": methods.call_tool,
            "resources/list": methods.list_resources,
            "resources/templates/list": methods.list_templates,
            "resources/read": methods.read_resource_method,
            "resources/subscribe": methods.subscribe,
            "resources/unsubscribe": methods.unsubscribe,
            "prompts/list": methods.list_prompts,
            "prompts/get": methods.get_prompt,
            "completion/complete": methods.complete,
            LISTEN: listen,
        }
        for method, handler in handlers.items():
            # A partial, not a method of ours: no Python frame between the session and the handler.
            self.set_request_handler(method, functools.partial(handler, self))
        for method in ("tasks/get", "tasks/update", "tasks/cancel", "tasks/result", "tasks/list"):
            self.set_request_handler(method, self.tasks.handle)

    def capabilities(self) -> dict[str, Any]:
        return {
            "tools": {"listChanged": True},
            "resources": {"subscribe": True, "listChanged": True},
            "prompts": {"listChanged": True},
            "logging": {},
            "completions": {},
            **self.extra_capabilities,
        }

    def modern_capabilities(self) -> dict[str, Any]:
        """2026 capabilities, plus the Tasks extension once a tool may run as a task."""
        caps = super().modern_capabilities()
        # subscriptions/listen carries list changes (and resource updates) to 2026 clients
        for name in ("tools", "prompts", "resources"):
            if isinstance(caps.get(name), dict):
                caps[name] = {**caps[name], "listChanged": True}
        if isinstance(caps.get("resources"), dict):
            caps["resources"]["subscribe"] = True
        if self.tasks.enabled:
            caps["extensions"] = {**caps.get("extensions", {}), **wire_tasks.server_extensions()}
        return caps

    def task_call(self, name: str, arguments: dict[str, Any], scope: RequestScope) -> Coroutine[Any, Any, JSON] | None:
        """The body of one run of task tool ``name`` (None: no such tool). The gateway, whose tools
        are its backends', gives its own; the runner drives either by the same replay contract."""
        tool = self.tools.get(name)
        return calling.run_tool(self, tool, arguments, scope) if tool is not None else None

    def create_detached_session(self) -> ServerSession:
        """A session with no client behind it, for running task bodies (nothing is sent on it)."""
        return super().create_session(_drop, stateless=True)

    def create_session(self, send: Any, **kwargs: Any) -> ServerSession:
        session = super().create_session(send, **kwargs)
        self._sessions.add(session)
        return session

    @property
    def principal(self) -> Callable[[Context], str | None] | None:
        """Who a request acts for; 2026 ``requestState`` is bound to it (see ``__init__``)."""
        return self._principal

    @principal.setter
    def principal(self, hook: Callable[[Context], str | None] | None) -> None:
        self._principal = hook
        self.principal_hook = self.principal_of if hook is not None else None

    def principal_of(self, scope: RequestScope) -> str | None:
        """The principal a 2026 request's round is bound to (None without a ``principal`` hook)."""
        return self.principal(self.context_for(scope)) if self.principal is not None else None

    def context_for(self, scope: RequestScope) -> Context:
        """The :class:`Context` handed to user functions (subclasses may return a richer one)."""
        return Context(scope, self)

    # ------------------------------------------------------------------ decorators

    def tool(
        self,
        name: str | None = None,
        *,
        title: str | None = None,
        description: str | None = None,
        annotations: dict[str, Any] | None = None,
        meta: dict[str, Any] | None = None,
        structured_output: bool | None = None,
        timeout: float | None = None,
        thread: bool = False,
        task: TaskMode = "never",
        task_ttl_ms: int | Literal["default"] | None = "default",
        task_poll_interval_ms: int | Literal["default"] | None = "default",
        ask_before_task: bool = False,
        task_rerun_on_restart: bool = False,
    ) -> Callable[[F], F]:
        """Register a function as a tool. Sync functions run inline unless ``thread=True``.

        ``task``: whether a 2026-07-28 call may run as a task (Tasks extension): ``"never"``;
        ``"optional"``, a task when the request declares the extension, an ordinary call
        otherwise; ``"required"``, an error (-32021) for a request that does not declare it.
        ``task_ttl_ms`` / ``task_poll_interval_ms``: how long the task is kept from its creation
        (None: unlimited) and how often a client should poll it. ``ask_before_task``: the body
        runs in the call itself, asking through ordinary rounds, until it awaits
        ``ctx.run_as_task()``; the task then carries on from there with those answers.
        ``task_rerun_on_restart``: a task whose server died while it ran runs again from its
        recorded answers (only for tools whose code after the last question is idempotent);
        by default it fails, so that code never runs twice.
        """
        if task not in ("never", "optional", "required"):
            raise ValueError(f"task must be 'never', 'optional' or 'required', not {task!r}")

        def register(fn: F) -> F:
            self.add_tool(
                make_tool(
                    fn,
                    name=name,
                    title=title,
                    description=description,
                    annotations=annotations,
                    meta=meta,
                    structured_output=structured_output,
                    timeout=timeout,
                    thread=thread,
                    extra_kinds=self.parameter_kind,
                ),
                task=TaskOptions(task, task_ttl_ms, task_poll_interval_ms, ask_before_task, task_rerun_on_restart),
            )
            return fn

        return register

    def parameter_kind(self, annotation: Any, extras: list[Any]) -> str | None:
        """Hook for parameters filled by the framework rather than the client (None: an argument).

        ``Annotated[T, Resolve(fn)]`` is ``"resolved"``: filled by running ``fn`` before the body.
        """
        return "resolved" if any(isinstance(extra, Resolve) for extra in extras) else None

    def add_tool(self, tool: Tool, *, task: TaskOptions | None = None) -> None:
        if tool.resolvers is None:
            tool.resolvers = build_graph(tool.name, tool.plan)  # checked now: TypeError at registration
        if tool.name in self.tools:
            raise ValueError(f"a tool named {tool.name!r} is already registered")
        self.tools[tool.name] = tool
        if task is not None and task.mode != "never":
            self.tasks.options[tool.name] = task

    def remove_tool(self, name: str) -> None:
        del self.tools[name]
        self.tasks.options.pop(name, None)

    def resource(
        self,
        uri: str,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        mime_type: str | None = None,
        annotations: dict[str, Any] | None = None,
        meta: dict[str, Any] | None = None,
    ) -> Callable[[F], F]:
        """Register a resource; a URI with ``{variables}`` makes an RFC 6570 template."""

        def register(fn: F) -> F:
            made = make_resource(
                fn,
                uri,
                name=name,
                title=title,
                description=description,
                mime_type=mime_type,
                annotations=annotations,
                meta=meta,
            )
            if isinstance(made, ResourceTemplate):
                self.templates[made.uri_template] = made
            else:
                self.resources[made.uri] = made
            return fn

        return register

    def prompt(
        self, name: str | None = None, *, title: str | None = None, description: str | None = None
    ) -> Callable[[F], F]:
        """Register a prompt; its parameters are the prompt's arguments."""

        def register(fn: F) -> F:
            prompt = make_prompt(fn, name=name, title=title, description=description)
            self.prompts[prompt.name] = prompt
            return fn

        return register

    def completion(self) -> Callable[[F], F]:
        """Register the completion function: ``fn(ref, argument_name, value, context_arguments)``."""

        def register(fn: F) -> F:
            self.completion_fn = fn
            return fn

        return register

    # ------------------------------------------------------------------ broadcasts

    def live_sessions(self) -> list[ServerSession]:
        return [s for s in self._sessions if not s.peer.closed and s.handshake.phase is not Phase.NEW]

    async def _broadcast(
        self, method: str, params: dict[str, Any] | None = None, *, only: Sequence[ServerSession] = ()
    ) -> None:
        for session in only or self.live_sessions():
            try:
                await session.send_notification(method, params)
            except Exception:  # one gone client must not stop the others
                logger.debug("could not notify a session of %s", method)

    async def notify_tools_changed(self) -> None:
        await self._notify_everywhere("notifications/tools/list_changed", None)

    async def notify_prompts_changed(self) -> None:
        await self._notify_everywhere("notifications/prompts/list_changed", None)

    async def notify_resources_changed(self) -> None:
        await self._notify_everywhere("notifications/resources/list_changed", None)

    async def notify_resource_updated(self, uri: str) -> None:
        """Tell every session subscribed to ``uri`` that it changed (and every listen stream that asked)."""
        await self._notify_everywhere("notifications/resources/updated", {"uri": uri})

    async def _notify_everywhere(self, method: str, params: dict[str, Any] | None) -> None:
        """Here, and on every other instance of the fleet (if there is one)."""
        await self._notify_here(method, params)
        backplane = self.backplane
        if backplane is not None and backplane.shared:
            try:
                await backplane.broadcast(method, params)
            except Exception as exc:  # the fleet is unreachable: this instance's clients were told
                logger.warning("could not tell the other instances %s: %s", method, exc)

    async def _notify_here(self, method: str, params: dict[str, Any] | None) -> None:
        """A list change or resource update to this process's sessions and listen streams."""
        self.listeners.publish(method, params)
        if method == "notifications/resources/updated":
            uri = (params or {}).get("uri")
            subscribed = [s for s in self.live_sessions() if uri in s.subscriptions]
            if subscribed:
                await self._broadcast(method, params, only=subscribed)
            return
        await self._broadcast(method, params)

    async def notify_session(self, session_id: str, method: str, params: dict[str, Any] | None = None) -> bool:
        """Send a notification to the Streamable HTTP session ``session_id`` (2025 eras), whichever
        instance of the fleet holds it; False if no live session has that id.

        For what happens outside a request: a payment webhook (on any instance) finishing a URL
        question sends ``notifications/elicitation/complete`` this way. It goes on the session's
        standalone GET stream.
        """
        backplane = self.backplane
        if backplane is None:
            return False
        message = {"jsonrpc": "2.0", "method": method, **({"params": params} if params is not None else {})}
        return await backplane.notify_session(session_id, message)

    async def notify_elicitation_complete(self, session_id: str, elicitation_id: str) -> bool:
        """``notifications/elicitation/complete`` for a URL question of session ``session_id``
        (see :meth:`notify_session`): the client may retry what needed it."""
        return await self.notify_session(
            session_id, "notifications/elicitation/complete", {"elicitationId": elicitation_id}
        )

    # ------------------------------------------------------------------ a fleet

    def use_backplane(self, backplane: Backplane) -> None:
        """Share sessions, tasks and spent rounds with the other instances through ``backplane``.

        A Redis backplane also brings its task store and single-use round store, unless this
        server was given its own: a task store passed to the constructor is kept, and so is a
        spent-round store other than the in-process :class:`SpentStates`.
        """
        self.backplane = backplane
        backplane.on_broadcast(self._notify_here)
        place = backplane.redis() if backplane.shared else None
        if place is None:
            return  # in-process, or another shared backplane: the stores are the server's own business
        from elicitkit.server.rounds.redis_spent import RedisSpentStates
        from elicitkit.server.tasks.redis_store import RedisTaskStore

        self.tasks.adopt_store(RedisTaskStore(place.client, prefix=place.prefix, sealer=place.sealer))
        codec = self.state_codec
        if isinstance(codec, AeadStateCodec) and type(codec.spent) is SpentStates:
            codec.spent = RedisSpentStates(place.client, prefix=place.prefix)

    def http_backplane(self) -> Backplane:
        """The backplane HTTP serving uses: the one given, else one on ``$ELICITKIT_REDIS_URL``,
        else an in-process one (notify_session still finds this process's sessions)."""
        if self.backplane is None:
            url = os.environ.get("ELICITKIT_REDIS_URL")
            if url:
                from elicitkit.backplane.redis_backplane import RedisBackplane

                self.use_backplane(RedisBackplane.from_url(url))
            else:
                from elicitkit.backplane.local import InProcessBackplane

                self.use_backplane(InProcessBackplane())
        assert self.backplane is not None
        return self.backplane

    # ------------------------------------------------------------------ serving requests

    def run_tool(self, tool: Tool, arguments: dict[str, Any], scope: RequestScope) -> Awaitable[JSON]:
        """Validate, call and render one tool call (see :func:`elicitkit.server.calling.run_tool`).

        A question it cannot have answered yet (2026, a task) propagates as the control signal:
        ``scope.run(server.run_tool(...), server)`` turns it into the round's result."""
        return calling.run_tool(self, tool, arguments, scope)  # plain: no frame of ours while the tool waits

    def read_resource(self, uri: str, context: Context) -> Awaitable[JSON]:
        """Read one of this server's resources as ``context``'s request (``{"contents": [...]}``)."""
        return methods.read_resource(self, uri, context)  # plain: no frame of ours while it reads

    def resource_not_found(self, uri: str) -> MCPError:
        return MCPError(RESOURCE_NOT_FOUND, f"Resource not found: {uri}", {"uri": uri})

    def tool_header_params(self, name: str) -> dict[str, str]:
        tool = self.tools.get(name)
        if tool is None:
            return {}
        try:
            return tool_header_params(tool.input_schema)
        except InvalidToolHeaders:
            return {}

    def configure_pages(self, **options: Any) -> None:
        """Server-hosted question pages and the fallback ladder for hosts that cannot ask.

        ``fallback="page"``: a client with URL mode only gets the form as a link; a client
        without elicitation gets a result naming what is needed and the link, and the same call
        again continues with the answer. ``deadline=`` seconds: an unanswered question is
        withdrawn and the link used. Also ``expires_in=``, ``public_url=``
        (see :class:`elicitkit.server.pages.PageOptions`).

        >>> server.configure_pages(fallback="page", deadline=120)
        """
        from elicitkit.server.pages import configure_pages

        configure_pages(self, **options)

    def current_context(self) -> Context:
        """The :class:`Context` of the request being served (for code that was not handed one)."""
        scope = current_scope.get()
        if scope is None:
            raise LookupError("no MCP request is being served in this task")
        return self.context_for(scope)

    async def request_elicitation(
        self, message: str, requested_schema: dict[str, Any], *, timeout: float | None = None
    ) -> ElicitationResult[dict[str, Any]]:
        """Seed-002 style: ask from any handler without a Context parameter (dict schema)."""
        return await self.current_context().request_elicitation(message, requested_schema, timeout=timeout)

    # ------------------------------------------------------------------ running

    def asgi_app(self, path: str = "/mcp", **options: Any) -> Any:
        """A Starlette app serving this server over Streamable HTTP at ``path``."""
        from elicitkit.transports.http.serve import create_app

        return create_app(self, path=path, **options)

    def _say_listening(self, url: str) -> None:
        print(f"{self.name}: serving MCP at {url} (Ctrl-C stops)", file=sys.stderr, flush=True)

    async def run_async(
        self,
        transport: Literal["stdio", "http"] = "stdio",
        *,
        host: str = "127.0.0.1",
        port: int = 8000,
        path: str = "/mcp",
        **options: Any,
    ) -> None:
        """Serve over ``transport`` until the client goes away (stdio) or SIGINT/SIGTERM.

        ``options`` go to the transport's runner: for stdio ``max_message_bytes``; for HTTP
        (:func:`~elicitkit.transports.http.serve.serve_http`) ``log_level`` (``"warning"``),
        ``access_log`` (False), ``header_timeout`` (10 s), ``body_timeout`` (30 s),
        ``shutdown_grace`` (5 s), ``session_idle_timeout`` (1800 s), ``max_sessions`` (10,000),
        ``dns_rebinding_protection``, ``allowed_hosts``, ``allowed_origins``, ``json_response``,
        ``max_message_bytes``, ``retention_seconds`` and ``on_listening`` (called with the URL once it
        listens; by default the URL is printed on stderr).
        """
        if transport not in ("stdio", "http"):
            raise ValueError(f"unknown transport {transport!r}; use 'stdio' or 'http'")
        try:
            if transport == "stdio":
                from elicitkit.transports.stdio import serve_stdio

                if sys.stdin.isatty():  # a person ran it by hand: say why nothing seems to happen
                    print(
                        f"{self.name}: speaking MCP over stdio; an MCP client starts this command itself"
                        ' (elicitkit call "python this_file.py"). Ctrl-D ends.',
                        file=sys.stderr,
                        flush=True,
                    )
                await _until_signal(serve_stdio(self, **options))
            else:
                from elicitkit.transports.http.serve import serve_http

                options.setdefault("on_listening", self._say_listening)

                await serve_http(self, host=host, port=port, path=path, **options)  # it handles the signals
        finally:
            with anyio.CancelScope(shield=True):
                await self.tasks.aclose()

    def loop_options(self, transport: Literal["stdio", "http"]) -> dict[str, Any]:
        """anyio's backend options for :meth:`run`'s event loop (none here: asyncio's own)."""
        return {}

    def run(self, transport: Literal["stdio", "http"] = "stdio", **kwargs: Any) -> None:
        """Serve until the client goes away (stdio) or until SIGINT/SIGTERM; see :meth:`run_async`.

        The program's main loop: an address that cannot be had ends the program with that one
        line (exit status 1), not a traceback (:meth:`run_async` raises ``CannotListen``).
        """
        from elicitkit.transports.http.serve import CannotListen

        try:
            anyio.run(lambda: self.run_async(transport, **kwargs), backend_options=self.loop_options(transport))
        except CannotListen as exc:
            raise SystemExit(f"error: {exc}") from None


async def _drop(message: JSON, related: Any = None) -> None:
    """Where a detached session's messages go: nowhere."""


async def _until_signal(coro: Any) -> None:
    """Run ``coro``; SIGINT or SIGTERM ends it cleanly instead of with a traceback, and ends the
    process anyway a few seconds later if a tool will not stop (swallows cancellation, blocks)."""
    import signal

    from elicitkit.transports.shutdown import FORCE_EXIT_AFTER, exit_after

    async with anyio.create_task_group() as tg:

        async def watch() -> None:
            with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                async for _ in signals:
                    tg.cancel_scope.cancel()
                    exit_after(FORCE_EXIT_AFTER, "a tool")
                    return

        tg.start_soon(watch)
        await coro
        tg.cancel_scope.cancel()


MCPServer = Server
"""The name seed 001 uses; the same class."""
