"""`lightmind ingest` and `lightmind skills import` against real MemoryService and SkillService."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import grpc

from lightmind.memory.v1 import memory_service_pb2 as mpb
from lightmind.memory.v1 import memory_service_pb2_grpc as mpb_grpc
from lightmind.skill.v1 import skill_service_pb2 as spb
from lightmind.skill.v1 import skill_service_pb2_grpc as spb_grpc
from lightmind.testing import ServerHandle
from memory_svc.config import MemoryConfig
from memory_svc.service import build as build_memory
from skill_svc.config import SkillConfig
from skill_svc.service import build as build_skill

LIGHTMIND = str(Path(sys.executable).parent / "lightmind")


def cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [LIGHTMIND, *args],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


async def test_ingest_files_and_folders(
    tmp_path: Path, database_url: str, embedding_server: ServerHandle
) -> None:
    docs = tmp_path / "handbook"
    (docs / "policies").mkdir(parents=True)
    (docs / "policies" / "leave.md").write_text(
        "# Leave\n\nEmployees get 25 days of paid leave a year. " * 40
    )
    (docs / "travel.txt").write_text("Book trains for trips under four hours.")
    (docs / ".secret.md").write_text("hidden files are skipped")
    (docs / "logo.png").write_bytes(b"\x89PNG\r\n")
    env = {"DATABASE_URL": database_url, "LIGHTMIND_EMBEDDING_ADDR": embedding_server.address}
    memory = await ServerHandle.start("memory", lambda: build_memory(MemoryConfig.from_env(env)))
    try:
        client_env = {"LIGHTMIND_MEMORY_ADDR": memory.address}
        first = await asyncio.to_thread(
            cli, client_env, "ingest", str(docs), "--knowledge-base", "hr", "--chunk-tokens", "64"
        )
        assert first.returncode == 0, first.stderr
        assert "ingested 2 new, 0 unchanged, 0 failed" in first.stdout
        again = await asyncio.to_thread(
            cli, client_env, "ingest", str(docs / "travel.txt"), "--knowledge-base", "hr"
        )
        assert again.returncode == 0 and "0 new, 1 unchanged" in again.stdout
        missing = await asyncio.to_thread(cli, client_env, "ingest", str(tmp_path / "nope"))
        assert missing.returncode == 2 and "no such file" in missing.stderr
        async with grpc.aio.insecure_channel(memory.address) as channel:
            stub = mpb_grpc.MemoryServiceStub(channel)
            listed = await stub.ListDocuments(mpb.ListDocumentsRequest(knowledge_base="hr"))
            sources = sorted(Path(d.source).name for d in listed.documents)
            assert sources == ["leave.md", "travel.txt"]
            leave = next(d for d in listed.documents if d.source.endswith("leave.md"))
            assert leave.chunk_count > 1 and leave.chunk_tokens == 64
    finally:
        await memory.stop()


async def test_skills_import_folder(
    tmp_path: Path, database_url: str, embedding_server: ServerHandle
) -> None:
    skill_dir = tmp_path / "skills" / "release-notes"
    (skill_dir / "templates").mkdir(parents=True)
    (skill_dir / "SKILL.md").write_text(
        "---\nname: release-notes\ndescription: Write release notes from a list of merged "
        "changes.\n---\n# Release notes\n\nGroup changes by area; lead with user impact.\n"
    )
    (skill_dir / "templates" / "notes.md").write_text("## {version}\n")
    env = {"DATABASE_URL": database_url, "LIGHTMIND_EMBEDDING_ADDR": embedding_server.address}
    skill = await ServerHandle.start("skill", lambda: build_skill(SkillConfig.from_env(env)))
    try:
        client_env = {"LIGHTMIND_SKILL_ADDR": skill.address}
        result = await asyncio.to_thread(
            cli, client_env, "skills", "import", str(tmp_path / "skills")
        )
        assert result.returncode == 0, result.stderr
        assert "imported release-notes" in result.stdout
        twice = await asyncio.to_thread(cli, client_env, "skills", "import", str(skill_dir))
        assert twice.returncode == 1 and "ALREADY_EXISTS" in twice.stderr
        forced = await asyncio.to_thread(
            cli, client_env, "skills", "import", str(skill_dir), "--overwrite"
        )
        assert forced.returncode == 0, forced.stderr
        async with grpc.aio.insecure_channel(skill.address) as channel:
            got = await spb_grpc.SkillServiceStub(channel).GetSkill(
                spb.GetSkillRequest(skill="release-notes")
            )
            assert "lead with user impact" in got.content
    finally:
        await skill.stop()
