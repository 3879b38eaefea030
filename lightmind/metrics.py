"""Prometheus metrics every service exports, defined once for the whole process.

The server interceptor counts every call by service, method and status code and observes its
latency; the embedding batcher records batch sizes, tokens and queue depth; storage services
register their pool for in-use/idle gauges; SkillService counts tool executions by type and
outcome. ``start_exporter`` serves ``/metrics`` on the service's metrics port (off when 0).
Metric objects live at module level because Prometheus' registry is per process, and tests run
several services in one process.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from prometheus_client import Counter, Gauge, Histogram, start_http_server

log = logging.getLogger("lightmind.metrics")

_LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)

RPC_REQUESTS = Counter(
    "lightmind_rpc_requests_total",
    "gRPC calls handled, by service, method and status code.",
    ["service", "method", "code"],
)
RPC_LATENCY = Histogram(
    "lightmind_rpc_latency_seconds",
    "Time to handle a gRPC call, by service and method.",
    ["service", "method"],
    buckets=_LATENCY_BUCKETS,
)
RATE_LIMITED = Counter(
    "lightmind_rate_limited_total",
    "Calls refused by the per-tenant rate limit.",
    ["service"],
)
EMBED_BATCH_SIZE = Histogram(
    "lightmind_embedding_batch_size",
    "Texts per inference batch.",
    ["model"],
    buckets=(1, 2, 4, 8, 16, 32, 64, 128, 256),
)
EMBED_BATCH_TOKENS = Histogram(
    "lightmind_embedding_batch_tokens",
    "Padded tokens (rows x longest) per inference batch.",
    ["model"],
    buckets=(64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384),
)
EMBED_QUEUE_DEPTH = Gauge(
    "lightmind_embedding_queue_depth",
    "Texts waiting for inference.",
    ["model"],
)
DB_POOL_CONNECTIONS = Gauge(
    "lightmind_db_pool_connections",
    "Database pool connections by state (in_use, idle).",
    ["service", "state"],
)
TOOL_EXECUTIONS = Counter(
    "lightmind_tool_executions_total",
    "Tool executions by implementation type and outcome (ok, tool_error, timeout, ...).",
    ["type", "outcome"],
)


def track_pool(service: str, size: Callable[[], int], idle: Callable[[], int]) -> None:
    """Reports a connection pool's use on every scrape."""
    DB_POOL_CONNECTIONS.labels(service, "in_use").set_function(lambda: size() - idle())
    DB_POOL_CONNECTIONS.labels(service, "idle").set_function(idle)


def start_exporter(port: int, host: str) -> bool:
    """Serves /metrics; a port already taken logs an error instead of stopping the service."""
    if port == 0:
        return False
    try:
        start_http_server(port, addr=host)
    except OSError as exc:
        log.error(
            "metrics exporter could not listen on %s:%d (%s); metrics are off", host, port, exc
        )
        return False
    log.info("metrics on http://%s:%d/metrics", host, port)
    return True
