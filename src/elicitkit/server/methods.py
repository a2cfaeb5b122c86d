"""The MCP methods a :class:`~elicitkit.server.server.Server` answers: tools, resources, prompts,
completion. Each takes the server and the request's :class:`~elicitkit.server.scope.RequestScope`.

Tools, prompts and resources are where user code runs and may ask; each runs its body through
the scope (:meth:`~elicitkit.server.scope.RequestScope.run`), which on 2026-07-28 opens the
request's round and turns a question without an answer into the round's ``InputRequiredResult``.
The tool body itself is :func:`elicitkit.server.calling.run_tool`.
"""

from __future__ import annotations

import base64
import inspect
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from elicitkit.protocol.errors import INVALID_PARAMS, MCPError
from elicitkit.protocol.jsonrpc import JSON
from elicitkit.server.calling import inject, inject_context, run_tool
from elicitkit.server.prompts import Prompt, render_messages
from elicitkit.server.resources import render_contents
from elicitkit.server.scope import RequestScope
from elicitkit.server.tools import describe_validation_error

if TYPE_CHECKING:
    from elicitkit.server.context import Context
    from elicitkit.server.server import Server

__all__ = [
    "call_tool",
    "complete",
    "get_prompt",
    "list_prompts",
    "list_resources",
    "list_templates",
    "list_tools",
    "page",
    "read_resource",
    "read_resource_method",
    "subscribe",
    "unsubscribe",
]


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


# ----------------------------------------------------------------------------- tools


async def list_tools(server: Server, scope: RequestScope) -> JSON:
    return page(server, list(server.tools.values()), scope.params, "tools")


def call_tool(server: Server, scope: RequestScope) -> Awaitable[JSON]:
    """Checks, then the coroutine that runs the tool (no frame of ours stays around it)."""
    params = scope.request.params
    name = params.get("name")
    tool = server.tools.get(name) if isinstance(name, str) else None
    if tool is None:
        raise MCPError(INVALID_PARAMS, f"Unknown tool: {name!r}")
    if name is not tool.name:  # the same name, as the tool's own string (a call waiting keeps no copy)
        params["name"] = tool.name
    arguments = params.get("arguments")
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise MCPError(INVALID_PARAMS, "tools/call: arguments must be an object")
    as_task = scope.as_task(server.tasks, tool, arguments)  # a task tool (Tasks extension, 2026 only)
    if as_task is not None:
        return as_task
    return scope.run(run_tool(server, tool, arguments, scope), server)


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
    return await scope.run(read_resource(server, uri, server.context_for(scope)), server)


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
    return await scope.run(_render_prompt(server, prompt, values, scope), server)


async def _render_prompt(server: Server, prompt: Prompt, values: dict[str, Any], scope: RequestScope) -> JSON:
    value = await prompt.plan.invoke(inject(server, prompt.plan, values, scope))
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
