"""Tools from plain functions: signature -> input schema, return type -> output schema.

The type hints are the single source of truth. Parameters become a pydantic model (so
``Annotated[..., Field(...)]``, defaults, nested models and ``$defs`` all work and the schema
is JSON Schema 2020-12); parameters typed as :class:`~elicitkit.server.context.Context` are
injected and never appear in the schema. Arguments are validated before the body runs.
"""

from __future__ import annotations

import functools
import inspect
import types
import typing
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, get_args, get_origin, get_type_hints

import anyio
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, create_model
from pydantic.fields import FieldInfo

from elicitkit._typing import unwrap_annotated
from elicitkit.errors import ElicitkitError
from elicitkit.server.content import CONTENT_TYPES, to_content, to_json_text
from elicitkit.server.context import Context
from elicitkit.server.docstrings import describe

if TYPE_CHECKING:
    from elicitkit.server.resolvers import ResolverGraph


class ToolError(ElicitkitError):
    """Raise inside a tool to answer with ``isError: true`` and this message."""


@dataclass(slots=True)
class ToolResult:
    """Full control over a tool's answer: content blocks, structured content, error flag."""

    content: list[Any] = field(default_factory=list)
    structured: dict[str, Any] | None = None
    is_error: bool = False

    def to_wire(self) -> dict[str, Any]:
        blocks: list[dict[str, Any]] = []
        for item in self.content:
            blocks.extend(to_content(item) if not isinstance(item, dict) else [item])
        result: dict[str, Any] = {"content": blocks}
        if self.structured is not None:
            result["structuredContent"] = self.structured
        if self.is_error:
            result["isError"] = True
        return result


class _Arguments(BaseModel):
    model_config = ConfigDict(extra="ignore", arbitrary_types_allowed=True)


def _is_context_type(annotation: Any) -> bool:
    """``Context``, a subclass, or ``Context | None``."""
    origin = get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        members = [a for a in get_args(annotation) if a is not type(None)]
        return bool(members) and all(_is_context_type(a) for a in members)
    target = origin or annotation
    return inspect.isclass(target) and issubclass(target, Context)


# Return annotations that mean "content, not data": no output schema for these.
def _is_content_annotation(annotation: Any) -> bool:
    if annotation in (None, type(None), str, inspect.Signature.empty, Any):
        return True
    if inspect.isclass(annotation) and (issubclass(annotation, CONTENT_TYPES) or issubclass(annotation, ToolResult)):
        return True
    origin = get_origin(annotation)
    if origin in (list, tuple, typing.Union, types.UnionType):
        return any(_is_content_annotation(arg) for arg in get_args(annotation) if arg is not type(None))
    return False


def _is_object_schema(schema: dict[str, Any]) -> bool:
    return schema.get("type") == "object" or ("properties" in schema and "type" not in schema)


@dataclass
class ParameterPlan:
    """How to fill one function parameter: from arguments, the context, or a resolver."""

    name: str
    kind: str  # "argument" | "context" | "resolved"
    annotation: Any = None
    extras: list[Any] = field(default_factory=list)


