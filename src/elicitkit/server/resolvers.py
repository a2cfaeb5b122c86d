"""Resolvers: tool parameters the framework fills before the body runs, asking the user when it must.

A parameter annotated ``Annotated[T, Resolve(fn)]`` never reaches the client's input schema.
Before the tool body runs, ``fn`` is called; it returns the value when it already knows it,
or ``Elicit(message, Model)`` to have the framework put a question to the user::

    async def confirm_delete(path: str) -> Confirm | Elicit[Confirm]:
        if not FOLDERS[path]:
            return Confirm(ok=True)                      # nothing to ask
        return Elicit(f"{path} is not empty. Delete anyway?", Confirm)

    @server.tool()
    async def delete_folder(path: str, confirm: Annotated[ElicitationResult[Confirm], Resolve(confirm_delete)]):
        ...

A resolver takes, by name, the tool's own arguments and the tool's other resolved
parameters; a parameter annotated ``Annotated[X, Resolve(other)]`` makes a dependency that
is not a tool parameter at all; a parameter typed ``Context`` gets the request's context.
Resolvers may be sync or async; each runs at most once per call, in dependency order. The
graph is checked when the tool is registered: an unknown parameter, a cycle or a question
with a bad schema is a ``TypeError`` naming the tool, the resolver and the parameter.

``Annotated[ElicitationResult[T], Resolve(fn)]`` receives the whole outcome (a resolver
that returned a plain value arrives as ``AcceptedElicitation(data=value)``); a bare ``T``
receives the data, and a declined or cancelled question ends the call with an ``isError``
result instead of running the body.

What to ask is kept apart from how it is asked. :func:`resolve` walks the graph and hands
every question to an *asker* with a stable key (the parameter name). The framework's asker
is :func:`context_asker`, which asks with ``ctx.elicit`` on either era (mid-call on a
handshake connection; into the round on 2026). An asker that cannot ask now raises
:class:`QuestionsPending` (or the bare :class:`InputRequired`, for the question it was
given); :func:`resolve` then carries on
with whatever does not depend on the unanswered question, and raises one
:class:`QuestionsPending` with every question it collected.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar, get_args, get_origin, get_type_hints, overload

from elicitkit._typing import unwrap_annotated
from elicitkit.elicitation.errors import ElicitationError, SchemaError
from elicitkit.elicitation.results import (
    AcceptedElicitation,
    CancelledElicitation,
    DeclinedElicitation,
    ElicitationResult,
)
from elicitkit.elicitation.schema import Form, form_for
from elicitkit.server.rounds.round import InputRequired
from elicitkit.server.tools import FunctionPlan, ParameterPlan, _is_context_type

if TYPE_CHECKING:
    from elicitkit.server.context import Context

T = TypeVar("T")

Asker = Callable[[str, "Elicit[Any]"], Awaitable[ElicitationResult[Any]]]
"""``await ask(key, elicit)``: put one question to the user and return the outcome, or raise."""


def _name(fn: Any) -> str:
    target = fn.func if isinstance(fn, functools.partial) else fn
    name = getattr(target, "__qualname__", None) or getattr(type(target), "__qualname__", repr(target))
    return f"{name}()"


class Resolve:
    """``Annotated[T, Resolve(fn)]``: fill this parameter by running ``fn`` before the body."""

    __slots__ = ("fn",)

    def __init__(self, fn: Callable[..., Any]) -> None:
        if not callable(fn):
            raise TypeError(f"Resolve() needs a function, not {fn!r}")
        self.fn = fn

    def __repr__(self) -> str:
        return f"Resolve({_name(self.fn)[:-2]})"


class Elicit(Generic[T]):
    """What a resolver returns to have the framework ask: a message and the answer's schema.

    ``schema`` is a flat pydantic model or a scalar type (``bool``, ``int``, ``Literal[...]``...),
    as for ``ctx.elicit``; it is rendered and gated now, so a schema outside the spec's subset
    raises :class:`~elicitkit.elicitation.errors.SchemaError` where the ``Elicit`` is built.
    ``timeout`` and ``max_attempts`` are passed on to the question (see ``Context.elicit``).
    """

    __slots__ = ("form", "max_attempts", "message", "schema", "timeout")

    @overload
    def __init__(
        self: Elicit[T], message: str, schema: type[T], *, timeout: float | None = None, max_attempts: int = 1
    ) -> None: ...

    @overload
    def __init__(
        self: Elicit[Any], message: str, schema: Any, *, timeout: float | None = None, max_attempts: int = 1
    ) -> None: ...

    def __init__(self, message: str, schema: Any, *, timeout: float | None = None, max_attempts: int = 1) -> None:
        if not isinstance(message, str):
            raise TypeError(f"Elicit(): the message must be a string, not {type(message).__name__}")
        if max_attempts < 1:
            raise ValueError("Elicit(): max_attempts must be at least 1")
        if isinstance(schema, dict):  # Elicit[M] types its answer: a model or a type, not a dict schema
            raise SchemaError([(None, "Elicit() takes a pydantic model or a scalar type; ask a dict with ctx.elicit")])
        try:
            form = form_for(schema)
        except SchemaError:
            raise
        except TypeError as exc:  # unhashable, so certainly not a model or a type
            raise SchemaError([(None, f"{schema!r} is neither a pydantic model nor a scalar type: {exc}")]) from None
        self.message = message
        self.schema: Any = schema
        self.form: Form = form
        self.timeout = timeout
        self.max_attempts = max_attempts

    def __repr__(self) -> str:
        shown = getattr(self.schema, "__name__", repr(self.schema))
        return f"Elicit({self.message!r}, {shown})"


class NotResolved(ElicitationError):
    """The user declined or cancelled a resolver's question, and the tool needs the answer itself.

    ``key`` names the question, ``outcome`` is what came back. The framework turns it into an
    ``isError`` result: ``"<tool>: the user declined: <question>"``.
    """

    def __init__(self, key: str, outcome: ElicitationResult[Any], question: str | None = None) -> None:
        self.key = key
        self.outcome = outcome
        self.question = question
        verb = "cancelled" if isinstance(outcome, CancelledElicitation) else "declined"
        text = f"the user {verb}: {question if question is not None else key}"
        if isinstance(outcome, DeclinedElicitation) and outcome.reason:
            text += f" ({outcome.reason})"
        super().__init__(text)


class QuestionsPending(InputRequired):
    """Raised by an asker that cannot ask now: the questions to return to the client, by key.

    :func:`resolve` keeps going with everything that does not depend on them and raises one
    ``QuestionsPending`` holding every question of the round. An :class:`InputRequired`, so
    (like every way of asking) user code's ``except Exception`` cannot stop it.
    """

    def __init__(self, questions: Mapping[str, Elicit[Any]]) -> None:
        # No message built here: a 2026 round raises two of these per question (the asker's and
        # resolve's) and nothing reads them but the scope; the text is made if one is shown.
        self.questions: dict[str, Elicit[Any]] = dict(questions)
        super().__init__()

    def __str__(self) -> str:
        return f"{len(self.questions)} question(s) pending: {', '.join(self.questions)}"


# ----------------------------------------------------------------------------- the graph


@dataclass(frozen=True, slots=True)
class Source:
    """Where one parameter of a resolver comes from."""

    parameter: str  # the resolver's parameter
    kind: Literal["argument", "resolved", "context"]
    name: str = ""  # the tool argument, or the key of the resolver node
    outcome: bool = False  # a resolved value delivered as the whole ElicitationResult


@dataclass(frozen=True, slots=True)
class ResolverNode:
    """One resolver, run once per call."""

    key: str  # the tool parameter it fills, or "<dependent>.<parameter>" for a nested dependency
    fn: Callable[..., Any]
    sources: tuple[Source, ...]
    strict: bool  # something needs the bare value: a decline or cancel ends the call


@dataclass(frozen=True, slots=True)
class Target:
    """A tool parameter filled from a resolver node."""

    parameter: str
    key: str
    outcome: bool  # annotated ElicitationResult[T]: the whole outcome


@dataclass(frozen=True, slots=True)
class ResolverGraph:
    """A tool's resolvers in dependency order, and which tool parameters they fill."""

    tool: str
    nodes: tuple[ResolverNode, ...]
    targets: tuple[Target, ...]
    takes_context: bool = True  # a resolver takes the Context (False: a call need make none for them)

    @property
    def keys(self) -> list[str]:
        return [node.key for node in self.nodes]


