"""``python -m memory_svc``: run MemoryService until SIGTERM."""

from __future__ import annotations

import asyncio

from lightmind import logs, server
from memory_svc.config import MemoryConfig
from memory_svc.service import build


def main() -> None:
    config = MemoryConfig.from_env()
    logs.configure(config.server.log_level, config.server.log_format)
    asyncio.run(server.run(config.server, config.auth, lambda: build(config)))


if __name__ == "__main__":
    main()
