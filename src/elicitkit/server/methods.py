"""The MCP methods a :class:`~elicitkit.server.server.Server` answers: tools, resources, prompts,
completion. Each takes the server and the request's :class:`~elicitkit.server.scope.RequestScope`.

Tools, prompts and resources are where user code runs and may ask; on 2026-07-28 they open
the request's round first, and a question without an answer ends the call with the round's
``InputRequiredResult`` (:mod:`elicitkit.server.asking` decides that; here it is collected).
"""

from __future__ import annotations

import base64
import inspect
import logging
import sys
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any

import anyio
from pydantic import ValidationError

from elicitkit.elicitation.errors import ElicitationError, UrlElicitationRequired
from elicitkit.protocol.errors import INVALID_PARAMS, MCPError
from elicitkit.protocol.jsonrpc import JSON
from elicitkit.protocol.tasks import declares_tasks, missing_extension
from elicitkit.server import asking
from elicitkit.server.prompts import render_messages
from elicitkit.server.resolvers import context_asker, resolve
from elicitkit.server.resources import render_contents
from elicitkit.server.rounds.round import InputRequired, InputRound, only_asking
from elicitkit.server.scope import RequestScope, current_scope
from elicitkit.server.tools import FunctionPlan, Tool, ToolError, describe_validation_error, error_result

if TYPE_CHECKING:
    from elicitkit.server.context import Context
    from elicitkit.server.server import Server

logger = logging.getLogger("elicitkit.server")


def _round(scope: RequestScope) -> InputRound:
    """The round a question went into (only a 2026 scope with a round can raise the signal)."""
    assert scope.round is not None
    return scope.round


# ----------------------------------------------------------------------------- paging


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


def page(server: Server, items: list[Any], params: dict[str, Any], key: str) -> JSON:
    offset = _decode_cursor(params.get("cursor"))
    if offset > len(items):
        raise MCPError(INVALID_PARAMS, "cursor is past the end of the list")
    chunk = items[offset : offset + server.page_size]
    result: JSON = {key: [item.definition() for item in chunk]}
    if offset + server.page_size < len(items):
        result["nextCursor"] = _encode_cursor(offset + server.page_size)
    return result


# ----------------------------------------------------------------------------- injection


def inject(server: Server, plan: FunctionPlan, values: dict[str, Any], scope: RequestScope) -> dict[str, Any]:
    """Fill the parameters typed ``Context`` (one Context per call, made only if asked for)."""
    context: Context | None = None
    for param in plan.parameters:
        if param.kind == "context":
            if context is None:
                context = server.context_for(scope)
            values[param.name] = context
    return values


def inject_context(plan: FunctionPlan, values: dict[str, Any], context: Context) -> dict[str, Any]:
    for param in plan.parameters:
        if param.kind == "context":
            values[param.name] = context
    return values


# ----------------------------------------------------------------------------- tools


async def list_tools(server: Server, scope: RequestScope) -> JSON:
    return page(server, list(server.tools.values()), scope.params, "tools")


def call_tool(server: Server, scope: RequestScope) -> Awaitable[JSON]:
    """Checks, then the coroutine that runs the tool (no frame of ours stays around it)."""
    name = scope.params.get("name")
    tool = server.tools.get(name) if isinstance(name, str) else None
    if tool is None:
        raise MCPError(INVALID_PARAMS, f"Unknown tool: {name!r}")
    arguments = scope.params.get("arguments")
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise MCPError(INVALID_PARAMS, "tools/call: arguments must be an object")
    if scope.modern:
        task = server.tasks.options.get(tool.name)
        if task is not None:  # a task tool (Tasks extension, 2026 only)
            if declares_tasks(scope.client_capabilities):
                return server.tasks.call(tool, task, arguments, scope)
            if task.mode == "required":
                raise missing_extension(f"tool {tool.name!r} runs only as a task; declare the tasks extension")
    scope.open_round(server.state_codec, server.principal_hook)
    return run_tool(server, tool, arguments, scope)


async def run_tool(server: Server, tool: Tool, arguments: dict[str, Any], scope: RequestScope) -> JSON:
    """Validate, call, render; every failure of the tool itself becomes an ``isError`` result."""
    round_ = scope.round
    if round_ is not None and round_.unclaimed is not None:  # single-use rounds on a shared store
        await round_.claim()
    try:
        values = tool.plan.validate(arguments)
    except ValidationError as exc:
        return error_result(f"Invalid arguments for tool {tool.name}: {describe_validation_error(exc)}")
    timeout = tool.timeout if tool.timeout is not None else server.tool_timeout
    try:
        values = await prepare_call(server, tool, values, scope)  # resolvers may ask: outside the timeout
        if timeout is None:
            value = await tool.plan.invoke(values, thread=tool.thread)
        else:
            with anyio.fail_after(timeout):
                value = await tool.plan.invoke(values, thread=tool.thread)
    except InputRequired:  # 2026: the questions end this round (never an error, never logged)
        return _round(scope).result()
    except BaseExceptionGroup:  # a task group in the tool: its children asked, or failed
        return _group_outcome(tool, scope)  # (no "as" name: every local is kept while a tool waits)
    except ToolError as exc:
        return error_result(str(exc))
    except UrlElicitationRequired as exc:
        return asking.url_required(scope, exc)
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


def _group_outcome(tool: Tool, scope: RequestScope) -> JSON:
    """The exception group being handled: the round's result if its children only asked, else
    the tool's failure as an ``isError`` result (a KeyboardInterrupt and the like propagate)."""
    group = sys.exception()
    assert isinstance(group, BaseExceptionGroup)
    _, failed = group.split(InputRequired)
    if failed is None:
        return _round(scope).result()
    if not isinstance(failed, Exception):
        raise group
    logger.error("tool %s raised", tool.name, exc_info=failed)
    return error_result(f"Error executing tool {tool.name}: {failed}")


