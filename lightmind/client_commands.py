"""Client commands of the ``lightmind`` CLI: ``ingest`` (files into organizational memory) and
``skills import`` (Agent Skills folders into SkillService).

They talk to the services only through their gRPC contracts, at the addresses of
``LIGHTMIND_MEMORY_ADDR`` / ``LIGHTMIND_SKILL_ADDR``, with ``LIGHTMIND_API_KEY`` as the bearer
key when set and TLS when ``LIGHTMIND_TLS_CA_FILE`` is set.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import grpc

from lightmind.channels import open_channel
from lightmind.config import ClientConfig

TEXT_SUFFIXES = {
    ".md",
    ".markdown",
    ".txt",
    ".text",
    ".rst",
    ".adoc",
    ".csv",
    ".json",
    ".yaml",
    ".yml",
    ".html",
    ".htm",
    ".xml",
    ".py",
    ".js",
    ".ts",
    ".java",
    ".go",
    ".rs",
    ".sql",
    ".toml",
    ".ini",
}
PIECE_CHARS = 256 * 1024


def _metadata() -> tuple[tuple[str, str], ...]:
    key = os.environ.get("LIGHTMIND_API_KEY")
    return (("authorization", f"Bearer {key}"),) if key else ()


class Progress:
    """A one-line progress bar on stderr (plain lines when stderr is not a terminal)."""

    def __init__(self, total: int, label: str) -> None:
        self.total, self.label, self.done = total, label, 0
        self._tty = sys.stderr.isatty()

    def step(self, note: str) -> None:
        self.done += 1
        width = 30
        filled = int(width * self.done / max(1, self.total))
        bar = "#" * filled + "." * (width - filled)
        line = f"[{bar}] {self.done}/{self.total} {self.label}  {note}"
        if self._tty:
            sys.stderr.write("\r\x1b[2K" + line[:200])
            if self.done == self.total:
                sys.stderr.write("\n")
        else:
            sys.stderr.write(line + "\n")
        sys.stderr.flush()


def text_files(paths: list[Path]) -> Iterator[Path]:
    """Files named, and text files below folders named (hidden ones skipped), sorted."""
    for path in paths:
        if path.is_file():
            yield path
        elif path.is_dir():
            for found in sorted(path.rglob("*")):
                hidden = any(part.startswith(".") for part in found.relative_to(path).parts)
                if found.is_file() and not hidden and found.suffix.lower() in TEXT_SUFFIXES:
                    yield found
        else:
            raise FileNotFoundError(f"{path}: no such file or folder")


async def ingest(paths: list[Path], knowledge_base: str, chunk_tokens: int, overlap: int) -> int:
    from lightmind.memory.v1 import memory_service_pb2 as mpb
    from lightmind.memory.v1 import memory_service_pb2_grpc as mpb_grpc

    try:
        files = list(text_files(paths))
    except FileNotFoundError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if not files:
        print("error: no text files found", file=sys.stderr)
        return 2
    clients = ClientConfig.from_env()
    progress = Progress(len(files), "files")
    failures = 0
    stored = reused = chunks = 0
    async with open_channel(clients.memory_addr, tls_ca_file=clients.tls_ca_file) as channel:
        stub = mpb_grpc.MemoryServiceStub(channel)
        for file in files:
            try:
                text = file.read_text(encoding="utf-8")
            except (UnicodeDecodeError, OSError) as exc:
                failures += 1
                progress.step(f"skipped {file} ({type(exc).__name__})")
                continue
            if not text.strip():
                progress.step(f"skipped {file} (empty)")
                continue

            async def messages(
                text: str = text, file: Path = file
            ) -> AsyncIterator[mpb.IngestDocumentStreamRequest]:
                chunking = mpb.ChunkingOptions(chunk_tokens=chunk_tokens, overlap_tokens=overlap)
                yield mpb.IngestDocumentStreamRequest(
                    document=mpb.Document(
                        source=str(file), title=file.stem, knowledge_base=knowledge_base
                    ),
                    chunking=chunking,
                )
                for start in range(0, len(text), PIECE_CHARS):
                    yield mpb.IngestDocumentStreamRequest(content=text[start : start + PIECE_CHARS])

            try:
                reply = await stub.IngestDocumentStream(
                    messages(), metadata=_metadata(), timeout=max(60.0, len(text) / 200)
                )
            except grpc.aio.AioRpcError as exc:
                failures += 1
                progress.step(f"failed {file}: {exc.code().name}: {exc.details()}")
                if exc.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.UNAUTHENTICATED):
                    break
                continue
            chunks += reply.document.chunk_count
            if reply.already_existed:
                reused += 1
            else:
                stored += 1
            state = "unchanged" if reply.already_existed else f"{reply.document.chunk_count} chunks"
            progress.step(f"{file} ({state})")
    print(f"ingested {stored} new, {reused} unchanged, {failures} failed; {chunks} chunks")
    return 1 if failures else 0


def skill_files(root: Path) -> list[tuple[str, bytes]]:
    """(path, bytes) of every file under ``root``: a skill folder (holding SKILL.md) or a
    folder of skill folders. Paths start with the skill folder's name."""
    base = root.parent if (root / "SKILL.md").is_file() else root
    files = []
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(base)
        if path.is_file() and not any(p.startswith(".") for p in relative.parts):
            files.append((relative.as_posix(), path.read_bytes()))
    return files


async def import_skills(files: list[tuple[str, bytes]], overwrite: bool) -> int:
    from lightmind.skill.v1 import skill_service_pb2 as spb
    from lightmind.skill.v1 import skill_service_pb2_grpc as spb_grpc

    clients = ClientConfig.from_env()
    async with open_channel(clients.skill_addr, tls_ca_file=clients.tls_ca_file) as channel:
        stub = spb_grpc.SkillServiceStub(channel)
        try:
            reply = await stub.ImportSkills(
                spb.ImportSkillsRequest(
                    files=[spb.SkillFile(path=p, content=c) for p, c in files],
                    overwrite=overwrite,
                ),
                metadata=_metadata(),
                timeout=clients.call_timeout_seconds * 4,
            )
        except grpc.aio.AioRpcError as exc:
            print(f"error: {exc.code().name}: {exc.details()}", file=sys.stderr)
            return 1
    for skill in reply.skills:
        print(f"imported {skill.name}: {skill.description[:80]}")
    return 0


def run_ingest(paths: list[str], knowledge_base: str, chunk_tokens: int, overlap: int) -> int:
    return asyncio.run(ingest([Path(p) for p in paths], knowledge_base, chunk_tokens, overlap))


def run_import_skills(folder: str, overwrite: bool) -> int:
    root = Path(folder)
    if not root.is_dir():
        print(f"error: {root}: not a folder", file=sys.stderr)
        return 2
    files = skill_files(root)
    if not any(path.endswith("SKILL.md") for path, _ in files):
        print(f"error: no SKILL.md under {root}", file=sys.stderr)
        return 2
    return asyncio.run(import_skills(files, overwrite))
