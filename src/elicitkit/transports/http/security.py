"""What a request must show before the endpoint looks at it: a Host and Origin naming this
machine (the DNS-rebinding guard), and the content types the transport speaks."""

from __future__ import annotations

from urllib.parse import urlsplit

from elicitkit.transports.http.responses import Scope

LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "[::1]", "::1"})


def _hostname(value: str) -> str:
    """Host without the port: ``[::1]:8000`` -> ``[::1]``, ``localhost:80`` -> ``localhost``."""
    if value.startswith("["):
        end = value.find("]")
        return value[: end + 1] if end > 0 else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


class OriginGuard:
    """DNS-rebinding defence: on by default when bound to a loopback address."""

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
        """Host and Origin must name this machine (or an allowed name); else (status, reason)."""
        if not self._on(scope):
            return None
        host = headers.get("host", "").lower()
        if _hostname(host) not in LOOPBACK_HOSTS and host not in self.allowed_hosts:
            return 421, f"host {host!r} is not allowed"
        origin = headers.get("origin")
        if origin is not None:
            origin_l = origin.lower().rstrip("/")
            origin_host = _hostname(urlsplit(origin_l).netloc)
            if origin_host not in LOOPBACK_HOSTS and origin_l not in self.allowed_origins:
                return 403, f"origin {origin!r} is not allowed"
        return None


def check_post_content(headers: dict[str, str]) -> tuple[int, str] | None:
    """A POST accepts both answer shapes and carries JSON; else (status, reason) for -32600."""
    accept = headers.get("accept", "")
    if not (("application/json" in accept and "text/event-stream" in accept) or "*/*" in accept):
        return 406, "Accept must list application/json and text/event-stream"
    if not headers.get("content-type", "").lower().startswith("application/json"):
        return 415, "Content-Type must be application/json"
    return None


def accepts_event_stream(headers: dict[str, str]) -> bool:
    """A GET must accept SSE."""
    accept = headers.get("accept", "")
    return "text/event-stream" in accept or "*/*" in accept


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
