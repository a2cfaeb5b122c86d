"""The one switch the hot paths read: ``hook.current`` is None while telemetry is off.

A call pays one module attribute read when telemetry is off (with or without the ``otel``
extra installed, and with the API but no SDK configured): ``if hook.current is not None``.
Only :func:`instrument` imports OpenTelemetry.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from elicitkit.telemetry.otel import OTel

__all__ = ["auto", "current", "instrument", "uninstrument"]

current: OTel | None = None
"""The live telemetry, or None (off)."""


def instrument(
    *,
    capture_content: bool | None = None,
    tracer_provider: Any = None,
    meter_provider: Any = None,
    logger_provider: Any = None,
) -> OTel:
    """Turn telemetry on with the given tracer, meter and logger providers (default: the global ones).

    ``capture_content``: put question texts and accepted answers (never a field whose name says
    secret) on spans and log records; default from ``ELICITKIT_OTEL_CAPTURE_CONTENT`` (off).
    Raises ImportError without ``opentelemetry-api`` (``pip install elicitkit[otel]``).
    """
    global current
    from elicitkit.telemetry.otel import OTel

    if capture_content is None:
        capture_content = os.environ.get("ELICITKIT_OTEL_CAPTURE_CONTENT", "").lower() in ("1", "true", "yes")
    current = OTel(
        capture_content=capture_content,
        tracer_provider=tracer_provider,
        meter_provider=meter_provider,
        logger_provider=logger_provider,
    )
    return current


def uninstrument() -> None:
    """Turn telemetry off (the next call pays only the check again)."""
    global current
    current = None


def auto() -> None:
    """On when an OpenTelemetry SDK is configured (a real tracer provider is set) and
    ``OTEL_SDK_DISABLED`` is not true; otherwise nothing, not even an import of the API."""
    if current is not None or os.environ.get("OTEL_SDK_DISABLED", "").lower() == "true":
        return
    import sys

    trace = sys.modules.get("opentelemetry.trace")
    if trace is None:  # nobody imported the API, so nobody configured an SDK
        return
    provider = trace.get_tracer_provider()
    if isinstance(provider, (trace.ProxyTracerProvider, trace.NoOpTracerProvider)):
        return
    instrument()
