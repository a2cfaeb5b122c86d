"""Resources: fixed URIs and RFC 6570 templates, each backed by a function."""

from __future__ import annotations

import base64
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from elicitkit.server.content import EmbeddedResource, to_json_text
from elicitkit.server.tools import FunctionPlan, plan_function
from elicitkit.server.uri_templates import UriMatcher


def render_contents(uri: str, value: Any, mime_type: str | None) -> list[dict[str, Any]]:
    """A resource function's return value as ``ReadResourceResult.contents``."""
    if isinstance(value, EmbeddedResource):
        return [value.contents()]
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, EmbeddedResource) for v in value):
        return [v.contents() for v in value]
    item: dict[str, Any] = {"uri": uri}
    if isinstance(value, (bytes, bytearray)):
        item["mimeType"] = mime_type or "application/octet-stream"
        item["blob"] = base64.b64encode(bytes(value)).decode("ascii")
        return [item]
    if isinstance(value, str):
        item["mimeType"] = mime_type or "text/plain"
        item["text"] = value
        return [item]
    item["mimeType"] = mime_type or "application/json"
    item["text"] = value.model_dump_json() if isinstance(value, BaseModel) else to_json_text(value)
    return [item]


@dataclass
class _Described:
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    annotations: dict[str, Any] | None = None
    meta: dict[str, Any] | None = None

    def _common(self, out: dict[str, Any]) -> dict[str, Any]:
        out["name"] = self.name
        if self.title:
            out["title"] = self.title
        if self.description:
            out["description"] = self.description
        if self.mime_type:
            out["mimeType"] = self.mime_type
        if self.annotations:
            out["annotations"] = self.annotations
        if self.meta:
            out["_meta"] = self.meta
        return out


@dataclass
class Resource(_Described):
    """A resource at one fixed URI."""

    uri: str = ""
    plan: FunctionPlan | None = None
    size: int | None = None

    def definition(self) -> dict[str, Any]:
        out = self._common({"uri": self.uri})
        if self.size is not None:
            out["size"] = self.size
        return out


@dataclass
class ResourceTemplate(_Described):
    """A family of resources: ``users://{id}/profile`` answers for every ``id``."""

    uri_template: str = ""
    plan: FunctionPlan | None = None
    matcher: UriMatcher = field(init=False)

    def __post_init__(self) -> None:
        self.matcher = UriMatcher(self.uri_template)

    def definition(self) -> dict[str, Any]:
        return self._common({"uriTemplate": self.uri_template})


def make_resource(fn: Callable[..., Any], uri: str, **info: Any) -> Resource | ResourceTemplate:
    """A fixed resource, or a template when ``uri`` has ``{variables}``."""
    name = info.pop("name", None) or fn.__name__
    plan = plan_function(fn, model_name=f"{name}_resource_arguments")
    if info.get("description") is None:
        info["description"] = plan.description
    argument_names = {p.name for p in plan.parameters if p.kind == "argument"}
    if "{" not in uri:
        if argument_names:
            raise TypeError(
                f"resource {uri!r}: a fixed URI passes no arguments, but {fn.__name__} takes {argument_names}"
            )
        return Resource(name=name, uri=uri, plan=plan, **info)
    template = ResourceTemplate(name=name, uri_template=uri, plan=plan, **info)
    variables = set(template.matcher.variables)
    if argument_names != variables:
        raise TypeError(
            f"resource template {uri!r} has variables {sorted(variables)}"
            f" but {fn.__name__} takes {sorted(argument_names)}"
        )
    return template
