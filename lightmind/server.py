"""Server bootstrap every service uses: one interceptor, health, reflection, graceful stop.

``start(...)`` builds a ``grpc.aio`` server for one service, binds it, and returns a
``RunningServer`` whose health stays NOT_SERVING until the service's warm-up has run.
``run(...)`` is the process entry point: start, wait for SIGTERM/SIGINT, then stop in the
order clients need: health NOT_SERVING first, then ``server.stop(grace)`` so in-flight calls
finish, then the service's own closers (pools, models) in reverse order of creation.

Interceptors, outermost first: OpenTelemetry's server interceptor (only when tracing is on),
which continues the caller's trace from the metadata; then our one call interceptor, which for
every call resolves the tenant from the ``authorization`` metadata (UNAUTHENTICATED on a bad
key), applies the per-tenant rate limit (RESOURCE_EXHAUSTED), binds tenant and request id to
the call's context, runs the handler, translates any exception to a ``google.rpc.Status`` (the
only place errors are mapped), counts the call and its latency in Prometheus metrics, and
writes one access-log line with method, code and duration. Health and reflection skip it.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import signal
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeAlias

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from lightmind import metrics, tenancy, tracing
from lightmind.config import AuthConfig, ServerConfig
from lightmind.errors import (
    LightmindError,
    ResourceExhausted,
    classify,
    internal_status,
    to_status,
)
from lightmind.ratelimit import RateLimiter

log = logging.getLogger("lightmind.server")
access_log = logging.getLogger("lightmind.access")

Closer = Callable[[], Awaitable[None]]

if TYPE_CHECKING:
    Context: TypeAlias = grpc.aio.ServicerContext[Any, Any]
    Handler: TypeAlias = grpc.RpcMethodHandler[Any, Any]
    Interceptor: TypeAlias = grpc.aio.ServerInterceptor[Any, Any]
else:
    # The stubs make these generic; at run time they are plain classes.
    Context = grpc.aio.ServicerContext
    Handler = grpc.RpcMethodHandler
    Interceptor = grpc.aio.ServerInterceptor


@dataclass
class ServiceDefinition:
    """What a service contributes to the shared bootstrap."""

    # Full proto service names, e.g. "lightmind.embedding.v1.EmbeddingService".
    service_names: Sequence[str]
    # ErrorInfo.domain, e.g. "embedding.lightmind.dev".
    error_domain: str
    # Registers the servicer(s) on the server.
    register: Callable[[grpc.aio.Server], None]
    # Run after the port is bound and before health turns SERVING (e.g. a warm-up inference).
    warmup: Callable[[], Awaitable[None]] | None = None
    # Called after the server has stopped, in reverse order.
    closers: list[Closer] = field(default_factory=list)


class _CallInterceptor(Interceptor):
    """Tenant, rate limit, context, error mapping, metrics and access log, in that order."""

    def __init__(
        self,
        resolver: tenancy.TenantResolver,
        domain: str,
        service: str,
        limiter: RateLimiter,
    ) -> None:
        self._resolver = resolver
        self._domain = domain
        self._service = service
        self._limiter = limiter

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[Handler]],
        details: grpc.HandlerCallDetails,
    ) -> Handler:
        handler = await continuation(details)
        if handler is None:
            return handler
        method: str = details.method
        # Health and reflection must answer without credentials (probes, grpcurl list).
        if method.startswith(("/grpc.health.v1.", "/grpc.reflection.")):
            return handler
        metadata = tuple(details.invocation_metadata or ())
        if handler.unary_unary:
            return grpc.unary_unary_rpc_method_handler(
                self._wrap_unary(handler.unary_unary, method, metadata),
                request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )
        if handler.stream_unary:
            return grpc.stream_unary_rpc_method_handler(
                self._wrap_unary(handler.stream_unary, method, metadata),
                request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )
        if handler.unary_stream:
            return grpc.unary_stream_rpc_method_handler(
                self._wrap_stream(handler.unary_stream, method, metadata),
                request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )
        return grpc.stream_stream_rpc_method_handler(
            self._wrap_stream(handler.stream_stream, method, metadata),  # type: ignore[arg-type]
            request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer,
        )

    def _begin(
        self, metadata: Sequence[tuple[str, str | bytes]]
    ) -> tuple[tenancy.CallContext | None, LightmindError | None]:
        request_id = ""
        for key, value in metadata:
            if key == "x-request-id":
                request_id = value.decode() if isinstance(value, bytes) else value
        request_id = request_id or uuid.uuid4().hex[:16]
        try:
            tenant, creds = self._resolver.resolve(metadata)
        except LightmindError as err:
            return tenancy.bind(tenancy.DEFAULT_TENANT, None, request_id), err
        wait = self._limiter.allow(tenant)
        if wait > 0:
            metrics.RATE_LIMITED.labels(self._service).inc()
            limited = ResourceExhausted(
                f"rate limit of {self._limiter.rate:g} requests/s for this tenant exceeded; "
                f"retry in {wait:.2f}s",
                reason="RATE_LIMITED",
                metadata={"retry_after_seconds": f"{wait:.3f}"},
            )
            return tenancy.bind(tenant, creds, request_id), limited
        return tenancy.bind(tenant, creds, request_id), None

    async def _fail(self, context: Context, exc: BaseException, method: str) -> grpc.StatusCode:
        err = classify(exc)
        if err is None:
            log.error("unexpected error in %s", method, exc_info=exc)
            status = internal_status(self._domain)
        else:
            if err.code == grpc.StatusCode.UNAVAILABLE:
                log.warning("%s: %s (%s)", method, err.message, type(exc).__name__)
            status = to_status(err, self._domain)
        await context.abort(status.code, status.details, status.trailing_metadata)
        raise AssertionError("unreachable: abort raises")  # pragma: no cover

    def _log(self, method: str, code: grpc.StatusCode, started: float) -> None:
        elapsed = time.perf_counter() - started
        short = method.rsplit("/", 1)[-1]
        metrics.RPC_REQUESTS.labels(self._service, short, code.name).inc()
        metrics.RPC_LATENCY.labels(self._service, short).observe(elapsed)
        access_log.info(
            "%s %s %.1fms",
            method,
            code.name,
            elapsed * 1000,
            extra={"method": method, "code": code.name, "duration_ms": round(elapsed * 1000, 2)},
        )

    def _wrap_unary(
        self,
        behavior: Callable[..., Any],
        method: str,
        metadata: Sequence[tuple[str, str | bytes]],
    ) -> Callable[[Any, Context], Awaitable[Any]]:
        async def wrapped(request: Any, context: Context) -> Any:
            started = time.perf_counter()
            bound, auth_error = self._begin(metadata)
            code = grpc.StatusCode.OK
            try:
                if auth_error is not None:
                    raise auth_error
                return await behavior(request, context)
            except asyncio.CancelledError:
                code = grpc.StatusCode.CANCELLED
                raise
            except grpc.aio.AbortError:
                code = context.code() or grpc.StatusCode.UNKNOWN
                raise
            except Exception as exc:
                code = _code_of(exc)
                await self._fail(context, exc, method)
            finally:
                self._log(method, code, started)
                if bound is not None:
                    tenancy.unbind(bound)

        return wrapped

    def _wrap_stream(
        self,
        behavior: Callable[..., Any],
        method: str,
        metadata: Sequence[tuple[str, str | bytes]],
    ) -> Callable[[Any, Context], AsyncIterator[Any]]:
        async def wrapped(request: Any, context: Context) -> AsyncIterator[Any]:
            started = time.perf_counter()
            bound, auth_error = self._begin(metadata)
            code = grpc.StatusCode.OK
            try:
                if auth_error is not None:
                    raise auth_error
                result = behavior(request, context)
                if inspect.isasyncgen(result):
                    async for item in result:
                        yield item
                else:
                    await result
            except asyncio.CancelledError:
                code = grpc.StatusCode.CANCELLED
                raise
            except grpc.aio.AbortError:
                code = context.code() or grpc.StatusCode.UNKNOWN
                raise
            except Exception as exc:
                code = _code_of(exc)
                await self._fail(context, exc, method)
            finally:
                self._log(method, code, started)
                if bound is not None:
                    tenancy.unbind(bound)

        return wrapped


def _code_of(exc: BaseException) -> grpc.StatusCode:
    err = classify(exc)
    return grpc.StatusCode.INTERNAL if err is None else err.code


@dataclass
class RunningServer:
    """A bound, started server. ``port`` is the real port (useful with port 0)."""

    server: grpc.aio.Server
    health: Any  # grpc_health.v1.health.aio.HealthServicer
    definition: ServiceDefinition
    port: int
    grace_seconds: float
    _stopped: bool = False

    async def set_serving(self, serving: bool) -> None:
        status = (
            health_pb2.HealthCheckResponse.SERVING
            if serving
            else health_pb2.HealthCheckResponse.NOT_SERVING
        )
        await self.health.set("", status)
        for name in self.definition.service_names:
            await self.health.set(name, status)

    async def stop(self, grace: float | None = None) -> None:
        """Health NOT_SERVING, then stop with grace, then the service's closers."""
        if self._stopped:
            return
        self._stopped = True
        await self.set_serving(False)
        await self.server.stop(self.grace_seconds if grace is None else grace)
        for closer in reversed(self.definition.closers):
            try:
                await closer()
            except Exception:
                log.exception("error while closing")


