"""Which tenant a call runs for, and the credentials to forward on calls it makes.

The server interceptor resolves the tenant once per call from the ``authorization``
metadata (``Bearer <key>`` or the bare key) and stores it in a context variable; repositories
read ``current_tenant()`` and key every row by it, so no query can forget the tenant. With
auth off, every call runs for the tenant ``default``. Calls one service makes to another
forward the caller's credentials (``forward_metadata()``), so the tenant follows the request.
"""

from __future__ import annotations

import contextvars
import hmac
from collections.abc import Sequence
from dataclasses import dataclass

from lightmind.apikeys import KeyIndex, digest
from lightmind.config import AuthConfig
from lightmind.errors import Unauthenticated

DEFAULT_TENANT = "default"
AUTH_HEADER = "authorization"

_tenant: contextvars.ContextVar[str] = contextvars.ContextVar(
    "lightmind_tenant", default=DEFAULT_TENANT
)
_credentials: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "lightmind_credentials", default=None
)
_request_id: contextvars.ContextVar[str] = contextvars.ContextVar(
    "lightmind_request_id", default=""
)


def current_tenant() -> str:
    """The tenant of the call being served (``default`` outside a call or with auth off)."""
    return _tenant.get()


def current_request_id() -> str:
    return _request_id.get()


def forward_metadata() -> tuple[tuple[str, str], ...]:
    """Metadata for an outgoing call on behalf of the current caller."""
    creds = _credentials.get()
    return ((AUTH_HEADER, creds),) if creds else ()


@dataclass(frozen=True)
class CallContext:
    """The tokens that restore the previous context when a call ends."""

    tenant: contextvars.Token[str]
    credentials: contextvars.Token[str | None]
    request_id: contextvars.Token[str]


def bind(tenant: str, credentials: str | None, request_id: str = "") -> CallContext:
    """Sets the call's context; ``unbind`` it when the call ends."""
    return CallContext(
        _tenant.set(tenant), _credentials.set(credentials), _request_id.set(request_id)
    )


def unbind(bound: CallContext) -> None:
    _tenant.reset(bound.tenant)
    _credentials.reset(bound.credentials)
    _request_id.reset(bound.request_id)


class TenantResolver:
    """Maps a call's metadata to its tenant according to the auth configuration."""

    def __init__(self, auth: AuthConfig) -> None:
        self._auth = auth
        self._plain: dict[str, str] = {}
        self._hashed: dict[str, str] = {}
        for key, tenant in auth.keys.items():
            if key.startswith("sha256:"):
                self._hashed[key.removeprefix("sha256:").lower()] = tenant
            else:
                self._plain[key] = tenant
        self._index = KeyIndex(auth.keys_file) if auth.keys_file is not None else None

    def resolve(self, metadata: Sequence[tuple[str, str | bytes]] | None) -> tuple[str, str | None]:
        """Returns ``(tenant, raw authorization value)``; raises Unauthenticated."""
        raw: str | None = None
        for key, value in metadata or ():
            if key.lower() == AUTH_HEADER:
                raw = value.decode() if isinstance(value, bytes) else value
                break
        if self._auth.mode == "off":
            return DEFAULT_TENANT, raw
        if raw is None:
            raise Unauthenticated(
                "missing API key: send it in the 'authorization' metadata as 'Bearer <key>'",
                reason="API_KEY_MISSING",
            )
        key = raw[7:].strip() if raw.lower().startswith("bearer ") else raw.strip()
        tenant = self._lookup(key)
        if tenant is None:
            raise Unauthenticated("invalid or revoked API key", reason="API_KEY_INVALID")
        return tenant, raw

    def _lookup(self, key: str) -> str | None:
        found: str | None = None
        # Constant-time comparisons against every configured key.
        for known, tenant in self._plain.items():
            if hmac.compare_digest(known.encode(), key.encode()):
                found = tenant
        hashed = digest(key)
        for known, tenant in self._hashed.items():
            if hmac.compare_digest(known, hashed):
                found = tenant
        if found is None and self._index is not None:
            found = self._index.tenant_for(key)
        return found
