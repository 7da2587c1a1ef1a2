"""When a run exports OpenTelemetry traces: ``--otel`` (or the editor's setting), or the
standard ``OTEL_EXPORTER_OTLP_ENDPOINT`` / ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` in the real
process environment, unless ``OTEL_SDK_DISABLED=true`` or ``OTEL_TRACES_EXPORTER=none``.

Only the real environment counts: a workspace's ``.env`` never points traces anywhere.
"""

from __future__ import annotations

from collections.abc import Mapping

#: The OTLP/HTTP traces path under a base endpoint (the specification's default).
TRACES_PATH = "/v1/traces"
DEFAULT_ENDPOINT = "http://localhost:4318"


def otel_wanted(environ: Mapping[str, str], *, flag: bool = False) -> bool:
    """Whether a run exports traces (no import of the SDK happens to answer this)."""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    if environ.get("OTEL_TRACES_EXPORTER", "").strip().lower() == "none":
        return False
    configured = any(
        environ.get(name, "").strip()
        for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    )
    return flag or configured


def traces_endpoint(environ: Mapping[str, str]) -> str:
    """The OTLP/HTTP URL spans go to (``…_TRACES_ENDPOINT`` as given, else the base endpoint
    plus ``/v1/traces``, else the specification's default on localhost)."""
    exact = environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip()
    if exact:
        return exact
    base = environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip() or DEFAULT_ENDPOINT
    return base.rstrip("/") + TRACES_PATH