@dataclass
class FunctionPlan:
    """What the framework learned from a function's signature, shared by tools and prompts."""

    fn: Callable[..., Any]
    parameters: list[ParameterPlan]
    arguments_model: type[BaseModel]
    description: str | None
    return_annotation: Any

    @functools.cached_property
    def is_async(self) -> bool:
        return inspect.iscoroutinefunction(self.fn)

    @functools.cached_property
    def takes_context(self) -> bool:
        """A parameter typed ``Context``: without one, a call makes no Context for the body."""
        return any(param.kind == "context" for param in self.parameters)

    @functools.cached_property
    def _validate_python(self) -> Callable[[Any], BaseModel]:
        # What ``model_validate`` calls, read once: its wrapper's keyword checks cost about as
        # much as validating a small call's arguments.
        validate: Callable[[Any], BaseModel] = self.arguments_model.__pydantic_validator__.validate_python
        return validate

    def validate(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Arguments -> validated keyword values; raises pydantic's ValidationError."""
        # The model's own fields are its ``__dict__`` (extras and private attributes live apart),
        # by field name: a copy of it is the values, without a getattr per field.
        return dict(self._validate_python(arguments).__dict__)

    def invoke(self, values: dict[str, Any], *, thread: bool = False) -> Awaitable[Any]:
        """Call the function (await the result). An async function's own coroutine comes back
        as is: no frame of ours stays around it while it runs (or waits for a person)."""
        if self.is_async:
            return self.fn(**values)  # type: ignore[no-any-return]
        return self._invoke_sync(values, thread)

    async def _invoke_sync(self, values: dict[str, Any], thread: bool) -> Any:
        if thread:
            # abandon_on_cancel: a timeout or cancellation answers now; the thread finishes alone.
            return await anyio.to_thread.run_sync(lambda: self.fn(**values), abandon_on_cancel=True)
        outcome = self.fn(**values)
        if inspect.isawaitable(outcome):
            return await outcome
        return outcome


def plan_function(
    fn: Callable[..., Any], *, model_name: str, extra_kinds: Callable[[Any, list[Any]], str | None] | None = None
) -> FunctionPlan:
    """Inspect ``fn`` once: which parameters are arguments, which are injected."""
    signature = inspect.signature(fn)
    hints = get_type_hints(fn, include_extras=True)
    doc = describe(fn)
    fields: dict[str, Any] = {}
    plans: list[ParameterPlan] = []
    for name, param in signature.parameters.items():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise TypeError(f"{fn.__qualname__}: *args/**kwargs cannot be described to a client")
        annotation = hints.get(name, Any)
        base, extras = unwrap_annotated(annotation)
        if _is_context_type(base):
            plans.append(ParameterPlan(name, "context", base, extras))
            continue
        special = extra_kinds(base, extras) if extra_kinds is not None else None
        if special is not None:
            plans.append(ParameterPlan(name, special, base, extras))
            continue
        plans.append(ParameterPlan(name, "argument", annotation, extras))
        default: Any = ... if param.default is inspect.Parameter.empty else param.default
        description = doc.params.get(name)
        has_field = any(isinstance(x, FieldInfo) for x in extras)
        if description and not has_field and not isinstance(default, FieldInfo):
            fields[name] = (annotation, Field(default, description=description))
        else:
            fields[name] = (annotation, default)
    model = create_model(model_name, __base__=_Arguments, **fields)
    return FunctionPlan(fn, plans, model, doc.summary, hints.get("return", inspect.Signature.empty))


def input_schema_of(model: type[BaseModel]) -> dict[str, Any]:
    schema = model.model_json_schema()
    schema.pop("title", None)
    schema.setdefault("properties", {})
    return schema


@dataclass
class OutputPlan:
    schema: dict[str, Any] | None
    wrapped: bool
    adapter: TypeAdapter[Any] | None


def plan_output(annotation: Any, structured: bool | None) -> OutputPlan:
    if structured is False or (structured is None and _is_content_annotation(annotation)):
        return OutputPlan(None, False, None)
    if annotation is inspect.Signature.empty:
        return OutputPlan(None, False, None)
    adapter: TypeAdapter[Any] = TypeAdapter(annotation)
    schema = adapter.json_schema(mode="serialization")
    if _is_object_schema(schema) and schema.get("additionalProperties", False) is not True:
        schema.pop("title", None)
        return OutputPlan(schema, False, adapter)
    defs = schema.pop("$defs", None)
    wrapped: dict[str, Any] = {"type": "object", "properties": {"result": schema}, "required": ["result"]}
    if defs:
        wrapped["$defs"] = defs
    return OutputPlan(wrapped, True, adapter)


@dataclass
class Tool:
    """A registered tool."""

    name: str
    plan: FunctionPlan
    output: OutputPlan
    title: str | None = None
    description: str | None = None
    annotations: dict[str, Any] | None = None
    meta: dict[str, Any] | None = None
    timeout: float | None = None
    thread: bool = False
    input_schema: dict[str, Any] = field(default_factory=dict)
    resolvers: ResolverGraph | None = None  # parameters filled by Resolve(...), in dependency order

    def definition(self) -> dict[str, Any]:
        tool: dict[str, Any] = {"name": self.name, "inputSchema": self.input_schema}
        if self.title:
            tool["title"] = self.title
        if self.description:
            tool["description"] = self.description
        if self.output.schema is not None:
            tool["outputSchema"] = self.output.schema
        if self.annotations:
            tool["annotations"] = self.annotations
        if self.meta:
            tool["_meta"] = self.meta
        return tool

    def render(self, value: Any) -> dict[str, Any]:
        """The tool's return value as a ``CallToolResult``."""
        if isinstance(value, ToolResult):
            return value.to_wire()
        if self.output.adapter is None:
            return {"content": to_content(value)}
        data = self.output.adapter.dump_python(value, mode="json", by_alias=True)
        structured = {"result": data} if self.output.wrapped else data
        return {"content": [{"type": "text", "text": to_json_text(data)}], "structuredContent": structured}


def make_tool(
    fn: Callable[..., Any],
    *,
    name: str | None = None,
    title: str | None = None,
    description: str | None = None,
    annotations: dict[str, Any] | None = None,
    meta: dict[str, Any] | None = None,
    structured_output: bool | None = None,
    timeout: float | None = None,
    thread: bool = False,
    extra_kinds: Callable[[Any, list[Any]], str | None] | None = None,
) -> Tool:
    tool_name = name or fn.__name__
    plan = plan_function(fn, model_name=f"{tool_name}_arguments", extra_kinds=extra_kinds)
    tool = Tool(
        name=tool_name,
        plan=plan,
        output=plan_output(plan.return_annotation, structured_output),
        title=title,
        description=description if description is not None else plan.description,
        annotations=annotations,
        meta=meta,
        timeout=timeout,
        thread=thread,
    )
    tool.input_schema = input_schema_of(plan.arguments_model)
    return tool


def describe_validation_error(exc: ValidationError) -> str:
    """Pydantic's errors as one line a person can act on: ``a: Input should be a valid integer``."""
    parts = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "arguments"
        parts.append(f"{where}: {err['msg']}")
    return "; ".join(parts)
