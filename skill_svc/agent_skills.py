"""Agent Skills folders (SKILL.md + files) in and out.

A skill folder holds ``SKILL.md``: YAML front matter between ``---`` lines (``name`` and
``description`` required; ``license``, ``metadata`` and other keys optional) and a markdown
body, the instructions. Other files of the folder (scripts/, references/, assets/) travel
with the skill and come back on export. Input is a list of files or a zip archive; paths are
checked (no absolute paths, no ``..``), and archives are bounded in entries and size.
"""

from __future__ import annotations

import io
import posixpath
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import yaml

from lightmind.errors import InvalidArgument

MAX_FILES = 500
MAX_TOTAL_BYTES = 20 * 1024 * 1024
SKILL_FILE = "SKILL.md"


@dataclass
class SkillFolder:
    folder: str
    name: str
    description: str
    body: str
    license: str = ""
    metadata: dict[str, str] = field(default_factory=dict)
    files: list[tuple[str, bytes]] = field(default_factory=list)  # relative to the folder


def _clean_path(path: str, field: str) -> str:
    norm = posixpath.normpath(path.replace("\\", "/"))
    if path.startswith("/") or norm.startswith("..") or norm in (".", ""):
        raise InvalidArgument.field(field, f"{path!r} is not a relative path inside the folder")
    return norm


def files_from_zip(data: bytes) -> list[tuple[str, bytes]]:
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile:
        raise InvalidArgument.field("zip_archive", "is not a zip archive") from None
    entries = [i for i in archive.infolist() if not i.is_dir()]
    if len(entries) > MAX_FILES:
        raise InvalidArgument.field("zip_archive", f"has more than {MAX_FILES} files")
    if sum(i.file_size for i in entries) > MAX_TOTAL_BYTES:
        raise InvalidArgument.field("zip_archive", f"unpacks to more than {MAX_TOTAL_BYTES} bytes")
    return [(_clean_path(i.filename, "zip_archive"), archive.read(i)) for i in entries]


def parse_skill_md(text: str, field: str) -> tuple[dict[str, Any], str]:
    lines = text.lstrip("\ufeff").splitlines()
    if not lines or lines[0].strip() != "---":
        raise InvalidArgument.field(field, "must start with '---' front matter")
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].strip() == "---")
    except StopIteration:
        raise InvalidArgument.field(field, "front matter is not closed by '---'") from None
    try:
        front = yaml.safe_load("\n".join(lines[1:end])) or {}
    except yaml.YAMLError as exc:
        raise InvalidArgument.field(field, f"front matter is not valid YAML: {exc}") from None
    if not isinstance(front, dict):
        raise InvalidArgument.field(field, "front matter must be a mapping")
    body = "\n".join(lines[end + 1 :]).strip() + "\n"
    return front, body


def folders(files: Iterable[tuple[str, bytes]]) -> list[SkillFolder]:
    """Groups files by the folder of each SKILL.md; files outside any skill are refused."""
    cleaned = [(_clean_path(p, f"files[{i}].path"), c) for i, (p, c) in enumerate(files)]
    roots = sorted(
        {posixpath.dirname(p) for p, _ in cleaned if posixpath.basename(p) == SKILL_FILE},
        key=len,
        reverse=True,
    )
    if not roots:
        raise InvalidArgument.field("files", "no SKILL.md found")
    found: dict[str, SkillFolder] = {}
    extra: dict[str, list[tuple[str, bytes]]] = {r: [] for r in roots}
    for path, content in cleaned:
        root = next((r for r in roots if r == "" or path.startswith(r + "/")), None)
        if root is None:
            raise InvalidArgument.field("files", f"{path!r} is not inside a skill folder")
        rel = posixpath.relpath(path, root) if root else path
        if rel == SKILL_FILE:
            where = f"files[{path}]"
            try:
                text = content.decode("utf-8")
            except UnicodeDecodeError:
                raise InvalidArgument.field(where, "SKILL.md is not UTF-8") from None
            front, body = parse_skill_md(text, where)
            metadata = front.get("metadata") or {}
            if not isinstance(metadata, dict):
                raise InvalidArgument.field(where, "metadata must be a mapping")
            for key in ("compatibility", "allowed-tools"):
                if key in front:
                    metadata[key] = front[key]
            found[root] = SkillFolder(
                folder=root,
                name=str(front.get("name") or posixpath.basename(root)),
                description=str(front.get("description") or "").strip(),
                body=body,
                license=str(front.get("license") or ""),
                metadata={str(k): str(v) for k, v in metadata.items()},
            )
        else:
            extra[root].append((rel, content))
    for root, items in extra.items():
        found[root].files = items
    return [found[r] for r in sorted(found)]


def render_skill_md(
    name: str, description: str, body: str, license: str, metadata: dict[str, str]
) -> str:
    front: dict[str, Any] = {"name": name, "description": description}
    if license:
        front["license"] = license
    meta = dict(metadata)
    for key in ("compatibility", "allowed-tools"):
        if key in meta:
            front[key] = meta.pop(key)
    if meta:
        front["metadata"] = meta
    head = yaml.safe_dump(front, sort_keys=False, allow_unicode=True, width=100).strip()
    return f"---\n{head}\n---\n\n{body.strip()}\n"


def to_zip(files: list[tuple[str, bytes]]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path, content in files:
            archive.writestr(path, content)
    return buffer.getvalue()
