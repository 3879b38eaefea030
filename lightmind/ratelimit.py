"""A per-tenant token bucket: ``rate`` requests a second on average, ``burst`` at once.

The server interceptor asks ``allow(tenant)`` before running a handler; a refusal becomes
RESOURCE_EXHAUSTED (reason RATE_LIMITED) with the seconds to wait in the ErrorInfo metadata.
Buckets live in process memory, so a limit applies per service replica.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass
class _Bucket:
    tokens: float
    updated: float


class RateLimiter:
    def __init__(self, rate: float, burst: int, clock: Callable[[], float] | None = None) -> None:
        self.rate = rate
        self.burst = max(1, burst)
        self._clock = clock or time.monotonic
        self._buckets: dict[str, _Bucket] = {}

    @property
    def enabled(self) -> bool:
        return self.rate > 0

    def allow(self, tenant: str) -> float:
        """0.0 if the call may go ahead, else the seconds until it could."""
        if not self.enabled:
            return 0.0
        now = self._clock()
        bucket = self._buckets.get(tenant)
        if bucket is None:
            bucket = self._buckets[tenant] = _Bucket(float(self.burst), now)
        bucket.tokens = min(self.burst, bucket.tokens + (now - bucket.updated) * self.rate)
        bucket.updated = now
        if bucket.tokens >= 1.0:
            bucket.tokens -= 1.0
            return 0.0
        return (1.0 - bucket.tokens) / self.rate
