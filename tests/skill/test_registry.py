"""Skill and tool CRUD: validation naming fields, etags, soft delete, request-id replay,
tenant isolation."""

from __future__ import annotations

import uuid

import grpc
import pytest
from google.protobuf import field_mask_pb2
from skill_helpers import make_skill, param, python_tool, struct

from lightmind.skill.v1 import skill_service_pb2 as pb
from lightmind.testing import error_details


async def test_create_get_list_skill(stub) -> None:
    created = await make_skill(stub, "web-research", "Search the web and summarise findings.")
    assert created.skill_id and created.active and created.etag == "1"
    assert created.version == "1.0.0"
    by_name = await stub.GetSkill(pb.GetSkillRequest(skill="web-research"))
    by_id = await stub.GetSkill(pb.GetSkillRequest(skill=created.skill_id))
    assert by_name == by_id
    await make_skill(stub, "alpha")
    listed = await stub.ListSkills(pb.ListSkillsRequest(page_size=1))
    assert [s.name for s in listed.skills] == ["alpha"]
    rest = await stub.ListSkills(pb.ListSkillsRequest(page_token=listed.next_page_token))
    assert [s.name for s in rest.skills] == ["web-research"] and not rest.next_page_token
    # A token is signed and bound to its filters.
    for request in (
        pb.ListSkillsRequest(page_token=listed.next_page_token[:-3] + "AAA"),
        pb.ListSkillsRequest(page_token=listed.next_page_token, show_inactive=True),
    ):
        with pytest.raises(grpc.aio.AioRpcError) as info:
            await stub.ListSkills(request)
        err = error_details(info.value)
        assert err.code == grpc.StatusCode.INVALID_ARGUMENT and err.fields == ["page_token"]


async def test_invalid_skill_names_every_field(stub) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await stub.CreateSkill(
            pb.CreateSkillRequest(
                skill=pb.Skill(name="Bad Name", description="x" * 501, content=" ")
            )
        )
    details = error_details(info.value)
    assert details.code == grpc.StatusCode.INVALID_ARGUMENT
    assert details.fields == ["skill.name", "skill.description", "skill.content"]
    assert (await stub.ListSkills(pb.ListSkillsRequest())).skills == []


async def test_duplicate_name_is_already_exists(stub) -> None:
    await make_skill(stub, "dup")
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await make_skill(stub, "dup")
    assert info.value.code() == grpc.StatusCode.ALREADY_EXISTS


async def test_update_with_stale_etag_is_aborted_and_leaves_data(stub) -> None:
    skill = await make_skill(stub, "notes", "Take notes.")
    mask = field_mask_pb2.FieldMask(paths=["description"])
    updated = await stub.UpdateSkill(
        pb.UpdateSkillRequest(
            skill=pb.Skill(skill_id=skill.skill_id, description="Take careful notes."),
            update_mask=mask,
            etag=skill.etag,
        )
    )
    assert updated.description == "Take careful notes." and updated.etag == "2"
    assert updated.content == skill.content  # not in the mask
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await stub.UpdateSkill(
            pb.UpdateSkillRequest(
                skill=pb.Skill(skill_id=skill.skill_id, description="Lost update."),
                update_mask=mask,
                etag=skill.etag,
            )
        )
    assert error_details(info.value).code == grpc.StatusCode.ABORTED
    current = await stub.GetSkill(pb.GetSkillRequest(skill="notes"))
    assert current.description == "Take careful notes."


async def test_update_mask_rejects_unknown_paths(stub) -> None:
    skill = await make_skill(stub, "masked")
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await stub.UpdateSkill(
            pb.UpdateSkillRequest(
                skill=pb.Skill(skill_id=skill.skill_id),
                update_mask=field_mask_pb2.FieldMask(paths=["skill_id"]),
            )
        )
    assert error_details(info.value).fields == ["update_mask.paths[0]"]


async def test_delete_is_soft_and_update_restores(stub) -> None:
    skill = await make_skill(stub, "temp")
    await stub.DeleteSkill(pb.DeleteSkillRequest(skill="temp"))
    assert (await stub.ListSkills(pb.ListSkillsRequest())).skills == []
    hidden = await stub.ListSkills(pb.ListSkillsRequest(show_inactive=True))
    assert [(s.name, s.active) for s in hidden.skills] == [("temp", False)]
    restored = await stub.UpdateSkill(
        pb.UpdateSkillRequest(
            skill=pb.Skill(skill_id=skill.skill_id, active=True),
            update_mask=field_mask_pb2.FieldMask(paths=["active"]),
        )
    )
    assert restored.active


