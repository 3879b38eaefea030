"""API keys kept hashed in a JSON file: created and revoked by ``lightmind keys``.

A key is ``lm_`` plus 32 random bytes (URL-safe base64), shown once at creation. The file
keeps only its SHA-256 digest (keys are random and long, so a fast hash is enough), the tenant
it maps to, a short id for revocation, and timestamps. Services point ``LIGHTMIND_API_KEYS_FILE``
at the file and re-read it when it changes, so a revoked key stops working within about a
second without a restart. Writes go to a temporary file renamed into place under a lock.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import hmac
import json
import os
import secrets
import threading
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

KEY_PREFIX = "lm_"


def digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


@dataclass(frozen=True)
class KeyRecord:
    id: str
    tenant: str
    sha256: str
    created_at: float
    revoked_at: float | None = None


class KeyFile:
    """Reads and writes one keys file."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path.with_suffix(self.path.suffix + ".lock"), "w") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            yield

    def load(self) -> list[KeyRecord]:
        try:
            data = json.loads(self.path.read_text())
        except FileNotFoundError:
            return []
        return [KeyRecord(**entry) for entry in data.get("keys", [])]

    def _save(self, records: list[KeyRecord]) -> None:
        tmp = self.path.with_suffix(self.path.suffix + ".tmp")
        tmp.write_text(json.dumps({"keys": [asdict(r) for r in records]}, indent=2))
        os.chmod(tmp, 0o600)
        tmp.replace(self.path)

    def create(self, tenant: str) -> tuple[KeyRecord, str]:
        """A new key for ``tenant``: returns its record and the key itself (shown once)."""
        if (
            not tenant
            or len(tenant) > 128
            or not tenant.replace("-", "").replace("_", "").isalnum()
        ):
            raise ValueError("tenant: use 1-128 letters, digits, '-' or '_'")
        key = KEY_PREFIX + secrets.token_urlsafe(32)
        record = KeyRecord(
            id=secrets.token_hex(4), tenant=tenant, sha256=digest(key), created_at=time.time()
        )
        with self._locked():
            self._save([*self.load(), record])
        return record, key

    def revoke(self, key_id: str) -> KeyRecord:
        with self._locked():
            records = self.load()
            for i, record in enumerate(records):
                if record.id == key_id and record.revoked_at is None:
                    revoked = KeyRecord(**{**asdict(record), "revoked_at": time.time()})
                    records[i] = revoked
                    self._save(records)
                    return revoked
        raise KeyError(f"no active key with id {key_id!r}")


class KeyIndex:
    """Digest → tenant for active keys, refreshed from the file when it changes."""

    def __init__(self, path: Path, min_interval: float = 1.0) -> None:
        self._file = KeyFile(path)
        self._min_interval = min_interval
        self._checked = 0.0
        self._mtime: float | None = None
        self._tenants: dict[str, str] = {}
        self._lock = threading.Lock()

    def tenant_for(self, key: str) -> str | None:
        self._refresh()
        wanted = digest(key)
        found: str | None = None
        for known, tenant in self._tenants.items():
            if hmac.compare_digest(known, wanted):
                found = tenant
        return found

    def _refresh(self) -> None:
        now = time.monotonic()
        if now - self._checked < self._min_interval:
            return
        with self._lock:
            self._checked = now
            try:
                mtime = self._file.path.stat().st_mtime
            except FileNotFoundError:
                self._tenants, self._mtime = {}, None
                return
            if mtime == self._mtime:
                return
            self._tenants = {r.sha256: r.tenant for r in self._file.load() if r.revoked_at is None}
            self._mtime = mtime
