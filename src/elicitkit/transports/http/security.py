"""What a request must show before the endpoint looks at it: one well-formed Host, a Host and
Origin naming this machine (the DNS-rebinding guard), and the media types the transport speaks.

Every header is parsed by its grammar, never matched by substring or prefix: ``localhost:1@evil``
is not a Host on this machine, and ``application/jsonx`` is not JSON. The parses are cached, since
a client sends the same few values on every request.
"""

from __future__ import annotations

import functools
import ipaddress
import re
from collections.abc import Sequence

from elicitkit.transports.http.responses import Scope

LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "[::1]", "::1"})

# RFC 3986 reg-name (unreserved / pct-encoded / sub-delims), and RFC 3986 scheme.
_REG_NAME = re.compile(r"(?:[a-z0-9\-._~!$&'()*+,;=]|%[0-9a-f]{2})*")
_SCHEME = re.compile(r"[a-z][a-z0-9+\-.]*")
# RFC 9110 token: media types and parameter names.
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9a-z]+")
_QVALUE = re.compile(r"0(?:\.[0-9]{0,3})?|1(?:\.0{0,3})?")
_CACHE = 256


def read_headers(raw: Sequence[tuple[bytes, bytes]]) -> dict[str, str]:
    """The request's headers by lower-case name.

    A field sent twice is combined into one comma-separated value (RFC 9110 section 5.3) rather
    than the last one winning, so a second ``Host`` or ``Origin`` cannot hide behind the first:
    combined, it no longer parses, and the guard refuses it. The common case (no name twice)
    costs one length comparison over the plain dict.
    """
    headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in raw}
    if len(headers) != len(raw):
        headers = {}
        for k, v in raw:
            name, value = k.decode("latin-1").lower(), v.decode("latin-1")
            headers[name] = f"{headers[name]}, {value}" if name in headers else value
    return headers


@functools.lru_cache(maxsize=_CACHE)
def parse_authority(value: str) -> tuple[str, int | None] | None:
    """``host[:port]`` by the RFC 3986 authority grammar without userinfo: (host, port), or None.

    The host comes back lower-cased, an IPv6 literal compressed and in brackets. None for anything
    malformed: userinfo (``a@b``), a port that is not 0-65535 in ASCII digits, an unbracketed
    IPv6 address, a bracketed literal that is not an IPv6 address, or text after the ``]``.
    """
    value = value.lower()
    if value.startswith("["):
        end = value.find("]")
        if end < 0:
            return None
        try:
            address = ipaddress.IPv6Address(value[1:end])
        except ValueError:
            return None
        host, rest = f"[{address.compressed}]", value[end + 1 :]  # [0:0::1] is [::1]
    else:
        host, colon, port_text = value.partition(":")
        if not _REG_NAME.fullmatch(host):
            return None
        rest = colon + port_text
    if not rest:
        return host, None
    if rest[0] != ":":
        return None
    digits = rest[1:]
    if not digits:
        return host, None  # "host:" is allowed by the grammar (port = *DIGIT)
    if not (digits.isascii() and digits.isdigit()) or len(digits) > 5 or int(digits) > 65535:
        return None
    return host, int(digits)


@functools.lru_cache(maxsize=_CACHE)
def parse_origin(value: str) -> tuple[str, str, int | None] | None:
    """A serialized origin, ``scheme://host[:port]`` (RFC 6454): (scheme, host, port), or None.

    No userinfo, path, query or fragment (one trailing ``/`` is tolerated); ``null`` and every
    malformed value give None.
    """
    scheme, sep, authority = value.lower().partition("://")
    if not sep or not _SCHEME.fullmatch(scheme):
        return None
    if authority.endswith("/"):
        authority = authority[:-1]
    parsed = parse_authority(authority)
    if parsed is None or not parsed[0]:
        return None
    return scheme, parsed[0], parsed[1]


class OriginGuard:
    """DNS-rebinding defence: on by default when bound to a loopback address.

    A Host that does not parse is refused with 400 whether the guard is on or not (RFC 9110
    requires it, and it covers a request with two Host fields); with the guard on, a Host that
    parses but names another machine gets 421, and an Origin that does not parse or names
    another machine gets 403 (the status the transport spec gives for an invalid Origin).
    """

    __slots__ = ("allowed_hosts", "allowed_origins", "enabled")

    def __init__(
        self,
        enabled: bool | None = None,
        allowed_hosts: set[str] | None = None,
        allowed_origins: set[str] | None = None,
    ) -> None:
        self.enabled = enabled
        self.allowed_hosts = {h.lower() for h in (allowed_hosts or set())}
        self.allowed_origins = {o.lower().rstrip("/") for o in (allowed_origins or set())}

    def _on(self, scope: Scope) -> bool:
        if self.enabled is not None:
            return self.enabled
        bound = scope.get("server")
        if not bound:
            return False
        return str(bound[0]) in LOOPBACK_HOSTS

    def check(self, scope: Scope, headers: dict[str, str]) -> tuple[int, str] | None:
        """Host and Origin must parse and name this machine (or an allowed name); else (status, reason)."""
        host = headers.get("host", "")
        authority = parse_authority(host)
        if authority is None:
            return 400, f"malformed Host {host!r}"
        if not self._on(scope):
            return None
        if authority[0] not in LOOPBACK_HOSTS and host.lower() not in self.allowed_hosts:
            return 421, f"host {host!r} is not allowed"
        origin = headers.get("origin")
        if origin is not None:
            parsed = parse_origin(origin)
            if parsed is None:
                return 403, f"malformed Origin {origin!r}"
            if parsed[1] not in LOOPBACK_HOSTS and origin.lower().rstrip("/") not in self.allowed_origins:
                return 403, f"origin {origin!r} is not allowed"
        return None