async def test_create_with_repeated_request_id_returns_first_answer(stub) -> None:
    rid = str(uuid.uuid4())
    first = await make_skill(stub, "once", request_id=rid)
    again = await make_skill(stub, "once", request_id=rid)
    assert again == first
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await make_skill(stub, "other", request_id=rid)
    assert error_details(info.value).fields == ["request_id"]
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await make_skill(stub, "bad-id", request_id="not-a-uuid")
    assert error_details(info.value).fields == ["request_id"]


async def test_tool_crud_and_schema(stub) -> None:
    tool = await stub.CreateTool(
        pb.CreateToolRequest(
            tool=python_tool(
                "echo",
                "skill_test_tools.echo",
                [
                    param("text", pb.PARAMETER_TYPE_STRING, description="What to echo."),
                    param(
                        "times",
                        pb.PARAMETER_TYPE_INTEGER,
                        required=False,
                        order=1,
                        validation_schema=struct({"minimum": 1}),
                    ),
                ],
                annotations=pb.ToolAnnotations(read_only_hint=True, idempotent_hint=True),
            )
        )
    )
    schema = dict(tool.input_schema)
    assert schema["required"] == ["text"]
    assert dict(schema["properties"]["times"]) == {"type": "integer", "minimum": 1}
    fetched = await stub.GetTool(pb.GetToolRequest(tool="echo"))
    assert fetched == tool
    updated = await stub.UpdateTool(
        pb.UpdateToolRequest(
            tool=pb.Tool(
                tool_id=tool.tool_id, parameters=[param("text", pb.PARAMETER_TYPE_STRING)]
            ),
            update_mask=field_mask_pb2.FieldMask(paths=["parameters"]),
            etag=tool.etag,
        )
    )
    assert [p.name for p in updated.parameters] == ["text"] and updated.etag == "2"
    await stub.DeleteTool(pb.DeleteToolRequest(tool="echo", etag=updated.etag))
    assert (await stub.ListTools(pb.ListToolsRequest())).tools == []


async def test_tool_validation_names_fields(stub) -> None:
    bad = pb.Tool(
        name="has space",
        description="",
        python=pb.PythonImplementation(callable="os.system"),
        parameters=[param("1x", pb.PARAMETER_TYPE_STRING), param("y", 0)],
    )
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await stub.CreateTool(pb.CreateToolRequest(tool=bad))
    assert error_details(info.value).fields == [
        "tool.name",
        "tool.description",
        "tool.parameters[0].name",
        "tool.parameters[1].type",
    ]
    ok_shape = python_tool("sys", "os.system", [])
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await stub.CreateTool(pb.CreateToolRequest(tool=ok_shape))
    details = error_details(info.value)
    assert details.fields == ["tool.python.callable"]
    assert details.reason == "PYTHON_MODULE_NOT_ALLOWED"
    no_impl = pb.Tool(name="none", description="Nothing.")
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await stub.CreateTool(pb.CreateToolRequest(tool=no_impl))
    assert error_details(info.value).fields == ["tool.implementation"]


async def test_tenants_do_not_see_each_other(two_tenants) -> None:
    stub, a, b = two_tenants
    request = pb.CreateSkillRequest(
        skill=pb.Skill(name="shared-name", description="Tenant A's skill.", content="A")
    )
    created = await stub.CreateSkill(request, metadata=a)
    # The same name is free in the other tenant; ids never cross.
    request.skill.content = "B"
    await stub.CreateSkill(request, metadata=b)
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await stub.GetSkill(pb.GetSkillRequest(skill=created.skill_id), metadata=b)
    assert info.value.code() == grpc.StatusCode.NOT_FOUND
    b_skill = await stub.GetSkill(pb.GetSkillRequest(skill="shared-name"), metadata=b)
    assert b_skill.content == "B"
    found = await stub.DiscoverSkills(pb.DiscoverSkillsRequest(query="skill"), metadata=a)
    assert [r.skill.skill_id for r in found.results] == [created.skill_id]
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await stub.ListSkills(pb.ListSkillsRequest())
    assert info.value.code() == grpc.StatusCode.UNAUTHENTICATED
