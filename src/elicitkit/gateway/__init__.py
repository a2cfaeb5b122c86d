"""A gateway between hosts and MCP servers of any era: ``elicitkit gateway CONFIG`` or :class:`Gateway`.

See docs/gateway.md. Not among the 31 top-level names: ``from elicitkit.gateway import Gateway``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from elicitkit._lazy import lazy_names

if TYPE_CHECKING:  # what mypy and IDEs see: every name below, bound
    from elicitkit.gateway.config import BackendConfig, BackendPolicy, GatewayConfig, load_config, parse_config
    from elicitkit.gateway.errors import BackendUnavailable, ConfigError
    from elicitkit.gateway.gateway import Gateway

__all__ = [
    "BackendConfig",
    "BackendPolicy",
    "BackendUnavailable",
    "ConfigError",
    "Gateway",
    "GatewayConfig",
    "load_config",
    "parse_config",
]

# Each name loads with its module on first use: ``elicitkit.errors`` imports
# ``elicitkit.gateway.errors``, which runs this file, and every ``import elicitkit`` (every test and CLI
# subprocess) would otherwise load the whole gateway.
_HOMES = {
    "BackendConfig": "elicitkit.gateway.config",
    "BackendPolicy": "elicitkit.gateway.config",
    "BackendUnavailable": "elicitkit.gateway.errors",
    "ConfigError": "elicitkit.gateway.errors",
    "Gateway": "elicitkit.gateway.gateway",
    "GatewayConfig": "elicitkit.gateway.config",
    "load_config": "elicitkit.gateway.config",
    "parse_config": "elicitkit.gateway.config",
}

if not TYPE_CHECKING:  # hidden from mypy, so an unknown name stays a type error there
    __getattr__, __dir__ = lazy_names(__name__, _HOMES, __all__)