async def start(
    config: ServerConfig, auth: AuthConfig, definition: ServiceDefinition
) -> RunningServer:
    """Binds and starts the server; health turns SERVING once ``warmup`` has finished."""
    options = [
        ("grpc.max_receive_message_length", config.max_message_bytes),
        ("grpc.max_send_message_length", config.max_message_bytes),
        ("grpc.so_reuseport", 0),
    ]
    call_interceptor = _CallInterceptor(
        tenancy.TenantResolver(auth),
        definition.error_domain,
        config.service_name,
        RateLimiter(config.rate_limit_rps, config.rate_limit_burst),
    )
    server = grpc.aio.server(
        interceptors=[*tracing.server_interceptors(), call_interceptor], options=options
    )
    health_servicer = health.aio.HealthServicer()  # type: ignore[attr-defined]
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    definition.register(server)
    reflection.enable_server_reflection(
        (*definition.service_names, health.SERVICE_NAME, reflection.SERVICE_NAME), server
    )
    if config.tls_cert_file is not None and config.tls_key_file is not None:
        credentials = grpc.ssl_server_credentials(
            [(config.tls_key_file.read_bytes(), config.tls_cert_file.read_bytes())]
        )
        port = server.add_secure_port(config.address, credentials)
    else:
        port = server.add_insecure_port(config.address)
    if port == 0:
        raise OSError(f"could not bind {config.address}")
    running = RunningServer(server, health_servicer, definition, port, config.grace_seconds)
    await running.set_serving(False)
    await server.start()
    try:
        if definition.warmup is not None:
            await definition.warmup()
    except BaseException:
        await running.stop(0)
        raise
    await running.set_serving(True)
    log.info("%s listening on %s:%d", ", ".join(definition.service_names), config.host, port)
    return running


async def run(
    config: ServerConfig,
    auth: AuthConfig,
    build: Callable[[], Awaitable[ServiceDefinition]],
) -> None:
    """Process entry point: build the service, serve until SIGTERM/SIGINT, stop cleanly."""
    # Tracing first: channels opened while building pick up its client interceptors.
    tracing.setup(config.service_name, config.tracing)
    metrics.start_exporter(config.metrics_port, config.host)
    definition = await build()
    try:
        running = await start(config, auth, definition)
    except BaseException:
        for closer in reversed(definition.closers):
            await closer()
        raise
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    log.info("signal received: draining for up to %.1fs", config.grace_seconds)
    await running.stop()
    log.info("stopped")