async def prepare_call(server: Server, tool: Tool, values: dict[str, Any], scope: RequestScope) -> dict[str, Any]:
    """Fill the parameters the client does not send: the context, and resolved values."""
    current_scope.set(scope)
    values = inject(server, tool.plan, values, scope)
    if tool.resolvers is not None:
        context = server.context_for(scope)
        values.update(await resolve(tool.resolvers, values, context, context_asker(context)))
    return values


# ----------------------------------------------------------------------------- resources


async def list_resources(server: Server, scope: RequestScope) -> JSON:
    return page(server, list(server.resources.values()), scope.params, "resources")


async def list_templates(server: Server, scope: RequestScope) -> JSON:
    return page(server, list(server.templates.values()), scope.params, "resourceTemplates")


async def read_resource_method(server: Server, scope: RequestScope) -> JSON:
    """``resources/read`` (a missing resource is -32002; the 2026 session maps it to -32602)."""
    uri = scope.params.get("uri")
    if not isinstance(uri, str):
        raise MCPError(INVALID_PARAMS, "resources/read: uri must be a string")
    round_ = scope.open_round(server.state_codec, server.principal_hook)
    if round_ is not None and round_.unclaimed is not None:  # single-use rounds on a shared store
        await round_.claim()
    try:
        return await read_resource(server, uri, server.context_for(scope))
    except MCPError:
        raise
    except BaseException as exc:
        if only_asking(exc):  # 2026: the questions end this round
            return _round(scope).result()
        raise


async def read_resource(server: Server, uri: str, context: Context) -> JSON:
    """Read ``uri`` from the server's static resources or templates (also what ctx.read_resource does)."""
    static = server.resources.get(uri)
    if static is not None and static.plan is not None:
        values = inject_context(static.plan, {}, context)
        value = await static.plan.invoke(values)
        return {"contents": render_contents(uri, value, static.mime_type)}
    for template in server.templates.values():
        variables = template.matcher.match(uri)
        if variables is None or template.plan is None:
            continue
        try:
            values = template.plan.validate(variables)
        except ValidationError as exc:
            raise MCPError(INVALID_PARAMS, f"{uri}: {describe_validation_error(exc)}", {"uri": uri}) from None
        value = await template.plan.invoke(inject_context(template.plan, values, context))
        return {"contents": render_contents(uri, value, template.mime_type)}
    raise server.resource_not_found(uri)


async def subscribe(server: Server, scope: RequestScope) -> JSON:
    uri = scope.params.get("uri")
    if not isinstance(uri, str):
        raise MCPError(INVALID_PARAMS, "resources/subscribe: uri must be a string")
    scope.session.subscriptions.add(uri)
    return {}


async def unsubscribe(server: Server, scope: RequestScope) -> JSON:
    uri = scope.params.get("uri")
    if not isinstance(uri, str):
        raise MCPError(INVALID_PARAMS, "resources/unsubscribe: uri must be a string")
    scope.session.subscriptions.discard(uri)
    return {}


# ----------------------------------------------------------------------------- prompts


async def list_prompts(server: Server, scope: RequestScope) -> JSON:
    return page(server, list(server.prompts.values()), scope.params, "prompts")


async def get_prompt(server: Server, scope: RequestScope) -> JSON:
    name = scope.params.get("name")
    prompt = server.prompts.get(name) if isinstance(name, str) else None
    if prompt is None:
        raise MCPError(INVALID_PARAMS, f"Unknown prompt: {name!r}")
    arguments = scope.params.get("arguments") or {}
    if not isinstance(arguments, dict):
        raise MCPError(INVALID_PARAMS, "prompts/get: arguments must be an object")
    try:
        values = prompt.plan.validate(arguments)
    except ValidationError as exc:
        raise MCPError(INVALID_PARAMS, f"prompt {prompt.name}: {describe_validation_error(exc)}") from None
    round_ = scope.open_round(server.state_codec, server.principal_hook)
    if round_ is not None and round_.unclaimed is not None:  # single-use rounds on a shared store
        await round_.claim()
    try:
        value = await prompt.plan.invoke(inject(server, prompt.plan, values, scope))
    except BaseException as exc:
        if only_asking(exc):  # 2026: the questions end this round
            return _round(scope).result()
        raise
    result: JSON = {"messages": render_messages(value)}
    if prompt.description:
        result["description"] = prompt.description
    return result


# ----------------------------------------------------------------------------- completion


async def complete(server: Server, scope: RequestScope) -> JSON:
    ref = scope.params.get("ref")
    argument = scope.params.get("argument")
    if not isinstance(ref, dict) or not isinstance(argument, dict):
        raise MCPError(INVALID_PARAMS, "completion/complete needs ref and argument objects")
    name, value = argument.get("name"), argument.get("value", "")
    if not isinstance(name, str) or not isinstance(value, str):
        raise MCPError(INVALID_PARAMS, "completion/complete needs a string argument.name and argument.value")
    context = scope.params.get("context")
    context_args = (context.get("arguments") if isinstance(context, dict) else context) or {}
    if not isinstance(context_args, dict) or not all(isinstance(v, str) for v in context_args.values()):
        raise MCPError(INVALID_PARAMS, "completion/complete context must be {arguments: {name: string}}")
    values: list[str] = []
    if server.completion_fn is not None:
        outcome = server.completion_fn(ref, name, value, context_args)
        if inspect.isawaitable(outcome):
            outcome = await outcome
        values = [str(v) for v in (outcome or [])]
    return {"completion": {"values": values[:100], "total": len(values), "hasMore": len(values) > 100}}