def _wants_outcome(annotation: Any) -> bool:
    """``ElicitationResult[T]`` (or bare ``ElicitationResult``): inject the whole outcome."""
    return (get_origin(annotation) or annotation) is ElicitationResult


def _marker(extras: list[Any], where: str) -> Resolve | None:
    markers = [x for x in extras if isinstance(x, Resolve)]
    if len(markers) > 1:
        raise TypeError(f"{where} has more than one Resolve(...)")
    return markers[0] if markers else None


def _hints(fn: Callable[..., Any]) -> dict[str, Any]:
    target: Any = fn
    if isinstance(fn, functools.partial):
        target = fn.func
    elif not (inspect.isfunction(fn) or inspect.ismethod(fn) or inspect.isbuiltin(fn)) and not inspect.isclass(fn):
        target = type(fn).__call__  # a callable object
    return get_type_hints(target, include_extras=True)


class _Builder:
    def __init__(self, tool: str, plan: FunctionPlan) -> None:
        self.tool = tool
        self.arguments = {p.name for p in plan.parameters if p.kind == "argument"}
        self.contexts = {p.name for p in plan.parameters if p.kind == "context"}
        self.resolved: dict[str, ParameterPlan] = {p.name: p for p in plan.parameters if p.kind == "resolved"}
        self.key_of: dict[Any, str] = {}  # resolver function -> node key (one node per function)
        self.fn_of: dict[str, Callable[..., Any]] = {}
        self.nodes: dict[str, ResolverNode] = {}  # finished nodes, in dependency order
        self.visiting: list[str] = []
        self.strict: set[str] = set()

    def where(self, key: str) -> str:
        return f"tool {self.tool!r}: resolver {_name(self.fn_of[key])} (for {key!r})"

    def node_for(self, fn: Callable[..., Any], key: str) -> str:
        """The key of ``fn``'s node; a function used twice is one node (it runs once)."""
        try:
            found = self.key_of.get(fn)
            hashable = True
        except TypeError:
            found, hashable = None, False
        if found is not None:
            return found
        if hashable:
            self.key_of[fn] = key
        self.fn_of[key] = fn
        return key

    def build(self) -> ResolverGraph:
        targets = []
        for name, param in self.resolved.items():
            marker = _marker(param.extras, f"tool {self.tool!r}: parameter {name!r}")
            assert marker is not None  # parameter_kind said so
            key = self.node_for(marker.fn, name)
            outcome = _wants_outcome(param.annotation)
            if not outcome:
                self.strict.add(key)
            targets.append(Target(name, key, outcome))
        for target in targets:
            self.visit(target.key)
        nodes = tuple(ResolverNode(n.key, n.fn, n.sources, n.key in self.strict) for n in self.nodes.values())
        takes_context = any(source.kind == "context" for node in nodes for source in node.sources)
        return ResolverGraph(self.tool, nodes, tuple(targets), takes_context)

    def visit(self, key: str) -> None:
        if key in self.nodes:
            return
        if key in self.visiting:
            cycle = [*self.visiting[self.visiting.index(key) :], key]
            path = " -> ".join(f"{k} ({_name(self.fn_of[k])})" for k in cycle)
            raise TypeError(f"tool {self.tool!r}: resolvers depend on each other in a cycle: {path}")
        self.visiting.append(key)
        sources = tuple(self.sources(key))
        self.visiting.pop()
        self.nodes[key] = ResolverNode(key, self.fn_of[key], sources, False)

    def sources(self, key: str) -> list[Source]:
        fn = self.fn_of[key]
        where = self.where(key)
        try:
            signature = inspect.signature(fn)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"{where}: cannot read its signature: {exc}") from None
        try:
            hints = _hints(fn)
        except Exception as exc:
            raise TypeError(f"{where}: cannot evaluate its annotations: {exc}") from None
        self.check_questions(where, hints.get("return"))
        sources: list[Source] = []
        for name, param in signature.parameters.items():
            if param.kind in (param.POSITIONAL_ONLY, param.VAR_POSITIONAL, param.VAR_KEYWORD):
                raise TypeError(f"{where}: parameter {name!r} cannot be passed by name; resolvers take keywords")
            base, extras = unwrap_annotated(hints.get(name, Any))
            outcome = _wants_outcome(base)
            marker = _marker(extras, f"{where}: parameter {name!r}")
            if marker is not None:  # a dependency of its own, not a tool parameter
                dependency = self.node_for(marker.fn, f"{key}.{name}")
                self.visit(dependency)
                sources.append(Source(name, "resolved", dependency, outcome))
            elif _is_context_type(base):
                sources.append(Source(name, "context"))
            elif name in self.arguments:
                sources.append(Source(name, "argument", name))
            elif name in self.resolved:
                other = _marker(self.resolved[name].extras, name)
                assert other is not None
                dependency = self.node_for(other.fn, name)
                self.visit(dependency)
                sources.append(Source(name, "resolved", dependency, outcome))
            elif name in self.contexts:
                sources.append(Source(name, "context"))
            elif param.default is not param.empty:
                continue  # nothing to give it: its default applies
            else:
                known = sorted(self.arguments | set(self.resolved))
                raise TypeError(
                    f"{where}: parameter {name!r} is neither an argument of the tool nor a resolved value "
                    f"(those are: {', '.join(known) or 'none'}), nor a Context"
                )
            if sources[-1].kind == "resolved" and not outcome:
                self.strict.add(sources[-1].name)
        return sources

    @staticmethod
    def check_questions(where: str, returns: Any) -> None:
        """``-> X | Elicit[M]``: render ``M`` now, so a bad form fails at registration, not mid-call."""
        for schema in _asked_schemas(returns):
            try:
                form_for(schema)
            except TypeError as exc:  # SchemaError is one; so is an unhashable "schema"
                shown = getattr(schema, "__name__", repr(schema))
                raise TypeError(f"{where}: it returns Elicit[{shown}], which cannot be asked: {exc}") from exc


