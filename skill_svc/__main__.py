"""``python -m skill_svc``: run SkillService until SIGTERM."""

from __future__ import annotations

import asyncio

from lightmind import logs, server
from skill_svc.config import SkillConfig
from skill_svc.service import build


def main() -> None:
    config = SkillConfig.from_env()
    logs.configure(config.server.log_level, config.server.log_format)
    asyncio.run(server.run(config.server, config.auth, lambda: build(config)))


if __name__ == "__main__":
    main()
