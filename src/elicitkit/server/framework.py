"""The decorator framework: :class:`Server` with ``@tool``, ``@resource``, ``@prompt``.

It registers MCP method handlers on the low-level server and turns plain Python functions
into tools, resources and prompts. One instance can serve any number of connections, over
any transport, at once.
"""

from __future__ import annotations

import base64
import contextvars
import inspect
import logging
import weakref
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Literal, TypeVar

import anyio
from pydantic import ValidationError

from elicitkit.elicitation.errors import ElicitationError, UrlElicitationRequired
from elicitkit.elicitation.results import ElicitationResult
from elicitkit.protocol.errors import INVALID_PARAMS, RESOURCE_NOT_FOUND, MCPError
from elicitkit.protocol.handshake import Phase
from elicitkit.protocol.jsonrpc import JSON
from elicitkit.protocol.modern import InvalidToolHeaders, tool_header_params
from elicitkit.protocol.versions import MODERN_2026, supports_url_elicitation
from elicitkit.server.context import Context
from elicitkit.server.lowlevel import LowLevelServer
from elicitkit.server.mrtr import InputRequired, InputRound, default_codec
from elicitkit.server.prompts import Prompt, make_prompt, render_messages
from elicitkit.server.request_state import StateCodec
from elicitkit.server.resolvers import QuestionsPending, Resolve, build_graph, legacy_asker, resolve
from elicitkit.server.resources import Resource, ResourceTemplate, make_resource, render_contents
from elicitkit.server.session import RequestContext, ServerSession
from elicitkit.server.tools import (
    FunctionPlan,
    Tool,
    ToolError,
    describe_validation_error,
    error_result,
    make_tool,
)

logger = logging.getLogger("elicitkit.server")

F = TypeVar("F", bound=Callable[..., Any])
CompletionFn = Callable[..., Any]
_current: contextvars.ContextVar[RequestContext | None] = contextvars.ContextVar("elicitkit_request", default=None)


def _encode_cursor(offset: int) -> str:
    return base64.urlsafe_b64encode(f"o:{offset}".encode()).decode()


