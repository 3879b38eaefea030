"""Progressive disclosure (levels 1 and 2), dependency availability and cycles, discovery."""

from __future__ import annotations

import grpc
import pytest
from skill_helpers import grant, make_skill, param, python_tool

from lightmind.skill.v1 import skill_service_pb2 as pb
from lightmind.testing import error_details


async def test_level_one_lists_usable_skills_in_priority_order(stub) -> None:
    for name in ("writing", "coding", "math", "secret"):
        await make_skill(stub, name)
    await grant(stub, "agent-1", "writing", priority=1, sequence=2)
    await grant(stub, "agent-1", "coding", priority=5)
    await grant(stub, "agent-1", "math", priority=1, sequence=1)
    await grant(stub, "agent-1", "secret", priority=9, allowed_users=["alice"])
    await grant(stub, "agent-2", "math")
    listed = await stub.ListAgentSkills(pb.ListAgentSkillsRequest(agent_id="agent-1"))
    assert [s.name for s in listed.skills] == ["coding", "math", "writing"]
    # Level 1 carries names and descriptions only.
    assert listed.skills[0].description == "The coding skill."
    alice = await stub.ListAgentSkills(
        pb.ListAgentSkillsRequest(agent_id="agent-1", user_id="alice", page_size=2)
    )
    assert [s.name for s in alice.skills] == ["secret", "coding"]
    more = await stub.ListAgentSkills(
        pb.ListAgentSkillsRequest(
            agent_id="agent-1", user_id="alice", page_token=alice.next_page_token
        )
    )
    assert [s.name for s in more.skills] == ["math", "writing"]
    await stub.UnassignSkill(pb.UnassignSkillRequest(agent_id="agent-1", skill="coding"))
    after = await stub.ListAgentSkills(pb.ListAgentSkillsRequest(agent_id="agent-1"))
    assert [s.name for s in after.skills] == ["math", "writing"]


async def test_inactive_required_dependency_hides_the_skill(stub) -> None:
    for name in ("report", "charts", "fonts", "extras"):
        await make_skill(stub, name)
    await stub.AddDependency(
        pb.AddDependencyRequest(skill="report", depends_on="charts", required=True)
    )
    await stub.AddDependency(
        pb.AddDependencyRequest(skill="charts", depends_on="fonts", required=True)
    )
    await stub.AddDependency(pb.AddDependencyRequest(skill="report", depends_on="extras"))
    await grant(stub, "agent", "report")
    listed = await stub.ListAgentSkills(pb.ListAgentSkillsRequest(agent_id="agent"))
    assert [s.name for s in listed.skills] == ["report"]
    await stub.DeleteSkill(pb.DeleteSkillRequest(skill="extras"))  # optional: no effect
    listed = await stub.ListAgentSkills(pb.ListAgentSkillsRequest(agent_id="agent"))
    assert [s.name for s in listed.skills] == ["report"]
    await stub.DeleteSkill(pb.DeleteSkillRequest(skill="fonts"))  # required, two levels down
    listed = await stub.ListAgentSkills(pb.ListAgentSkillsRequest(agent_id="agent"))
    assert listed.skills == []
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await stub.LoadSkill(pb.LoadSkillRequest(agent_id="agent", skill="report"))
    details = error_details(info.value)
    assert details.code == grpc.StatusCode.FAILED_PRECONDITION
    assert "fonts" in details.message


async def test_cycles_are_refused_naming_the_cycle(stub) -> None:
    for name in ("a", "b", "c"):
        await make_skill(stub, name)
    await stub.AddDependency(pb.AddDependencyRequest(skill="a", depends_on="b", required=True))
    await stub.AddDependency(pb.AddDependencyRequest(skill="b", depends_on="c", required=True))
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await stub.AddDependency(pb.AddDependencyRequest(skill="c", depends_on="a"))
    details = error_details(info.value)
    assert details.code == grpc.StatusCode.FAILED_PRECONDITION
    assert details.reason == "DEPENDENCY_CYCLE"
    assert "c -> a -> b -> c" in details.message
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await stub.AddDependency(pb.AddDependencyRequest(skill="a", depends_on="a"))
    assert error_details(info.value).reason == "DEPENDENCY_CYCLE"
    skill = await stub.GetSkill(pb.GetSkillRequest(skill="c"))
    assert list(skill.dependencies) == []