def _asked_schemas(annotation: Any) -> list[Any]:
    """The ``M`` of every ``Elicit[M]`` in a return annotation (through unions and Awaitable)."""
    origin = get_origin(annotation)
    if origin is Elicit:
        args = get_args(annotation)
        return [args[0]] if args and args[0] is not Any and not isinstance(args[0], TypeVar) else []
    if origin is None:
        return []
    return [schema for arg in get_args(annotation) for schema in _asked_schemas(arg)]


def build_graph(tool: str, plan: FunctionPlan) -> ResolverGraph | None:
    """Check and order the resolvers of ``tool`` (None: it has none). Raises ``TypeError``."""
    if not any(p.kind == "resolved" for p in plan.parameters):
        return None
    return _Builder(tool, plan).build()


# ----------------------------------------------------------------------------- running it


async def resolve(
    graph: ResolverGraph, arguments: Mapping[str, Any], ctx: Context | None, ask: Asker
) -> dict[str, Any]:
    """Run every resolver of ``graph`` once, in order; the values of the tool's resolved parameters.

    ``arguments`` are the tool's validated arguments. A resolver's ``Elicit`` goes to
    ``await ask(key, elicit)``. Raises :class:`NotResolved` when a question that something
    needs the answer to was declined or cancelled (nothing after it runs), and
    :class:`QuestionsPending` when the asker deferred questions (everything that could run
    without their answers did).
    """
    outcomes: dict[str, ElicitationResult[Any]] = {}
    questions: dict[str, str] = {}
    pending: dict[str, Elicit[Any]] = {}
    blocked: set[str] = set()
    for node in graph.nodes:
        if blocked and any(s.kind == "resolved" and s.name in blocked for s in node.sources):
            blocked.add(node.key)
            continue
        kwargs: dict[str, Any] = {}
        for source in node.sources:
            if source.kind == "argument":
                kwargs[source.parameter] = arguments[source.name]
            elif source.kind == "context":
                kwargs[source.parameter] = ctx
            else:
                outcome = outcomes[source.name]
                kwargs[source.parameter] = outcome if source.outcome else _data(outcome)
        produced = node.fn(**kwargs)
        if type(produced) is not Elicit and inspect.isawaitable(produced):  # (Elicit: no ABC check)
            produced = await produced
        if isinstance(produced, Elicit):
            try:
                outcome = await ask(node.key, produced)
            except QuestionsPending as exc:
                pending.update(exc.questions)
                blocked.add(node.key)
                continue
            except InputRequired:  # the asker noted this very question in the round (context_asker)
                pending[node.key] = produced
                blocked.add(node.key)
                continue
            questions[node.key] = produced.message
        elif isinstance(produced, ElicitationResult):
            outcome = produced
        else:
            outcome = AcceptedElicitation(data=produced)
        if node.strict and not isinstance(outcome, AcceptedElicitation):
            raise NotResolved(node.key, outcome, questions.get(node.key))
        outcomes[node.key] = outcome
    if pending:
        raise QuestionsPending(pending)
    return {t.parameter: outcomes[t.key] if t.outcome else _data(outcomes[t.key]) for t in graph.targets}


def _data(outcome: ElicitationResult[Any]) -> Any:
    assert isinstance(outcome, AcceptedElicitation)  # strict nodes were checked as they resolved
    return outcome.data


def context_asker(ctx: Context) -> Asker:
    """Ask through ``ctx.elicit``: mid-call on a handshake connection, by round trips on 2026.

    On 2026 the question is noted in the round and :class:`InputRequired` comes back through
    :func:`resolve`, which gathers it with the rest: no second exception made here to say so.
    A plain function handing back ``ctx.elicit``'s coroutine, so no frame of ours waits in it."""

    def ask(key: str, elicit: Elicit[Any]) -> Awaitable[ElicitationResult[Any]]:
        return ctx.elicit(
            elicit.message, elicit.schema, timeout=elicit.timeout, max_attempts=elicit.max_attempts, key=key
        )

    return ask
