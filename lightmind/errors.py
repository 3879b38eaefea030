"""The error hierarchy every service raises, and its one translation to gRPC status.

    LightmindError                    (INTERNAL unless a subclass says otherwise)
     ├── InvalidArgument              INVALID_ARGUMENT, with BadRequest.FieldViolation per field
     ├── NotFound                     NOT_FOUND
     ├── AlreadyExists                ALREADY_EXISTS
     ├── Aborted                      ABORTED (stale etag, concurrent change)
     ├── FailedPrecondition           FAILED_PRECONDITION
     ├── PermissionDenied             PERMISSION_DENIED
     ├── Unauthenticated              UNAUTHENTICATED
     ├── ResourceExhausted            RESOURCE_EXHAUSTED (queue full, rate limit)
     ├── DeadlineExceeded             DEADLINE_EXCEEDED
     └── Unavailable                  UNAVAILABLE (database or a downstream service down)

Handlers raise these; ``lightmind.server``'s error interceptor is the only place that turns
them (and anything unexpected) into a ``google.rpc.Status`` with an ``ErrorInfo`` whose domain
is the service name. Unexpected exceptions become INTERNAL with a generic message; their
traceback goes to the log only. ``classify`` maps well-known infrastructure exceptions
(asyncpg connection loss, a downstream gRPC service being unreachable) to the hierarchy.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import grpc
from google.protobuf import any_pb2
from google.rpc import code_pb2, error_details_pb2, status_pb2


@dataclass(frozen=True)
class FieldViolation:
    """One bad request field: its path (``texts[2]``, ``filter.and[0].key``) and why."""

    field: str
    description: str


class LightmindError(Exception):
    """Base of every error a service raises on purpose."""

    code: grpc.StatusCode = grpc.StatusCode.INTERNAL
    default_reason: str = "INTERNAL"

    def __init__(
        self,
        message: str,
        *,
        reason: str | None = None,
        metadata: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.reason = reason or self.default_reason
        self.metadata = dict(metadata or {})


class InvalidArgument(LightmindError):
    """A request field is malformed; names every offending field."""

    code = grpc.StatusCode.INVALID_ARGUMENT
    default_reason = "INVALID_ARGUMENT"

    def __init__(
        self,
        message: str,
        *,
        violations: Sequence[FieldViolation] = (),
        reason: str | None = None,
        metadata: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message, reason=reason, metadata=metadata)
        self.violations = list(violations)

    @classmethod
    def field(cls, field: str, description: str, *, reason: str | None = None) -> InvalidArgument:
        """The common case: one field is wrong. The message names it."""
        return cls(
            f"{field}: {description}",
            violations=[FieldViolation(field, description)],
            reason=reason,
        )


class NotFound(LightmindError):
    code = grpc.StatusCode.NOT_FOUND
    default_reason = "NOT_FOUND"


class AlreadyExists(LightmindError):
    code = grpc.StatusCode.ALREADY_EXISTS
    default_reason = "ALREADY_EXISTS"


class Aborted(LightmindError):
    code = grpc.StatusCode.ABORTED
    default_reason = "ABORTED"


class FailedPrecondition(LightmindError):
    code = grpc.StatusCode.FAILED_PRECONDITION
    default_reason = "FAILED_PRECONDITION"


class PermissionDenied(LightmindError):
    code = grpc.StatusCode.PERMISSION_DENIED
    default_reason = "PERMISSION_DENIED"


class Unauthenticated(LightmindError):
    code = grpc.StatusCode.UNAUTHENTICATED
    default_reason = "UNAUTHENTICATED"


class ResourceExhausted(LightmindError):
    code = grpc.StatusCode.RESOURCE_EXHAUSTED
    default_reason = "RESOURCE_EXHAUSTED"


class DeadlineExceeded(LightmindError):
    code = grpc.StatusCode.DEADLINE_EXCEEDED
    default_reason = "DEADLINE_EXCEEDED"


class Unavailable(LightmindError):
    code = grpc.StatusCode.UNAVAILABLE
    default_reason = "UNAVAILABLE"


_DOWNSTREAM_PASSTHROUGH = {
    grpc.StatusCode.INVALID_ARGUMENT: InvalidArgument,
    grpc.StatusCode.NOT_FOUND: NotFound,
    grpc.StatusCode.RESOURCE_EXHAUSTED: ResourceExhausted,
    grpc.StatusCode.PERMISSION_DENIED: PermissionDenied,
    grpc.StatusCode.FAILED_PRECONDITION: FailedPrecondition,
}


def classify(exc: BaseException) -> LightmindError | None:
    """Maps an infrastructure exception to the hierarchy, or None if it is a real bug."""
    if isinstance(exc, LightmindError):
        return exc
    # Imported lazily: the embedding service has no database driver in its hot path.
    import asyncpg

    if isinstance(
        exc,
        asyncpg.PostgresConnectionError
        | asyncpg.CannotConnectNowError
        | asyncpg.ConnectionDoesNotExistError
        | asyncpg.InterfaceError
        | ConnectionError,
    ):
        return Unavailable(
            "the database is unavailable; retry later", reason="DATABASE_UNAVAILABLE"
        )
    if isinstance(exc, asyncpg.InternalClientError):
        # Seen when the server terminates connections (restart, failover): the client's
        # protocol state is broken and the pool discards the connection on release.
        return Unavailable(
            "the database connection failed; retry later", reason="DATABASE_UNAVAILABLE"
        )
    if isinstance(exc, asyncpg.TooManyConnectionsError):
        return Unavailable("the database has no free connections", reason="DATABASE_UNAVAILABLE")
    if isinstance(exc, asyncpg.QueryCanceledError):
        return DeadlineExceeded("the database query ran past its deadline")
    if isinstance(exc, TimeoutError | asyncio.TimeoutError):
        return DeadlineExceeded("the operation ran past its deadline")
    if isinstance(exc, grpc.aio.AioRpcError):
        code = exc.code()
        if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
            return Unavailable(
                f"a downstream service is unavailable: {exc.details()}",
                reason="DEPENDENCY_UNAVAILABLE",
            )
        passthrough = _DOWNSTREAM_PASSTHROUGH.get(code)
        if passthrough is not None:
            mapped: LightmindError = passthrough(
                exc.details() or code.name, reason="DEPENDENCY_" + code.name
            )
            return mapped
    return None


def to_status(err: LightmindError, domain: str) -> grpc.Status:
    """Builds the rich ``google.rpc.Status`` (ErrorInfo, BadRequest) for ``err``."""
    details: list[any_pb2.Any] = []
    info = error_details_pb2.ErrorInfo(reason=err.reason, domain=domain, metadata=err.metadata)
    packed = any_pb2.Any()
    packed.Pack(info)
    details.append(packed)
    if isinstance(err, InvalidArgument) and err.violations:
        bad = error_details_pb2.BadRequest(
            field_violations=[
                error_details_pb2.BadRequest.FieldViolation(
                    field=v.field, description=v.description
                )
                for v in err.violations
            ]
        )
        packed_bad = any_pb2.Any()
        packed_bad.Pack(bad)
        details.append(packed_bad)
    proto = status_pb2.Status(code=_CODE_NUMBERS[err.code], message=err.message, details=details)
    from grpc_status import rpc_status

    status: grpc.Status = rpc_status.to_status(proto)
    return status


def internal_status(domain: str) -> grpc.Status:
    """The status an unexpected exception becomes: generic, nothing from the traceback."""
    return to_status(LightmindError("internal error; see the server log"), domain)


_CODE_NUMBERS: dict[grpc.StatusCode, int] = {
    grpc.StatusCode.INVALID_ARGUMENT: code_pb2.INVALID_ARGUMENT,
    grpc.StatusCode.NOT_FOUND: code_pb2.NOT_FOUND,
    grpc.StatusCode.ALREADY_EXISTS: code_pb2.ALREADY_EXISTS,
    grpc.StatusCode.ABORTED: code_pb2.ABORTED,
    grpc.StatusCode.FAILED_PRECONDITION: code_pb2.FAILED_PRECONDITION,
    grpc.StatusCode.PERMISSION_DENIED: code_pb2.PERMISSION_DENIED,
    grpc.StatusCode.UNAUTHENTICATED: code_pb2.UNAUTHENTICATED,
    grpc.StatusCode.RESOURCE_EXHAUSTED: code_pb2.RESOURCE_EXHAUSTED,
    grpc.StatusCode.DEADLINE_EXCEEDED: code_pb2.DEADLINE_EXCEEDED,
    grpc.StatusCode.UNAVAILABLE: code_pb2.UNAVAILABLE,
    grpc.StatusCode.INTERNAL: code_pb2.INTERNAL,
}
