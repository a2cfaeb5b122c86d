"""The auth flows' few HTTP calls, over aiohttp: bounded in time and size, errors without secrets.

Metadata GETs and token-endpoint POSTs are rare (a discovery, a token, a refresh), so each flow
opens its own short-lived ``aiohttp.ClientSession``; nothing here touches the MCP connection.
Every failure becomes the caller's :class:`~elicitkit.errors.AuthError` subclass with a message
naming the URL and what happened, never a request body (which may hold a code or a secret).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import anyio
import orjson

from elicitkit.errors import AuthError

if TYPE_CHECKING:
    import aiohttp

# aiohttp is imported when a Fetcher opens (and where its errors are caught): it and its
# dependencies cost more than the rest of ``import elicitkit``, which runs ``elicitkit.auth``.

__all__ = ["MAX_BODY", "Fetcher", "Reply", "check_url", "is_loopback"]

MAX_BODY = 1_000_000  # a metadata document or token response is a few KB


def is_loopback(host: str | None) -> bool:
    return (host or "").lower() in {"localhost", "127.0.0.1", "::1", "[::1]"} or (host or "").startswith("127.")


def check_url(url: object, what: str, error: type[AuthError]) -> str:
    """``url`` if it is an absolute https URL (http only on loopback, for development); else ``error``."""
    if not isinstance(url, str) or not url:
        raise error(f"{what} is missing or not a string")
    parts = urlsplit(url)
    if parts.scheme not in ("https", "http") or not parts.netloc:
        raise error(f"{what} is not an absolute http(s) URL: {url[:200]!r}")
    if parts.scheme == "http" and not is_loopback(parts.hostname):
        raise error(f"{what} must use https (plain http is accepted for loopback hosts only): {url[:200]!r}")
    if parts.fragment:
        raise error(f"{what} must not carry a fragment: {url[:200]!r}")
    return url


@dataclass(frozen=True)
class Reply:
    """One HTTP answer: status, headers and (bounded) body."""

    url: str
    status: int
    headers: Mapping[str, str]
    body: bytes

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    def json_object(self, what: str, error: type[AuthError]) -> dict[str, Any]:
        """The body as a JSON object, or ``error`` saying plainly what came instead."""
        text = self.body.lstrip()
        if text[:1] == b"<":
            raise error(f"{what} at {self.url} is HTML, not JSON (HTTP {self.status}); is the URL right?")
        try:
            value = orjson.loads(self.body)
        except orjson.JSONDecodeError:
            ctype = self.headers.get("Content-Type", "no content type")
            raise error(f"{what} at {self.url} is not JSON (HTTP {self.status}, {ctype})") from None
        if not isinstance(value, dict):
            raise error(f"{what} at {self.url} is JSON but not an object (HTTP {self.status})")
        return value


class Fetcher:
    """GET and form POST with a deadline per call; use as ``async with Fetcher(timeout) as http``."""

    def __init__(self, timeout: float = 30.0) -> None:
        self.timeout = timeout
        self._session: aiohttp.ClientSession | None = None

    async def __aenter__(self) -> Fetcher:
        import aiohttp

        self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=None))
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def get(self, url: str, what: str, error: type[AuthError]) -> Reply:
        return await self._call("GET", url, what, error, headers={"Accept": "application/json"})

    async def post_form(
        self, url: str, form: Mapping[str, str], what: str, error: type[AuthError], headers: Mapping[str, str]
    ) -> Reply:
        all_headers = {"Accept": "application/json", "Content-Type": "application/x-www-form-urlencoded", **headers}
        return await self._call("POST", url, what, error, headers=all_headers, data=dict(form))

    async def post_json(self, url: str, body: Mapping[str, Any], what: str, error: type[AuthError]) -> Reply:
        headers = {"Accept": "application/json", "Content-Type": "application/json"}
        return await self._call("POST", url, what, error, headers=headers, data=orjson.dumps(dict(body)))

    async def _call(
        self, method: str, url: str, what: str, error: type[AuthError], *, headers: Mapping[str, str], data: Any = None
    ) -> Reply:
        assert self._session is not None, "use Fetcher as an async context manager"
        import aiohttp  # already loaded by __aenter__

        try:
            with anyio.fail_after(self.timeout):
                async with self._session.request(
                    method, url, headers=dict(headers), data=data, allow_redirects=method == "GET", max_redirects=3
                ) as resp:
                    body = await _read_bounded(resp.content)
                    if len(body) > MAX_BODY:
                        raise error(f"{what} at {url} is larger than {MAX_BODY} bytes; refused")
                    return Reply(url, resp.status, resp.headers, body)
        except TimeoutError:
            raise error(f"{what} at {url} did not answer within {self.timeout:g}s; try again later") from None
        except aiohttp.ClientError as exc:
            raise error(f"{what} at {url} could not be reached ({type(exc).__name__}); is it up?") from None


async def _read_bounded(content: aiohttp.StreamReader) -> bytes:
    """The body up to ``MAX_BODY + 1`` bytes. ``read(n)`` returns what has arrived so far (up to
    n), not n: one call could cut a body that came in several chunks."""
    chunks: list[bytes] = []
    size = 0
    while size <= MAX_BODY:
        chunk = await content.read(MAX_BODY + 1 - size)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)
