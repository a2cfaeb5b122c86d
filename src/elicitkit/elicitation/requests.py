"""The two kinds of question, as values: :class:`FormRequest` and :class:`UrlRequest`.

Servers build them and turn them into ``elicitation/create`` params for the client's version;
clients parse incoming params back into them (through the same schema gate) and hand them to
the handler, together with who is asking (:class:`Origin`).
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any
from urllib.parse import urlsplit

from elicitkit.elicitation.errors import ElicitationError, SchemaError
from elicitkit.elicitation.schema import check_schema, for_version
from elicitkit.protocol.versions import LATEST_LEGACY, names_url_elicitations, supports_url_elicitation


class ElicitationMode(StrEnum):
    FORM = "form"
    URL = "url"


@dataclass(frozen=True, slots=True)
class Origin:
    """Which server is asking, for the person deciding whether to answer."""

    name: str = "unknown server"
    version: str | None = None
    title: str | None = None
    location: str | None = None  # the command line or URL the client connected to

    @property
    def display_name(self) -> str:
        return self.title or self.name


@dataclass(frozen=True, slots=True)
class FormRequest:
    """Ask for structured data: a message and a flat ``requested_schema``."""

    message: str
    requested_schema: dict[str, Any]
    origin: Origin | None = field(default=None, compare=False)

    @property
    def mode(self) -> ElicitationMode:
        return ElicitationMode.FORM

    def to_params(self, version: str = LATEST_LEGACY) -> dict[str, Any]:
        """``elicitation/create`` params for a client speaking ``version`` (gated for it).

        A root ``title`` / ``description`` (what :func:`create_form_request` puts there for
        elicitkit's own handlers) is left out: the spec's ``requestedSchema`` root has neither.
        """
        schema = self.requested_schema
        if "title" in schema or "description" in schema:
            schema = {k: v for k, v in schema.items() if k not in _ROOT_ANNOTATIONS}
        return form_params(self.message, for_version(schema, version), version)

    def to_dict(self) -> dict[str, Any]:
        return {"mode": "form", "message": self.message, "requestedSchema": self.requested_schema}


def form_params(message: str, gated: dict[str, Any], version: str) -> dict[str, Any]:
    """``elicitation/create`` params for a schema already gated for ``version``
    (:meth:`~elicitkit.elicitation.schema.Form.schema_for`, memoized): the server gates once."""
    params: dict[str, Any] = {"message": message, "requestedSchema": gated}
    if supports_url_elicitation(version):
        params["mode"] = "form"
    return params


@dataclass(frozen=True, slots=True)
class UrlRequest:
    """Send the person to ``url``; nothing they do there passes through the protocol."""

    message: str
    url: str
    elicitation_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    origin: Origin | None = field(default=None, compare=False)
    # Client side: set by the client when the server will send a completion notice for this id.
    completion: Callable[[float | None], Awaitable[bool]] | None = field(default=None, compare=False, repr=False)
    # Client side: the message of the -32042 error this URL came in (why the server needs it), so
    # a handler can say it before asking for consent; None for a URL asked with elicitation/create.
    reason: str | None = field(default=None, compare=False)

    @property
    def mode(self) -> ElicitationMode:
        return ElicitationMode.URL

    @property
    def notifies_completion(self) -> bool:
        """True when the server will announce that the person finished at the URL."""
        return self.completion is not None

    async def wait_complete(self, timeout: float | None = None) -> bool:
        """Client side: wait for the server's completion notice; False on timeout or when none will come."""
        if self.completion is None:
            return False
        return await self.completion(timeout)

    @property
    def domain(self) -> str:
        return urlsplit(self.url).hostname or ""

    def to_params(self, version: str = LATEST_LEGACY) -> dict[str, Any]:
        params: dict[str, Any] = {"mode": "url", "message": self.message, "url": self.url}
        if names_url_elicitations(version):
            params["elicitationId"] = self.elicitation_id
        return params

    def to_dict(self) -> dict[str, Any]:
        return {"message": self.message, "mode": "url", "url": self.url, "elicitationId": self.elicitation_id}


ElicitRequest = FormRequest | UrlRequest


_ROOT_ANNOTATIONS = ("title", "description")


class InvalidRequest(ElicitationError, ValueError):
    """Incoming ``elicitation/create`` params that are not a valid question."""


def parse_request(params: Any, *, version: str = LATEST_LEGACY, origin: Origin | None = None) -> ElicitRequest:
    """Client side: params -> a request value; the schema passes the gate (lenient on annotations)."""
    if not isinstance(params, dict):
        raise InvalidRequest("elicitation/create params must be an object")
    message = params.get("message")
    if not isinstance(message, str):
        raise InvalidRequest("elicitation/create needs a string message")
    mode = params.get("mode", "form")
    if mode == "url":
        url = params.get("url")
        if not isinstance(url, str) or not urlsplit(url).scheme or not urlsplit(url).netloc:
            raise InvalidRequest(f"URL elicitation needs an absolute url, got {url!r}")
        elicitation_id = params.get("elicitationId")
        if elicitation_id is not None and not isinstance(elicitation_id, str):
            raise InvalidRequest("elicitationId must be a string")
        return UrlRequest(message, url, elicitation_id or "", origin)
    if mode != "form":
        raise InvalidRequest(f"unknown elicitation mode {mode!r}")
    schema = params.get("requestedSchema")
    try:
        check_schema(schema, version, strict=False)
    except SchemaError as exc:
        raise InvalidRequest(str(exc)) from None
    except Exception as exc:  # never let a hostile schema surface as an internal error (-32603)
        raise InvalidRequest(f"invalid elicitation schema: it cannot be checked ({type(exc).__name__})") from None
    assert isinstance(schema, dict)
    return FormRequest(message, schema, origin)


def with_origin(request: ElicitRequest, origin: Origin) -> ElicitRequest:
    return replace(request, origin=origin)


# -- seed-000 style builders ----------------------------------------------------------------


def create_form_request(
    message: str,
    properties: dict[str, Any],
    required: list[str] | None = None,
    title: str | None = None,
) -> FormRequest:
    """Build a form question from property schemas; the schema gate runs here.

    ``title`` is shown by elicitkit's handlers when they are handed the request directly; it is
    never sent (:meth:`FormRequest.to_params` leaves it out: the spec's schema root has no title).
    """
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = list(required)
    check_schema(schema)
    if title:
        schema["title"] = title
    return FormRequest(message, schema)


def create_url_request(message: str, url: str, elicitation_id: str | None = None) -> UrlRequest:
    """Build a URL question (a fresh id when none is given)."""
    parsed = urlsplit(url)
    if not parsed.scheme or not parsed.netloc:
        raise ValueError(f"not an absolute URL: {url!r}")
    return UrlRequest(message, url, elicitation_id or uuid.uuid4().hex)
