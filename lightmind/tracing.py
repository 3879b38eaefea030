"""OpenTelemetry tracing across service hops, off by default.

``setup(service_name, mode)`` installs a tracer provider (``console`` prints spans, ``otlp``
exports to ``OTEL_EXPORTER_OTLP_ENDPOINT``) and returns it; the server adds the instrumentation's
aio server interceptor and ``lightmind.channels`` adds its client interceptors, which carry the
trace context in gRPC metadata from one service to the next.
"""

from __future__ import annotations

import logging
from typing import Any

log = logging.getLogger("lightmind.tracing")

_provider: Any = None


def setup(service_name: str, mode: str) -> Any:
    """Installs the process's tracer provider once; returns it (None when off)."""
    global _provider
    if mode == "off":
        return None
    if _provider is not None:
        return _provider
    from opentelemetry import trace
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import (
        BatchSpanProcessor,
        ConsoleSpanExporter,
        SimpleSpanProcessor,
    )

    provider = TracerProvider(resource=Resource.create({"service.name": service_name}))
    if mode == "console":
        provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter()))
    else:
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    _provider = provider
    log.info("tracing on (%s)", mode)
    return provider


def use_provider(provider: Any) -> None:
    """Installs a given provider (tests use an in-memory exporter)."""
    global _provider
    _provider = provider


def provider() -> Any:
    return _provider


def server_interceptors() -> list[Any]:
    if _provider is None:
        return []
    from opentelemetry.instrumentation.grpc import aio_server_interceptor

    return [aio_server_interceptor(tracer_provider=_provider)]  # type: ignore[no-untyped-call]


def client_interceptors() -> list[Any]:
    if _provider is None:
        return []
    from opentelemetry.instrumentation.grpc import aio_client_interceptors

    interceptors: list[Any] = aio_client_interceptors(  # type: ignore[no-untyped-call]
        tracer_provider=_provider
    )
    return interceptors
