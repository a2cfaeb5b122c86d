"""``elicitkit serve --otel``: configure the OpenTelemetry SDK the way the SDK configures itself.

The SDK's own configurator reads every ``OTEL_*`` variable it knows (``OTEL_SERVICE_NAME``,
``OTEL_RESOURCE_ATTRIBUTES``, ``OTEL_EXPORTER_OTLP_ENDPOINT`` and the per-signal ones,
``OTEL_TRACES_SAMPLER``, ``OTEL_*_EXPORTER``, ``OTEL_SDK_DISABLED`` ...), exactly as
``opentelemetry-instrument`` would; we only default the exporters to OTLP over HTTP (the one
the test extra installs) and the service name to ``elicitkit``, when they are not set.
"""

from __future__ import annotations

import os

__all__ = ["configure_sdk"]

_EXPORTERS = ("OTEL_TRACES_EXPORTER", "OTEL_METRICS_EXPORTER", "OTEL_LOGS_EXPORTER")


def configure_sdk() -> bool:
    """Configure the SDK from the environment and turn elicitkit's telemetry on; False when
    ``OTEL_SDK_DISABLED`` is true (nothing is configured, telemetry stays off). Without the SDK
    installed: an :class:`ElicitkitError` saying what to install."""
    from elicitkit.errors import ElicitkitError

    if os.environ.get("OTEL_SDK_DISABLED", "").lower() == "true":
        return False
    try:
        from opentelemetry.sdk._configuration import _OTelSDKConfigurator
    except ImportError:
        raise ElicitkitError(
            "--otel needs the OpenTelemetry SDK and an exporter: "
            "pip install 'elicitkit[otel]' opentelemetry-sdk opentelemetry-exporter-otlp-proto-http"
        ) from None
    for variable in _EXPORTERS:
        os.environ.setdefault(variable, "otlp_proto_http")
    os.environ.setdefault("OTEL_SERVICE_NAME", "elicitkit")
    _OTelSDKConfigurator().configure()  # type: ignore[no-untyped-call]
    from elicitkit.telemetry.hook import instrument

    instrument()
    return True