def _decode_cursor(cursor: Any) -> int:
    if cursor is None:
        return 0
    try:
        kind, _, value = base64.urlsafe_b64decode(str(cursor).encode()).decode().partition(":")
        if kind == "o" and value.isdigit():
            return int(value)
    except (ValueError, UnicodeDecodeError):
        pass
    raise MCPError(INVALID_PARAMS, f"invalid cursor {cursor!r}")


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
    ) -> None:
        super().__init__(name, version, title=title, instructions=instructions)
        self.page_size = page_size
        self.tool_timeout = tool_timeout
        # Seals 2026 requestState. Default: keys from ELICITKIT_STATE_KEYS (shared by processes), else fresh.
        self.state_codec: StateCodec = state_codec if state_codec is not None else default_codec()
        self.tools: dict[str, Tool] = {}
        self.resources: dict[str, Resource] = {}
        self.templates: dict[str, ResourceTemplate] = {}
        self.prompts: dict[str, Prompt] = {}
        self._completion: CompletionFn | None = None
        self._sessions: weakref.WeakSet[ServerSession] = weakref.WeakSet()
        handlers = {
            "tools/list": self._list_tools,
            "tools/call": self._call_tool,
            "resources/list": self._list_resources,
            "resources/templates/list": self._list_templates,
            "resources/read": self._read_resource,
            "resources/subscribe": self._subscribe,
            "resources/unsubscribe": self._unsubscribe,
            "prompts/list": self._list_prompts,
            "prompts/get": self._get_prompt,
            "completion/complete": self._complete,
        }
        for method, handler in handlers.items():
            self.set_request_handler(method, handler)

    def capabilities(self) -> dict[str, Any]:
        return {
            "tools": {"listChanged": True},
            "resources": {"subscribe": True, "listChanged": True},
            "prompts": {"listChanged": True},
            "logging": {},
            "completions": {},
            **self.extra_capabilities,
        }

    def create_session(self, send: Any, **kwargs: Any) -> ServerSession:
        session = super().create_session(send, **kwargs)
        self._sessions.add(session)
        return session

    def context_for(self, request: RequestContext) -> Context:
        """The :class:`Context` handed to user functions (subclasses may return a richer one)."""
        return Context(request, self)

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
    ) -> Callable[[F], F]:
        """Register a function as a tool. Sync functions run inline unless ``thread=True``."""

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
                )
            )
            return fn

        return register

    def parameter_kind(self, annotation: Any, extras: list[Any]) -> str | None:
        """Hook for parameters filled by the framework rather than the client (None: an argument).

        ``Annotated[T, Resolve(fn)]`` is ``"resolved"``: filled by running ``fn`` before the body.
        """
        return "resolved" if any(isinstance(extra, Resolve) for extra in extras) else None

    def add_tool(self, tool: Tool) -> None:
        if tool.resolvers is None:
            tool.resolvers = build_graph(tool.name, tool.plan)  # checked now: TypeError at registration
        if tool.name in self.tools:
            raise ValueError(f"a tool named {tool.name!r} is already registered")
        self.tools[tool.name] = tool

    def remove_tool(self, name: str) -> None:
        del self.tools[name]

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
            self._completion = fn
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
        await self._broadcast("notifications/tools/list_changed")

    async def notify_prompts_changed(self) -> None:
        await self._broadcast("notifications/prompts/list_changed")

    async def notify_resources_changed(self) -> None:
        await self._broadcast("notifications/resources/list_changed")

    async def notify_resource_updated(self, uri: str) -> None:
        """Tell every session subscribed to ``uri`` that it changed."""
        subscribed = [s for s in self.live_sessions() if uri in s.subscriptions]
        if subscribed:
            await self._broadcast("notifications/resources/updated", {"uri": uri}, only=subscribed)

    # ------------------------------------------------------------------ calling user code

    def _inject(self, plan: FunctionPlan, values: dict[str, Any], ctx: RequestContext) -> dict[str, Any]:
        context: Context | None = None
        for param in plan.parameters:
            if param.kind == "context":
                if context is None:
                    context = self.context_for(ctx)
                values[param.name] = context
        return values

    def _page(self, items: list[Any], params: dict[str, Any], key: str) -> JSON:
        offset = _decode_cursor(params.get("cursor"))
        if offset > len(items):
            raise MCPError(INVALID_PARAMS, "cursor is past the end of the list")
        page = items[offset : offset + self.page_size]
        result: JSON = {key: [item.definition() for item in page]}
        if offset + self.page_size < len(items):
            result["nextCursor"] = _encode_cursor(offset + self.page_size)
        return result

    # ------------------------------------------------------------------ tools

    async def _list_tools(self, ctx: RequestContext) -> JSON:
        return self._page(list(self.tools.values()), ctx.params, "tools")

    def _call_tool(self, ctx: RequestContext) -> Awaitable[JSON]:
        """Checks, then the coroutine that runs the tool (no frame of ours stays around it)."""
        name = ctx.params.get("name")
        tool = self.tools.get(name) if isinstance(name, str) else None
        if tool is None:
            raise MCPError(INVALID_PARAMS, f"Unknown tool: {name!r}")
        arguments = ctx.params.get("arguments")
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            raise MCPError(INVALID_PARAMS, "tools/call: arguments must be an object")
        self._open_round(ctx, "tools/call")
        return self.run_tool(tool, arguments, ctx)

    async def run_tool(self, tool: Tool, arguments: dict[str, Any], ctx: RequestContext) -> JSON:
        """Validate, call, render; every failure of the tool itself becomes an ``isError`` result."""
        try:
            values = tool.plan.validate(arguments)
        except ValidationError as exc:
            return error_result(f"Invalid arguments for tool {tool.name}: {describe_validation_error(exc)}")
        timeout = tool.timeout if tool.timeout is not None else self.tool_timeout
        try:
            values = await self.prepare_call(tool, values, ctx)  # resolvers may ask: outside the timeout
            if timeout is None:
                value = await tool.plan.invoke(values, thread=tool.thread)
            else:
                with anyio.fail_after(timeout):
                    value = await tool.plan.invoke(values, thread=tool.thread)
        except (InputRequired, QuestionsPending):
            return ctx.input_round.result()  # type: ignore[no-any-return]
        except ToolError as exc:
            return error_result(str(exc))
        except UrlElicitationRequired as exc:
            return self._url_required(exc, ctx)
        except ElicitationError as exc:  # before TimeoutError: ElicitationTimeout is one too
            return error_result(f"{tool.name}: {exc}")
        except TimeoutError as exc:
            if timeout is None:  # the tool's own TimeoutError: no limit of ours was reached
                return error_result(f"Error executing tool {tool.name}: {exc or 'timed out'}")
            return error_result(f"Tool {tool.name} timed out after {timeout:g}s")
        except MCPError:
            raise
        except Exception as exc:
            logger.exception("tool %s raised", tool.name)
            return error_result(f"Error executing tool {tool.name}: {exc}")
        return tool.render(value)

    def _url_required(self, exc: UrlElicitationRequired, ctx: RequestContext) -> JSON:
        """-32042 on 2025-11-25; on 2026 (which has no -32042) the URLs become this round's inputs."""
        if "url" not in ctx.elicitation_modes or not supports_url_elicitation(ctx.protocol_version):
            return error_result(f"{exc.message} (this client cannot open URL elicitations)")
        if ctx.modern and ctx.input_round is not None:
            for item in exc.elicitations:
                params = item.to_params(ctx.protocol_version or MODERN_2026)
                ctx.input_round.need(
                    getattr(item, "elicitation_id", None) or ctx.input_round.next_key(), "elicitation/create", params
                )
            return ctx.input_round.result()  # type: ignore[no-any-return]
        raise exc.to_mcp_error() from None

    def _open_round(self, ctx: RequestContext, method: str) -> None:
        """2026 requests that may need input get their round (answers in, questions out)."""
        if ctx.modern:
            ctx.input_round = InputRound(method, ctx.params, self.state_codec)

    def tool_header_params(self, name: str) -> dict[str, str]:
        tool = self.tools.get(name)
        if tool is None:
            return {}
        try:
            return tool_header_params(tool.input_schema)
        except InvalidToolHeaders:
            return {}

    async def prepare_call(self, tool: Tool, values: dict[str, Any], ctx: RequestContext) -> dict[str, Any]:
        """Fill the parameters the client does not send: the context, and resolved values."""
        _current.set(ctx)
        values = self._inject(tool.plan, values, ctx)
        if tool.resolvers is not None:
            context = self.context_for(ctx)
            values.update(await resolve(tool.resolvers, values, context, legacy_asker(context)))
        return values

    def current_context(self) -> Context:
        """The :class:`Context` of the request being served (for code that was not handed one)."""
        request = _current.get()
        if request is None:
            raise LookupError("no MCP request is being served in this task")
        return self.context_for(request)

    async def request_elicitation(
        self, message: str, requested_schema: dict[str, Any], *, timeout: float | None = None
    ) -> ElicitationResult[dict[str, Any]]:
        """Seed-002 style: ask from any handler without a Context parameter (dict schema)."""
        return await self.current_context().request_elicitation(message, requested_schema, timeout=timeout)

    # ------------------------------------------------------------------ resources

    async def _list_resources(self, ctx: RequestContext) -> JSON:
        return self._page(list(self.resources.values()), ctx.params, "resources")

    async def _list_templates(self, ctx: RequestContext) -> JSON:
        return self._page(list(self.templates.values()), ctx.params, "resourceTemplates")

    async def _read_resource(self, ctx: RequestContext) -> JSON:
        uri = ctx.params.get("uri")
        if not isinstance(uri, str):
            raise MCPError(INVALID_PARAMS, "resources/read: uri must be a string")
        self._open_round(ctx, "resources/read")
        try:
            return await self.read_resource(uri, self.context_for(ctx))
        except (InputRequired, QuestionsPending):
            return ctx.input_round.result()  # type: ignore[no-any-return]
        except MCPError as exc:
            if ctx.modern and exc.code == RESOURCE_NOT_FOUND:  # 2026 has no -32002
                raise MCPError(INVALID_PARAMS, exc.message, exc.data) from None
            raise

    def resource_not_found(self, uri: str) -> MCPError:
        return MCPError(RESOURCE_NOT_FOUND, f"Resource not found: {uri}", {"uri": uri})

    async def read_resource(self, uri: str, context: Context) -> JSON:
        static = self.resources.get(uri)
        if static is not None and static.plan is not None:
            values = self._inject_context(static.plan, {}, context)
            value = await static.plan.invoke(values)
            return {"contents": render_contents(uri, value, static.mime_type)}
        for template in self.templates.values():
            variables = template.matcher.match(uri)
            if variables is None or template.plan is None:
                continue
            try:
                values = template.plan.validate(variables)
            except ValidationError as exc:
                raise MCPError(INVALID_PARAMS, f"{uri}: {describe_validation_error(exc)}", {"uri": uri}) from None
            value = await template.plan.invoke(self._inject_context(template.plan, values, context))
            return {"contents": render_contents(uri, value, template.mime_type)}
        raise self.resource_not_found(uri)

    @staticmethod
    def _inject_context(plan: FunctionPlan, values: dict[str, Any], context: Context) -> dict[str, Any]:
        for param in plan.parameters:
            if param.kind == "context":
                values[param.name] = context
        return values

    async def _subscribe(self, ctx: RequestContext) -> JSON:
        uri = ctx.params.get("uri")
        if not isinstance(uri, str):
            raise MCPError(INVALID_PARAMS, "resources/subscribe: uri must be a string")
        ctx.session.subscriptions.add(uri)
        return {}

    async def _unsubscribe(self, ctx: RequestContext) -> JSON:
        uri = ctx.params.get("uri")
        if not isinstance(uri, str):
            raise MCPError(INVALID_PARAMS, "resources/unsubscribe: uri must be a string")
        ctx.session.subscriptions.discard(uri)
        return {}

    # ------------------------------------------------------------------ prompts

    async def _list_prompts(self, ctx: RequestContext) -> JSON:
        return self._page(list(self.prompts.values()), ctx.params, "prompts")

    async def _get_prompt(self, ctx: RequestContext) -> JSON:
        name = ctx.params.get("name")
        prompt = self.prompts.get(name) if isinstance(name, str) else None
        if prompt is None:
            raise MCPError(INVALID_PARAMS, f"Unknown prompt: {name!r}")
        arguments = ctx.params.get("arguments") or {}
        if not isinstance(arguments, dict):
            raise MCPError(INVALID_PARAMS, "prompts/get: arguments must be an object")
        try:
            values = prompt.plan.validate(arguments)
        except ValidationError as exc:
            raise MCPError(INVALID_PARAMS, f"prompt {prompt.name}: {describe_validation_error(exc)}") from None
        self._open_round(ctx, "prompts/get")
        try:
            value = await prompt.plan.invoke(self._inject(prompt.plan, values, ctx))
        except (InputRequired, QuestionsPending):
            return ctx.input_round.result()  # type: ignore[no-any-return]
        result: JSON = {"messages": render_messages(value)}
        if prompt.description:
            result["description"] = prompt.description
        return result

    # ------------------------------------------------------------------ completion

    async def _complete(self, ctx: RequestContext) -> JSON:
        ref = ctx.params.get("ref")
        argument = ctx.params.get("argument")
        if not isinstance(ref, dict) or not isinstance(argument, dict):
            raise MCPError(INVALID_PARAMS, "completion/complete needs ref and argument objects")
        name, value = argument.get("name"), argument.get("value", "")
        if not isinstance(name, str) or not isinstance(value, str):
            raise MCPError(INVALID_PARAMS, "completion/complete needs a string argument.name and argument.value")
        context = ctx.params.get("context")
        context_args = (context.get("arguments") if isinstance(context, dict) else context) or {}
        if not isinstance(context_args, dict) or not all(isinstance(v, str) for v in context_args.values()):
            raise MCPError(INVALID_PARAMS, "completion/complete context must be {arguments: {name: string}}")
        values: list[str] = []
        if self._completion is not None:
            outcome = self._completion(ref, name, value, context_args)
            if inspect.isawaitable(outcome):
                outcome = await outcome
            values = [str(v) for v in (outcome or [])]
        return {"completion": {"values": values[:100], "total": len(values), "hasMore": len(values) > 100}}

    # ------------------------------------------------------------------ running

    def asgi_app(self, path: str = "/mcp", **options: Any) -> Any:
        """A Starlette app serving this server over Streamable HTTP at ``path``."""
        from elicitkit.transports.http_server import create_app

        return create_app(self, path=path, **options)

    async def run_async(
        self,
        transport: Literal["stdio", "http"] = "stdio",
        *,
        host: str = "127.0.0.1",
        port: int = 8000,
        path: str = "/mcp",
        **options: Any,
    ) -> None:
        if transport == "stdio":
            from elicitkit.transports.stdio import serve_stdio

            await _until_signal(serve_stdio(self, **options))
        elif transport == "http":
            from elicitkit.transports.http_server import serve_http

            await serve_http(self, host=host, port=port, path=path, **options)  # uvicorn handles signals
        else:
            raise ValueError(f"unknown transport {transport!r}; use 'stdio' or 'http'")

    def run(self, transport: Literal["stdio", "http"] = "stdio", **kwargs: Any) -> None:
        """Serve until the client goes away (stdio) or until SIGINT/SIGTERM."""
        anyio.run(lambda: self.run_async(transport, **kwargs))


async def _until_signal(coro: Any) -> None:
    """Run ``coro``; SIGINT or SIGTERM ends it cleanly instead of with a traceback."""
    import signal

    async with anyio.create_task_group() as tg:

        async def watch() -> None:
            with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                async for _ in signals:
                    tg.cancel_scope.cancel()
                    return

        tg.start_soon(watch)
        await coro
        tg.cancel_scope.cancel()


MCPServer = Server
"""The name seed 001 uses; the same class."""
