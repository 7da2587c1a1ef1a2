"""OpenTelemetry traces of runs (docs/extending.md, "OpenTelemetry").

    if otel_wanted(environ, flag=args.otel):
        on_event = await with_otel(on_event, environ)   # imports the SDK only now

The SDK (``driveros[otel]``: ``opentelemetry-sdk``, ``opentelemetry-exporter-otlp-proto-http``)
is imported only when tracing is on.
"""

from __future__ import annotations

from collections.abc import Mapping

from driveros._errors import ConfigError
from driveros.agent import OnEvent
from driveros.otel._settings import otel_wanted, traces_endpoint


async def with_otel(on_event: OnEvent, environ: Mapping[str, str]) -> OnEvent:
    """``on_event`` that also exports the run's spans; :class:`ConfigError` when the extra is
    not installed."""
    try:
        from driveros.otel._spans import process_provider, traced
    except ImportError as exc:
        raise ConfigError(
            f"OpenTelemetry export needs the driveros[otel] extra ({exc.name} is missing): "
            "pip install 'driveros[otel]'"
        ) from exc
    return traced(on_event, process_provider(environ))


__all__ = ["otel_wanted", "traces_endpoint", "with_otel"]
