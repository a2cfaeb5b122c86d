"""Running a tool body: validate the arguments, fill what the client does not send, call, render.

One body, whoever runs it: a live ``tools/call`` (:mod:`elicitkit.server.methods`), a task's
run (:mod:`elicitkit.server.tasks.run`) or the questions before a task
(:mod:`elicitkit.server.tasks.serving`). What a question does to the run (sent now, or the
round's result) is the scope's business (:meth:`~elicitkit.server.scope.RequestScope.run`);
here every failure of the tool itself becomes an ``isError`` result.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any

import anyio
from pydantic import ValidationError

from elicitkit.elicitation.errors import ElicitationError, UrlElicitationRequired
from elicitkit.elicitation.results import ElicitationResult
from elicitkit.protocol.errors import MCPError
from elicitkit.protocol.jsonrpc import JSON
from elicitkit.server import asking
from elicitkit.server.content import error_result
from elicitkit.server.context import Context
from elicitkit.server.resolvers import Asker, Elicit, context_asker, resolve
from elicitkit.server.rounds.round import InputRequired
from elicitkit.server.scope import RequestScope, current_scope
from elicitkit.server.tools import FunctionPlan, Tool, ToolError, describe_validation_error

if TYPE_CHECKING:
    from elicitkit.server.server import Server

__all__ = ["inject", "inject_context", "prepare_call", "run_tool"]

logger = logging.getLogger("elicitkit.server")


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


async def run_tool(server: Server, tool: Tool, arguments: dict[str, Any], scope: RequestScope) -> JSON:
    """Validate, call, render; every failure of the tool itself becomes an ``isError`` result.

    A question the tool asks and cannot have answered yet (2026, a task) is the control signal
    :class:`InputRequired`: it passes through here to the scope's :meth:`~RequestScope.run`.
    """
    try:
        values = tool.plan.validate(arguments)
    except ValidationError as exc:
        return error_result(f"Invalid arguments for tool {tool.name}: {describe_validation_error(exc)}")
    timeout = tool.timeout if tool.timeout is not None else server.tool_timeout
    try:
        values = await prepare_call(server, tool, values, scope)  # resolvers may ask: outside the timeout
        invoked = tool.plan.invoke(values, thread=tool.thread)  # (runs only when awaited)
        del values  # the tool has its own: a call waiting for a person keeps no copy here
        if timeout is None:
            value = await invoked
        else:
            with anyio.fail_after(timeout):
                value = await invoked
    except BaseExceptionGroup:  # a task group in the tool: its children asked, or failed
        return _group_outcome(tool)  # (no "as" name: every local is kept while a tool waits)
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


def _group_outcome(tool: Tool) -> JSON:
    """The exception group being handled: re-raised if its children only asked (the scope ends
    the round), else the tool's failure as an ``isError`` result (a KeyboardInterrupt and the
    like propagate)."""
    group = sys.exception()
    assert isinstance(group, BaseExceptionGroup)
    _, failed = group.split(InputRequired)
    if failed is None or not isinstance(failed, Exception):
        raise group
    logger.error("tool %s raised", tool.name, exc_info=failed)
    return error_result(f"Error executing tool {tool.name}: {failed}")


async def prepare_call(server: Server, tool: Tool, values: dict[str, Any], scope: RequestScope) -> dict[str, Any]:
    """Fill the parameters the client does not send: the context, and resolved values."""
    current_scope.set(scope)
    plan = tool.plan
    if plan.takes_context:
        values = inject(server, plan, values, scope)
    graph = tool.resolvers
    if graph is not None:
        # The framework's own Context, which no resolver takes: none is made, the questions go
        # straight to the scope (what its ``elicit`` would do with the form the ``Elicit`` made).
        default = _DEFAULT_CONTEXT_FOR or _default_context_for()
        if not graph.takes_context and type(server).context_for is default and "context_for" not in vars(server):
            values.update(await resolve(graph, values, None, _scope_asker(scope)))
        else:
            context = server.context_for(scope)
            values.update(await resolve(graph, values, context, _asker(context, scope)))
    return values


def _asker(context: Context, scope: RequestScope) -> Asker:
    """:func:`context_asker`; for the framework's own :class:`Context`, what its ``elicit`` does
    with the form the ``Elicit`` made already (not looked up again for every question)."""
    if type(context).elicit is not Context.elicit:  # a server's own Context asks its own way
        return context_asker(context)
    return _scope_asker(scope)


def _scope_asker(scope: RequestScope) -> Asker:
    def ask(key: str, elicit: Elicit[Any]) -> Awaitable[ElicitationResult[Any]]:
        return asking.ask_form(
            scope, elicit.message, elicit.form, timeout=elicit.timeout, max_attempts=elicit.max_attempts, key=key
        )

    return ask


def _default_context_for() -> Any:
    """``Server.context_for`` (server.py imports this module, so it is looked up on first use)."""
    global _DEFAULT_CONTEXT_FOR
    from elicitkit.server.server import Server

    _DEFAULT_CONTEXT_FOR = Server.context_for
    return _DEFAULT_CONTEXT_FOR


_DEFAULT_CONTEXT_FOR: Any = None
