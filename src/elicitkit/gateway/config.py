"""The gateway's configuration: its backends and their policy, read from TOML (or JSON).

Validated with pydantic before anything starts, so a typo is a clear error naming the key
(``backends[1].namespce: unknown key``), not a backend that silently never appears.
"""

from __future__ import annotations

import json
import re
import shlex
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from elicitkit.gateway.errors import ConfigError

__all__ = ["BackendConfig", "BackendPolicy", "ConfigError", "GatewayConfig", "load_config", "parse_config"]

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class BackendPolicy(_Strict):
    """What one backend may ask the host (the client :class:`~elicitkit.client.handlers.policy.Policy`, reused)."""

    elicitation: bool = True
    """False: the gateway declares no elicitation to this backend (its ``ctx.elicit`` gets "unsupported")."""
    allow_url_domains: tuple[str, ...] | None = None
    """Shell-style host patterns a URL question may point at (None: any)."""
    deny_url_domains: tuple[str, ...] = ()
    sensitive_fields: bool = True
    """Refuse forms that fish for passwords, tokens, keys or card numbers (they belong in URL mode)."""
    rate_per_minute: float | None = Field(default=None, gt=0)
    burst: int | None = Field(default=None, ge=1)
    audit: str | None = None
    """A file to append one JSON line per question to (never the answers)."""


class BackendConfig(_Strict):
    """One server behind the gateway: a stdio ``command`` or an HTTP ``url``."""

    name: str
    command: tuple[str, ...] | None = None
    url: str | None = None
    namespace: str = ""
    """Put before each tool and prompt name (``"github."``: ``github.create_issue``)."""
    mode: Literal["legacy", "auto", "modern"] = "legacy"
    """The era the gateway speaks to it (``modern``: 2026-07-28 only)."""
    env: dict[str, str] | None = None
    cwd: str | None = None
    connect_timeout: float = Field(default=30.0, gt=0)
    """Seconds to start or reach it and finish the handshake (a silent backend is reported, not waited on)."""
    timeout: float = Field(default=600.0, gt=0)
    max_connections: int = Field(default=8, ge=1, le=256)
    """Connections open at once; a call that may ask holds one to itself while it runs."""
    policy: BackendPolicy = BackendPolicy()

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not _NAME.match(value):
            raise ValueError("use letters, digits, '-' and '_' (at most 64), starting with a letter or digit")
        return value

    @field_validator("command", mode="before")
    @classmethod
    def _command(cls, value: Any) -> Any:
        if isinstance(value, str):
            value = shlex.split(value)
        if isinstance(value, (list, tuple)) and not value:
            raise ValueError("an empty command")
        return value

    @field_validator("url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("http://", "https://")):
            raise ValueError("must be an http:// or https:// URL")
        return value

    @model_validator(mode="after")
    def _one_target(self) -> BackendConfig:
        if (self.command is None) == (self.url is None):
            raise ValueError("give exactly one of 'command' (stdio) or 'url' (Streamable HTTP)")
        return self

    @property
    def target(self) -> str | list[str]:
        return self.url if self.url is not None else list(self.command or ())


class GatewayConfig(_Strict):
    """The whole file: the gateway's own name and page options, and its backends."""

    name: str = "elicitkit-gateway"
    version: str = "0.1.0"
    fallback: Literal["page", "error"] = "page"
    """Hosts that cannot take a question get the gateway's own page (``"error"``: they get a decline)."""
    deadline: float | None = Field(default=None, gt=0)
    public_url: str | None = None
    redis: str | None = None
    """A fleet of gateways (Streamable HTTP): the Redis every instance shares (docs/gateway.md)."""
    backends: tuple[BackendConfig, ...] = Field(min_length=1)

    @field_validator("redis")
    @classmethod
    def _redis(cls, value: str | None) -> str | None:  # the URL may hold a password: never echoed
        if value is not None and not value.startswith(("redis://", "rediss://", "unix://")):
            raise ValueError("must be a redis://, rediss:// or unix:// URL")
        return value

    @model_validator(mode="after")
    def _unique(self) -> GatewayConfig:
        names: set[str] = set()
        prefixes: dict[str, str] = {}
        for backend in self.backends:
            if backend.name in names:
                raise ValueError(f"two backends are named {backend.name!r}")
            names.add(backend.name)
            if backend.namespace in prefixes and backend.namespace:
                raise ValueError(
                    f"backends {prefixes[backend.namespace]!r} and {backend.name!r} share the namespace"
                    f" {backend.namespace!r}"
                )
            prefixes[backend.namespace] = backend.name
        return self


def _where(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def parse_config(data: Any, source: str = "config") -> GatewayConfig:
    """A :class:`GatewayConfig` from parsed TOML/JSON (a ``[gateway]`` table is merged into the top)."""
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: the configuration must be a table/object, not {type(data).__name__}")
    data = dict(data)
    top = data.pop("gateway", None)
    if top is not None:
        if not isinstance(top, dict):
            raise ConfigError(f"{source}: [gateway] must be a table")
        data = {**top, **data}
    try:
        return GatewayConfig.model_validate(data)
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            what = "unknown key" if error["type"] == "extra_forbidden" else error["msg"]
            problems.append(f"{_where(tuple(error['loc']))}: {what}")
        raise ConfigError(f"{source}: " + "; ".join(problems)) from None


def load_config(path: str | Path) -> GatewayConfig:
    """Read ``path``: TOML, or JSON when it ends in ``.json``."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        data = json.loads(text) if path.suffix == ".json" else tomllib.loads(text)
    except (tomllib.TOMLDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{path}: not valid {'JSON' if path.suffix == '.json' else 'TOML'}: {exc}") from None
    return parse_config(data, str(path))
