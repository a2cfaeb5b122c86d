"""The 2026-07-28 era without I/O: the per-request envelope, HTTP header rules, result types.

In this era there is no handshake: every request carries the protocol version, the client's
capabilities and (should) its identity in ``params._meta``; over HTTP the version, the method
and the target name are mirrored into headers (plus ``Mcp-Param-*`` for tool arguments whose
schema says ``x-mcp-header``). Servers check all of it per request, in a fixed order; both
sides share the encoding rules here.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from elicitkit._frozen import frozen_builder
from elicitkit.errors import ElicitkitError
from elicitkit.protocol.errors import (
    HEADER_MISMATCH,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    RESOURCE_NOT_FOUND,
    UNSUPPORTED_PROTOCOL_VERSION,
    MCPError,
)
from elicitkit.protocol.versions import (
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_PROTOCOL_VERSION,
    MODERN_VERSIONS,
)

RESULT_COMPLETE = "complete"
RESULT_INPUT_REQUIRED = "input_required"

# The 2026 method a client opens with instead of initialize.
DISCOVER = "server/discover"
# What a server may ask of a client, embedded in an InputRequiredResult's inputRequests.
ELICIT = "elicitation/create"
SAMPLE = "sampling/createMessage"
LIST_ROOTS = "roots/list"
INPUT_METHODS = frozenset({ELICIT, SAMPLE, LIST_ROOTS})
# Params of a retried request that belong to the round, not to the call being made.
RESERVED_PARAMS = frozenset({"_meta", "inputResponses", "requestState"})

# Handshake-era methods a 2026 server answers with -32601.
REMOVED_METHODS = frozenset({"initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe"})
REMOVED_NOTIFICATIONS = frozenset({"notifications/initialized", "notifications/roots/list_changed"})
# Methods whose results may be an InputRequiredResult.
MRTR_METHODS = frozenset({"tools/call", "prompts/get", "resources/read"})
# Methods whose target travels in Mcp-Name (and is bound into requestState), and the param holding it.
# tasks/*: the Tasks extension's routing header (protocol.tasks.NAME_PARAM, kept equal by a test).
NAME_PARAM = {
    "tools/call": "name",
    "prompts/get": "name",
    "resources/read": "uri",
    "tasks/get": "taskId",
    "tasks/update": "taskId",
    "tasks/cancel": "taskId",
}

_B64_PREFIX = "=?base64?"
_B64_SUFFIX = "?="
_TOKEN = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")


# ----------------------------------------------------------------------------- envelope


@dataclass(frozen=True, slots=True)
class Envelope:
    """What a 2026 request says about its client."""

    protocol_version: str
    client_capabilities: dict[str, Any]
    client_info: dict[str, Any] = field(default_factory=dict)
    log_level: str | None = None


def wrap(params: dict[str, Any] | None, envelope: Envelope) -> dict[str, Any]:
    """``params`` with the envelope in ``_meta`` (a copy; the caller's dict is untouched)."""
    out = dict(params or {})
    meta = dict(out.get("_meta") or {})
    meta[META_PROTOCOL_VERSION] = envelope.protocol_version
    own = meta.get(META_CLIENT_CAPABILITIES)
    # A request's own capabilities (say, the Tasks extension for one call) win over the defaults.
    meta[META_CLIENT_CAPABILITIES] = (
        envelope.client_capabilities if not isinstance(own, dict) else {**envelope.client_capabilities, **own}
    )
    if envelope.client_info:
        meta[META_CLIENT_INFO] = envelope.client_info
    if envelope.log_level is not None:
        meta[META_LOG_LEVEL] = envelope.log_level
    out["_meta"] = meta
    return out


def has_envelope(params: Any) -> bool:
    """Whether a request carries a 2026 envelope (the routing test for dual-era servers)."""
    if not isinstance(params, dict):
        return False
    meta = params.get("_meta")
    return isinstance(meta, dict) and META_PROTOCOL_VERSION in meta


def read_envelope(params: Any) -> Envelope:
    """The envelope of a request; -32602 when ``_meta`` or a required key is missing or malformed."""
    meta = params.get("_meta") if isinstance(params, dict) else None
    if not isinstance(meta, dict):
        raise MCPError(INVALID_PARAMS, "missing params._meta: 2026-07-28 requests carry their envelope there")
    version = meta.get(META_PROTOCOL_VERSION)
    if not isinstance(version, str):
        raise MCPError(INVALID_PARAMS, f"missing _meta[{META_PROTOCOL_VERSION!r}]")
    caps = meta.get(META_CLIENT_CAPABILITIES)
    if not isinstance(caps, dict):
        raise MCPError(INVALID_PARAMS, f"missing _meta[{META_CLIENT_CAPABILITIES!r}] (an object; {{}} for none)")
    info = meta.get(META_CLIENT_INFO)
    level = meta.get(META_LOG_LEVEL)
    return _envelope(version, caps, info if isinstance(info, dict) else {}, level if isinstance(level, str) else None)


# ``Envelope(version, caps, info, level)``, made quicker (every 2026 request reads its envelope).
_envelope: Callable[[str, dict[str, Any], dict[str, Any], str | None], Envelope] = frozen_builder(Envelope)


def check_version(version: str, supported: tuple[str, ...] = MODERN_VERSIONS) -> None:
    if version not in supported:
        raise MCPError(
            UNSUPPORTED_PROTOCOL_VERSION,
            f"protocol version {version!r} is not supported",
            {"supported": list(supported), "requested": version},
        )


def speaks_modern(version: object) -> bool:
    """True for a 2026-era version this library speaks (an unknown future date is not one)."""
    return version in MODERN_VERSIONS


def mutual_version(preferred: str, supported: object) -> str | None:
    """The 2026 version to speak with a server that lists ``supported`` (ours first), or None."""
    if not isinstance(supported, list):
        return None
    if preferred in supported:
        return preferred
    return next((v for v in MODERN_VERSIONS if v in supported), None)


def check_method(method: str) -> None:
    if method in REMOVED_METHODS:
        raise MCPError(METHOD_NOT_FOUND, f"Method not found: {method} (removed in 2026-07-28)")


def as_modern_error(error: MCPError) -> MCPError:
    """The error as a 2026-07-28 server sends it: that era has no -32002, a missing resource is -32602."""
    if error.code == RESOURCE_NOT_FOUND:
        return MCPError(INVALID_PARAMS, error.message, error.data)
    return error


def missing_capability(required: dict[str, Any], message: str | None = None) -> MCPError:
    """-32021 naming what the request needed, as a ClientCapabilities object."""
    names = ", ".join(sorted(required))
    return MCPError(
        MISSING_REQUIRED_CLIENT_CAPABILITY,
        message or f"this request needs the client capability: {names}",
        {"requiredCapabilities": required},
    )


# ----------------------------------------------------------------------------- HTTP headers


def encode_header_value(value: Any) -> str:
    """A value as an ``Mcp-*`` header: plain visible ASCII as is, anything else base64-wrapped."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    text = str(value)
    # visible ASCII and space, 0x20-0x7E: printable ASCII is exactly that (without a loop in Python)
    plain = text.isascii() and text.isprintable() and text == text.strip()
    if plain and not (text.startswith(_B64_PREFIX) and text.endswith(_B64_SUFFIX)):
        return text
    return _B64_PREFIX + base64.b64encode(text.encode()).decode("ascii") + _B64_SUFFIX


def decode_header_value(raw: str) -> str:
    """The header's value (whitespace trimmed, base64 unwrapped); raises ValueError on bad base64."""
    value = raw.strip(" \t")
    if value.startswith(_B64_PREFIX) and value.endswith(_B64_SUFFIX) and len(value) >= len(_B64_PREFIX) + 2:
        inner = value[len(_B64_PREFIX) : -len(_B64_SUFFIX)]
        try:
            return base64.b64decode(inner, validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError) as exc:
            raise ValueError(f"bad base64 header value: {exc}") from None
    return value


def header_matches(raw: str | None, expected: Any) -> bool:
    """Whether a header carries ``expected`` (integers compare numerically)."""
    if raw is None:
        return False
    try:
        value = decode_header_value(raw)
    except ValueError:
        return False
    if isinstance(expected, bool):
        return value == ("true" if expected else "false")
    if isinstance(expected, int):
        try:
            return int(value) == expected
        except ValueError:
            return False
    return value == str(expected)


class InvalidToolHeaders(ElicitkitError, ValueError):
    """A tool's ``x-mcp-header`` annotations break the rules; clients drop such tools."""


def tool_header_params(input_schema: Any) -> dict[str, str]:
    """``{argument name: header name}`` for a tool's ``x-mcp-header`` properties (validated)."""
    if not isinstance(input_schema, dict) or not _may_declare_headers(input_schema):
        return {}
    found: dict[str, str] = {}
    seen: set[str] = set()
    _reject_nested(input_schema, top=True)
    properties = input_schema.get("properties")
    if not isinstance(properties, dict):  # no properties (or not an object): nothing declares a header
        return {}
    for name, prop in properties.items():
        if not isinstance(prop, dict) or "x-mcp-header" not in prop:
            continue
        header = prop["x-mcp-header"]
        if not isinstance(header, str) or not header or not _TOKEN.match(header):
            raise InvalidToolHeaders(f"property {name!r}: x-mcp-header {header!r} is not an HTTP token")
        if prop.get("type") not in ("string", "integer", "boolean"):
            raise InvalidToolHeaders(f"property {name!r}: x-mcp-header only on string, integer or boolean")
        if header.lower() in seen:
            raise InvalidToolHeaders(f"x-mcp-header {header!r} is used twice")
        seen.add(header.lower())
        found[name] = header
    return found


_HEADER_KEY = b'"x-mcp-header":'


def _may_declare_headers(schema: dict[str, Any]) -> bool:
    """False when no key anywhere in ``schema`` is ``x-mcp-header``: then it declares no header
    and breaks no rule. One encode and a byte search (the HTTP transport asks for every 2026
    ``tools/call``); a compact encoding writes every such key, and only a key, as
    ``"x-mcp-header":`` (a string value holding those characters has its quotes escaped). A
    schema orjson cannot encode is walked."""
    try:
        return _HEADER_KEY in orjson.dumps(schema)
    except TypeError:
        return True


def _reject_nested(schema: Any, *, top: bool) -> None:
    """``x-mcp-header`` is only allowed on direct properties of the input schema."""
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key == "x-mcp-header" and not top:
                raise InvalidToolHeaders("x-mcp-header is only allowed on top-level properties")
            if key == "properties" and top and isinstance(value, dict):
                for prop in value.values():
                    if isinstance(prop, dict):
                        _reject_nested({k: v for k, v in prop.items() if k != "x-mcp-header"}, top=False)
            elif key != "x-mcp-header":
                _reject_nested(value, top=False)
    elif isinstance(schema, list):
        for item in schema:
            _reject_nested(item, top=False)


def request_headers(method: str, params: dict[str, Any], version: str, header_params: dict[str, str]) -> dict[str, str]:
    """The ``MCP-Protocol-Version`` / ``Mcp-Method`` / ``Mcp-Name`` / ``Mcp-Param-*`` a POST must carry."""
    headers = {"MCP-Protocol-Version": version, "Mcp-Method": method}
    name_key = NAME_PARAM.get(method)
    if name_key is not None and isinstance(params.get(name_key), str):
        headers["Mcp-Name"] = encode_header_value(params[name_key])
    if method == "tools/call" and header_params:
        arguments = params.get("arguments") or {}
        for arg, header in header_params.items():
            value = arguments.get(arg)
            if value is not None:
                headers[f"Mcp-Param-{header}"] = encode_header_value(value)
    return headers


def check_headers(
    headers: Mapping[str, str], method: str, params: dict[str, Any], version: str, header_params: dict[str, str]
) -> None:
    """Server side of :func:`request_headers`: -32020 on anything missing or not matching."""
    if headers.get("mcp-protocol-version", "").strip() != version:
        raise MCPError(HEADER_MISMATCH, "MCP-Protocol-Version header missing or not equal to _meta's version")
    if headers.get("mcp-method", "").strip() != method:
        raise MCPError(HEADER_MISMATCH, f"Mcp-Method header missing or not equal to the method {method!r}")
    name_key = NAME_PARAM.get(method)
    if name_key is not None and not header_matches(headers.get("mcp-name"), params.get(name_key)):
        raise MCPError(HEADER_MISMATCH, f"Mcp-Name header missing or not equal to params.{name_key}")
    if method == "tools/call" and header_params:
        arguments = params.get("arguments") or {}
        for arg, header in header_params.items():
            value = arguments.get(arg)
            raw = headers.get(f"mcp-param-{header.lower()}")
            if value is None:
                continue
            if not header_matches(raw, value):
                raise MCPError(HEADER_MISMATCH, f"Mcp-Param-{header} header missing or not equal to argument {arg!r}")
