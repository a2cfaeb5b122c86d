"""A gateway between hosts and MCP servers of any era: ``elicitkit gateway CONFIG`` or :class:`Gateway`.

See docs/gateway.md. Not among the 31 top-level names: ``from elicitkit.gateway import Gateway``.
"""

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
