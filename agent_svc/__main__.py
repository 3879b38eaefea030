"""``python -m agent_svc``: run AgentService until SIGTERM."""

from __future__ import annotations

import asyncio

from agent_svc.config import AgentConfig
from agent_svc.service import build
from lightmind import logs, server


def main() -> None:
    config = AgentConfig.from_env()
    logs.configure(config.server.log_level, config.server.log_format)
    asyncio.run(server.run(config.server, config.auth, lambda: build(config)))


if __name__ == "__main__":
    main()
