"""Agent Skills folders: SKILL.md import (files and zip), round-trip export, bad input."""

from __future__ import annotations

import io
import zipfile

import grpc
import pytest

from lightmind.skill.v1 import skill_service_pb2 as pb
from lightmind.testing import error_details

SKILL_MD = b"""---
name: pdf-forms
description: Fill in PDF forms and extract their fields. Use when the user mentions PDF forms.
license: Apache-2.0
metadata:
  author: example
---

# Filling PDF forms

1. Run `scripts/fields.py` to list the fields.
2. Fill them in.
"""


async def test_import_files_and_export_round_trip(stub) -> None:
    files = [
        pb.SkillFile(path="pdf-forms/SKILL.md", content=SKILL_MD),
        pb.SkillFile(path="pdf-forms/scripts/fields.py", content=b"print('fields')\n"),
    ]
    imported = await stub.ImportSkills(pb.ImportSkillsRequest(files=files))
    [skill] = imported.skills
    assert skill.name == "pdf-forms" and skill.license == "Apache-2.0"
    assert skill.metadata["author"] == "example"
    assert skill.content.startswith("# Filling PDF forms")
    exported = await stub.ExportSkill(pb.ExportSkillRequest(skill="pdf-forms"))
    assert [f.path for f in exported.files] == ["pdf-forms/SKILL.md", "pdf-forms/scripts/fields.py"]
    archive = zipfile.ZipFile(io.BytesIO(exported.zip_archive))
    assert archive.read("pdf-forms/scripts/fields.py") == b"print('fields')\n"
    # The exported folder imports back to the same skill.
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await stub.ImportSkills(pb.ImportSkillsRequest(zip_archive=exported.zip_archive))
    assert info.value.code() == grpc.StatusCode.ALREADY_EXISTS
    again = await stub.ImportSkills(
        pb.ImportSkillsRequest(zip_archive=exported.zip_archive, overwrite=True)
    )
    assert again.skills[0].content == skill.content
    assert again.skills[0].description == skill.description


async def test_bad_skill_folders_name_the_problem(stub) -> None:
    no_front = [pb.SkillFile(path="x/SKILL.md", content=b"# just markdown\n")]
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await stub.ImportSkills(pb.ImportSkillsRequest(files=no_front))
    assert error_details(info.value).fields == ["files[x/SKILL.md]"]
    bad_name = [pb.SkillFile(path="y/SKILL.md", content=b"---\nname: Not Valid\n---\nbody\n")]
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await stub.ImportSkills(pb.ImportSkillsRequest(files=bad_name))
    assert error_details(info.value).fields == [
        "files[y/SKILL.md].name",
        "files[y/SKILL.md].description",
    ]
    escape = [pb.SkillFile(path="../SKILL.md", content=SKILL_MD)]
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await stub.ImportSkills(pb.ImportSkillsRequest(files=escape))
    assert error_details(info.value).fields == ["files[0].path"]
    assert (await stub.ListSkills(pb.ListSkillsRequest())).skills == []