async def test_level_two_loads_tools_dependencies_first_deduplicated(stub) -> None:
    for name in ("base", "middle", "top"):
        await make_skill(stub, name)
    for tool in ("t-base", "t-middle", "t-top", "t-shared"):
        await stub.CreateTool(
            pb.CreateToolRequest(
                tool=python_tool(
                    tool, "skill_test_tools.echo", [param("text", pb.PARAMETER_TYPE_STRING)]
                )
            )
        )
    await stub.AddDependency(
        pb.AddDependencyRequest(skill="top", depends_on="middle", required=True)
    )
    await stub.AddDependency(
        pb.AddDependencyRequest(skill="middle", depends_on="base", required=True)
    )
    for skill, tool in [
        ("base", "t-base"),
        ("base", "t-shared"),
        ("middle", "t-middle"),
        ("top", "t-top"),
        ("top", "t-shared"),
    ]:
        await stub.AttachTool(pb.AttachToolRequest(skill=skill, tool=tool))
    await grant(stub, "agent", "top")
    loaded = await stub.LoadSkill(pb.LoadSkillRequest(agent_id="agent", skill="top"))
    assert loaded.content.startswith("# top")
    assert [t.name for t in loaded.tools] == ["t-base", "t-shared", "t-middle", "t-top"]
    assert [d.name for d in loaded.dependencies] == ["base", "middle"]
    schema = loaded.tools[0].input_schema
    assert schema["type"] == "object" and list(schema["required"]) == ["text"]
    # A dependency can be loaded on its own; an unassigned skill cannot.
    await stub.LoadSkill(pb.LoadSkillRequest(agent_id="agent", skill="base"))
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await stub.LoadSkill(pb.LoadSkillRequest(agent_id="other-agent", skill="top"))
    assert info.value.code() == grpc.StatusCode.PERMISSION_DENIED
    await stub.DeleteTool(pb.DeleteToolRequest(tool="t-shared"))
    loaded = await stub.LoadSkill(pb.LoadSkillRequest(agent_id="agent", skill="top"))
    assert [t.name for t in loaded.tools] == ["t-base", "t-middle", "t-top"]


SKILLS = {
    "send-email": "Compose and send email messages to contacts through the mail server.",
    "weather-forecast": "Look up the weather forecast: temperature, rain and wind for a city.",
    "sql-analytics": "Write and run SQL queries against the analytics warehouse.",
    "translate-text": "Translate text between human languages such as French and Japanese.",
    "image-resize": "Resize, crop and convert images between PNG and JPEG formats.",
}
PARAPHRASES = {
    "send-email": "write a note to my colleague and deliver it to her inbox",
    "weather-forecast": "will it be raining in Paris tomorrow?",
    "sql-analytics": "how many orders did we get last month according to the database",
    "translate-text": "how do you say good morning in Japanese",
    "image-resize": "make this photo smaller so it fits as a thumbnail",
}


async def test_discovery_ranks_the_right_skill_first_for_paraphrases(stub) -> None:
    for name, description in SKILLS.items():
        await make_skill(stub, name, description)
    for expected, query in PARAPHRASES.items():
        found = await stub.DiscoverSkills(pb.DiscoverSkillsRequest(query=query, top_k=3))
        assert found.results[0].skill.name == expected, (query, found.results)
        assert len(found.results) == 3
        assert found.results[0].score > found.results[1].score
    limited = await stub.DiscoverSkills(
        pb.DiscoverSkillsRequest(query=PARAPHRASES["send-email"], agent_id="nobody")
    )
    assert list(limited.results) == []
    await grant(stub, "agent", "weather-forecast")
    limited = await stub.DiscoverSkills(
        pb.DiscoverSkillsRequest(query=PARAPHRASES["send-email"], agent_id="agent")
    )
    assert [r.skill.name for r in limited.results] == ["weather-forecast"]


async def test_discover_tools(stub) -> None:
    await stub.CreateTool(
        pb.CreateToolRequest(
            tool=python_tool(
                "current_time",
                "skill_svc.builtins.current_time",
                [param("timezone", pb.PARAMETER_TYPE_STRING, required=False)],
                description="Tell the current date and time in a time zone.",
            )
        )
    )
    await stub.CreateTool(
        pb.CreateToolRequest(
            tool=python_tool(
                "calculate",
                "skill_svc.builtins.calculate",
                [param("expression", pb.PARAMETER_TYPE_STRING)],
                description="Evaluate an arithmetic expression and return the number.",
            )
        )
    )
    found = await stub.DiscoverTools(pb.DiscoverToolsRequest(query="what is 17 times 23"))
    assert found.results[0].tool.name == "calculate"
    found = await stub.DiscoverTools(pb.DiscoverToolsRequest(query="what hour is it in Tokyo"))
    assert found.results[0].tool.name == "current_time"
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await stub.DiscoverTools(pb.DiscoverToolsRequest(query=" "))
    assert error_details(info.value).fields == ["query"]
