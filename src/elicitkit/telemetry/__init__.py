"""OpenTelemetry for elicitkit: MCP spans and metrics per the semantic conventions, and the
elicitation signals the conventions do not cover (docs/telemetry.md).

Nothing here imports OpenTelemetry until telemetry is switched on: :mod:`.hook` holds the one
switch the hot paths read (``hook.current``, None when off), :mod:`.events` the question event
the audit log and the OTel logs signal share, :mod:`.names` every attribute and metric name.
:func:`instrument` turns it on with the global providers; :func:`auto` does so only when an
SDK is configured (called when a server or client is made); :func:`configure_sdk` is what
``elicitkit serve --otel`` runs.
"""

from __future__ import annotations

# Only the switch and the SDK setup, both light: the runtime imports this package on every path.
from elicitkit.telemetry.hook import auto, instrument, uninstrument
from elicitkit.telemetry.sdk import configure_sdk

__all__ = ["auto", "configure_sdk", "instrument", "uninstrument"]
