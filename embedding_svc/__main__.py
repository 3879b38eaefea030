"""``python -m embedding_svc``: run EmbeddingService until SIGTERM."""

from __future__ import annotations

import asyncio

from embedding_svc.config import EmbeddingConfig
from embedding_svc.service import build
from lightmind import logs, server


def main() -> None:
    config = EmbeddingConfig.from_env()
    logs.configure(config.server.log_level, config.server.log_format)
    asyncio.run(server.run(config.server, config.auth, lambda: build(config)))


if __name__ == "__main__":
    main()