# -- media types ----------------------------------------------------------------------


def _split_params(text: str) -> tuple[str, dict[str, str]] | None:
    """``type/subtype; name=value; ...`` -> (lower-cased type/subtype, params), None if malformed."""
    first, *rest = text.split(";")
    media = first.strip().lower()
    kind, slash, sub = media.partition("/")
    if not slash or not _TOKEN.fullmatch(kind) or not _TOKEN.fullmatch(sub):
        return None
    params: dict[str, str] = {}
    for item in rest:
        name, eq, val = item.strip().partition("=")
        name = name.strip().lower()
        if not name and not eq:
            continue  # "a/b;" - an empty parameter
        if not eq or not _TOKEN.fullmatch(name):
            return None
        val = val.strip()
        if len(val) >= 2 and val[0] == val[-1] == '"':
            val = val[1:-1]
        params[name] = val
    return media, params


@functools.lru_cache(maxsize=_CACHE)
def parse_content_type(value: str) -> tuple[str, dict[str, str]] | None:
    """A Content-Type value: (lower-cased ``type/subtype``, parameters), or None if malformed."""
    return _split_params(value)


@functools.lru_cache(maxsize=_CACHE)
def _accept_ranges(value: str) -> tuple[tuple[str, float], ...]:
    """An Accept value as (media range, q) pairs; malformed elements are skipped."""
    ranges: list[tuple[str, float]] = []
    for element in value.split(","):
        if not element.strip():
            continue
        parsed = _split_params(element)
        if parsed is None:
            continue
        media, params = parsed
        if media.startswith("*/") and media != "*/*":
            continue
        q_text = params.get("q", "1")
        if not _QVALUE.fullmatch(q_text):
            continue
        ranges.append((media, float(q_text)))
    return tuple(ranges)


@functools.lru_cache(maxsize=_CACHE)
def accepts(accept: str, media_type: str) -> bool:
    """Does an Accept value allow ``media_type``? The most specific matching range decides its
    q (RFC 9110 section 12.5.1): ``*/*, application/json;q=0`` does not accept JSON."""
    kind = media_type.split("/", 1)[0] + "/*"
    best_rank, best_q = -1, 0.0
    for media, q in _accept_ranges(accept):
        rank = 2 if media == media_type else 1 if media == kind else 0 if media == "*/*" else -1
        if rank > best_rank:
            best_rank, best_q = rank, q
    return best_rank >= 0 and best_q > 0


def is_json_content(value: str) -> bool:
    """``application/json``, any case, with parameters allowed; a charset, if named, is UTF-8
    (JSON text is UTF-8, RFC 8259)."""
    parsed = parse_content_type(value)
    if parsed is None or parsed[0] != "application/json":
        return False
    charset = parsed[1].get("charset")
    return charset is None or charset.lower() in ("utf-8", "utf8")


def check_post_content(headers: dict[str, str]) -> tuple[int, str] | None:
    """A POST accepts both answer shapes and carries JSON; else (status, reason) for -32600."""
    accept = headers.get("accept", "")
    if not (accepts(accept, "application/json") and accepts(accept, "text/event-stream")):
        return 406, "Accept must list application/json and text/event-stream"
    if not is_json_content(headers.get("content-type", "")):
        return 415, "Content-Type must be application/json"
    return None


def accepts_event_stream(headers: dict[str, str]) -> bool:
    """A GET must accept SSE."""
    return accepts(headers.get("accept", ""), "text/event-stream")


def authenticated_identity(scope: Scope) -> str | None:
    """Who an authentication middleware in front of the endpoint says the request comes from.

    The ASGI convention Starlette's ``AuthenticationMiddleware`` follows: ``scope["user"]``
    with ``is_authenticated`` and ``identity``. None when nobody authenticated the request.
    """
    user = scope.get("user")
    if user is None:
        return None
    try:
        if not user.is_authenticated:
            return None
    except (AttributeError, NotImplementedError):
        return None
    for attribute in ("identity", "display_name"):  # Starlette's BaseUser may leave identity out
        try:
            value = getattr(user, attribute)
        except (AttributeError, NotImplementedError):
            continue
        if isinstance(value, str) and value:
            return value
    return None
