"""Content a tool or prompt can return, and the one function that turns return values into blocks.

Return a ``str`` for text, an :class:`Image` / :class:`Audio` for media, an
:class:`EmbeddedResource` or :class:`ResourceLink` for resources, or a list mixing them.
"""

from __future__ import annotations

import base64
import mimetypes
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from pydantic import BaseModel


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


@dataclass(slots=True)
class Text:
    text: str
    annotations: dict[str, Any] | None = None

    def to_wire(self) -> dict[str, Any]:
        block: dict[str, Any] = {"type": "text", "text": self.text}
        if self.annotations:
            block["annotations"] = self.annotations
        return block


@dataclass(slots=True)
class _Media:
    data: bytes | None = None
    path: str | Path | None = None
    mime_type: str | None = None
    _kind: str = field(default="image", repr=False)

    def _bytes_and_type(self, fallback: str) -> tuple[bytes, str]:
        if self.data is not None:
            return self.data, self.mime_type or fallback
        if self.path is None:
            raise ValueError(f"{type(self).__name__} needs data or a path")
        path = Path(self.path)
        return path.read_bytes(), self.mime_type or mimetypes.guess_type(path.name)[0] or fallback


class Image(_Media):
    """An image, from bytes (``Image(data=png, mime_type="image/png")``) or a file (``Image(path=...)``)."""

    def to_wire(self) -> dict[str, Any]:
        data, mime = self._bytes_and_type("image/png")
        return {"type": "image", "data": _b64(data), "mimeType": mime}


class Audio(_Media):
    """Audio, from bytes or a file."""

    def to_wire(self) -> dict[str, Any]:
        data, mime = self._bytes_and_type("audio/wav")
        return {"type": "audio", "data": _b64(data), "mimeType": mime}


@dataclass(slots=True)
class EmbeddedResource:
    """A resource's contents inline: give ``text`` or ``blob`` (bytes)."""

    uri: str
    text: str | None = None
    blob: bytes | None = None
    mime_type: str | None = None

    def contents(self) -> dict[str, Any]:
        item: dict[str, Any] = {"uri": self.uri}
        if self.mime_type:
            item["mimeType"] = self.mime_type
        if self.blob is not None:
            item["blob"] = _b64(self.blob)
        else:
            item["text"] = self.text or ""
        return item

    def to_wire(self) -> dict[str, Any]:
        return {"type": "resource", "resource": self.contents()}


@dataclass(slots=True)
class ResourceLink:
    uri: str
    name: str
    description: str | None = None
    mime_type: str | None = None

    def to_wire(self) -> dict[str, Any]:
        block: dict[str, Any] = {"type": "resource_link", "uri": self.uri, "name": self.name}
        if self.description:
            block["description"] = self.description
        if self.mime_type:
            block["mimeType"] = self.mime_type
        return block


ContentLike = Text | Image | Audio | EmbeddedResource | ResourceLink
CONTENT_TYPES = (Text, Image, Audio, EmbeddedResource, ResourceLink)


def to_json_text(value: Any) -> str:
    """Structured data as compact, readable JSON text."""
    if isinstance(value, BaseModel):
        return value.model_dump_json(by_alias=True)
    return orjson.dumps(value, default=_default).decode()


def _default(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True)
    if isinstance(value, (set, frozenset)):
        return list(value)
    return str(value)


def to_content(value: Any) -> list[dict[str, Any]]:
    """Whatever a tool returned, as a list of content blocks."""
    if value is None:
        return []
    if isinstance(value, str):
        return [{"type": "text", "text": value}]
    if isinstance(value, CONTENT_TYPES):
        return [value.to_wire()]
    if isinstance(value, (list, tuple)) and any(isinstance(v, (str, *CONTENT_TYPES)) for v in value):
        blocks: list[dict[str, Any]] = []
        for item in value:
            blocks.extend(to_content(item))
        return blocks
    return [{"type": "text", "text": to_json_text(value)}]


def error_result(message: str) -> dict[str, Any]:
    """A tool result that reports a failure to the model (``isError``), not a protocol error."""
    return {"content": [{"type": "text", "text": message}], "isError": True}
