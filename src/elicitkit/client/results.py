"""Typed views of the MCP results a :class:`~elicitkit.Client` returns.

The wire stays a dict inside the library; these models are built once, at the edge, when a
result is handed to user code. Unknown fields are kept (``extra="allow"``) so nothing a newer
server sends is lost, and ``.raw`` style access is always possible through ``model_dump``.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag
from pydantic.alias_generators import to_camel


class WireModel(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="allow")

    meta: dict[str, Any] | None = Field(default=None, alias="_meta")

    def to_wire(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True, exclude_none=True, mode="json")


class Implementation(WireModel):
    name: str
    version: str
    title: str | None = None


class TextContent(WireModel):
    type: Literal["text"] = "text"
    text: str


class ImageContent(WireModel):
    type: Literal["image"] = "image"
    data: str
    mime_type: str


class AudioContent(WireModel):
    type: Literal["audio"] = "audio"
    data: str
    mime_type: str


class TextResourceContents(WireModel):
    uri: str
    mime_type: str | None = None
    text: str


class BlobResourceContents(WireModel):
    uri: str
    mime_type: str | None = None
    blob: str


def _contents_kind(value: Any) -> str:
    if isinstance(value, dict):
        return "blob" if "blob" in value else "text"
    return "blob" if hasattr(value, "blob") else "text"


ResourceContents = Annotated[
    Annotated[TextResourceContents, Tag("text")] | Annotated[BlobResourceContents, Tag("blob")],
    Discriminator(_contents_kind),
]


class EmbeddedResource(WireModel):
    type: Literal["resource"] = "resource"
    resource: ResourceContents


class ResourceLink(WireModel):
    type: Literal["resource_link"] = "resource_link"
    uri: str
    name: str
    mime_type: str | None = None
    description: str | None = None


class UnknownContent(WireModel):
    """A content block of a type this version does not know; its fields are kept as extras."""

    type: str


_CONTENT_TYPES = {"text", "image", "audio", "resource", "resource_link"}


def _content_kind(value: Any) -> str:
    kind = value.get("type") if isinstance(value, dict) else getattr(value, "type", None)
    return kind if kind in _CONTENT_TYPES else "unknown"


ContentBlock = Annotated[
    Annotated[TextContent, Tag("text")]
    | Annotated[ImageContent, Tag("image")]
    | Annotated[AudioContent, Tag("audio")]
    | Annotated[EmbeddedResource, Tag("resource")]
    | Annotated[ResourceLink, Tag("resource_link")]
    | Annotated[UnknownContent, Tag("unknown")],
    Discriminator(_content_kind),
]


class Tool(WireModel):
    name: str
    title: str | None = None
    description: str | None = None
    input_schema: dict[str, Any] = Field(default_factory=lambda: {"type": "object"})
    output_schema: dict[str, Any] | None = None
    annotations: dict[str, Any] | None = None


class ListToolsResult(WireModel):
    tools: list[Tool]
    next_cursor: str | None = None


class CallToolResult(WireModel):
    content: list[ContentBlock] = Field(default_factory=list)
    structured_content: dict[str, Any] | None = None
    is_error: bool = False

    @property
    def text(self) -> str:
        """All text blocks joined: the common case of a tool that answers in words."""
        return "\n".join(block.text for block in self.content if isinstance(block, TextContent))


class Resource(WireModel):
    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    size: int | None = None


class ResourceTemplate(WireModel):
    uri_template: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None


class ListResourcesResult(WireModel):
    resources: list[Resource]
    next_cursor: str | None = None


class ListResourceTemplatesResult(WireModel):
    resource_templates: list[ResourceTemplate]
    next_cursor: str | None = None


class ReadResourceResult(WireModel):
    contents: list[ResourceContents]


class PromptArgument(WireModel):
    name: str
    description: str | None = None
    required: bool | None = None


class Prompt(WireModel):
    name: str
    title: str | None = None
    description: str | None = None
    arguments: list[PromptArgument] | None = None


class ListPromptsResult(WireModel):
    prompts: list[Prompt]
    next_cursor: str | None = None


class PromptMessage(WireModel):
    role: Literal["user", "assistant"]
    content: ContentBlock


class GetPromptResult(WireModel):
    description: str | None = None
    messages: list[PromptMessage]


class Completion(WireModel):
    values: list[str]
    total: int | None = None
    has_more: bool | None = None


class CompleteResult(WireModel):
    completion: Completion
