"""assistants.*: every method of the sub-client, with its parameters, each
response checked against langgraph_sdk.schema."""

import uuid

import pytest
from langgraph_sdk.errors import ConflictError, NotFoundError, UnprocessableEntityError
from langgraph_sdk.schema import Assistant, AssistantsSearchResponse, AssistantVersion, GraphSchema, Thread

from schema_check import check

AGENT_ID = str(uuid.uuid5(uuid.UUID("6ba7b821-9dad-11d1-80b4-00c04fd430c8"), "agent"))


async def test_get_system_assistant(client):
    a = await client.assistants.get(AGENT_ID)
    check(a, Assistant)
    assert a["graph_id"] == "agent"
    assert a["name"] == "agent"
    assert a["metadata"] == {"created_by": "system"}
    with pytest.raises(NotFoundError):
        await client.assistants.get(str(uuid.uuid4()))


async def test_create_update_versions_set_latest_delete(client):
    aid = str(uuid.uuid4())
    a = await client.assistants.create(
        "agent", config={"configurable": {"model_name": "openai"}}, metadata={"team": "py"},
        assistant_id=aid, if_exists="raise", name="py-agent", description="made by pytest",
    )
    check(a, Assistant)
    assert (a["assistant_id"], a["version"], a["name"], a["description"]) == (aid, 1, "py-agent", "made by pytest")
    assert a["config"]["configurable"] == {"model_name": "openai"}
    with pytest.raises(ConflictError):
        await client.assistants.create("agent", assistant_id=aid)
    same = await client.assistants.create("agent", assistant_id=aid, if_exists="do_nothing")
    assert same["created_at"] == a["created_at"]

    ctx = await client.assistants.create("simple_runtime", context={"model": "x"})
    check(ctx, Assistant)
    assert ctx["context"] == {"model": "x"}

    u = await client.assistants.update(aid, graph_id="agent", config={"tags": ["t"]}, metadata={"extra": 1}, name="renamed", description="d2")
    check(u, Assistant)
    assert u["version"] == 2 and u["name"] == "renamed" and u["metadata"] == {"team": "py", "extra": 1}
    u3 = await client.assistants.update(aid, context={})
    assert u3["version"] == 3

    versions = await client.assistants.get_versions(aid)
    for v in versions:
        check(v, AssistantVersion)
    assert [v["version"] for v in versions] == [3, 2, 1]
    assert [v["version"] for v in await client.assistants.get_versions(aid, limit=1, offset=1)] == [2]
    assert [v["version"] for v in await client.assistants.get_versions(aid, metadata={"extra": 1})] == [3, 2]

    latest = await client.assistants.set_latest(aid, 1)
    check(latest, Assistant)
    assert latest["version"] == 1 and latest["name"] == "py-agent"

    # delete_threads removes the threads the assistant ran on
    th = await client.threads.create()
    await client.runs.wait(th["thread_id"], aid, input={"messages": [{"role": "user", "content": "foo"}]})
    assert await client.assistants.delete(aid, delete_threads=True) is None
    with pytest.raises(NotFoundError):
        await client.assistants.get(aid)
    with pytest.raises(NotFoundError):
        await client.threads.get(th["thread_id"])
    await client.assistants.delete(ctx["assistant_id"])


async def test_search_and_count(client):
    tag = str(uuid.uuid4())
    made = [await client.assistants.create("agent", metadata={"tag": tag, "i": i}, name=f"s-{tag}-{i}") for i in range(3)]
    found = await client.assistants.search(metadata={"tag": tag}, graph_id="agent", limit=2, offset=0, sort_by="name", sort_order="asc")
    for a in found:
        check(a, Assistant)
    assert [a["name"] for a in found] == [f"s-{tag}-0", f"s-{tag}-1"]
    page = await client.assistants.search(metadata={"tag": tag}, limit=2, response_format="object")
    check(page, AssistantsSearchResponse)
    assert len(page["assistants"]) == 2 and page["next"] == "2"
    last = await client.assistants.search(metadata={"tag": tag}, limit=2, offset=2, response_format="object")
    assert len(last["assistants"]) == 1 and last["next"] is None
    sel = await client.assistants.search(name=f"s-{tag}-2", select=["assistant_id", "name"])
    assert sel == [{"assistant_id": made[2]["assistant_id"], "name": f"s-{tag}-2"}]
    assert await client.assistants.count(metadata={"tag": tag}) == 3
    assert await client.assistants.count(graph_id="agent", name=f"s-{tag}-1") == 1
    with pytest.raises(UnprocessableEntityError):
        await client.assistants.search(sort_by="nope")


async def test_graph_schemas_subgraphs(client):
    g = await client.assistants.get_graph(AGENT_ID)
    assert {n["id"] for n in g["nodes"]} >= {"__start__", "agent", "tool", "__end__"}
    assert any(e.get("conditional") for e in g["edges"])
    nested = await client.assistants.get_graph("nested", xray=True)
    flat = await client.assistants.get_graph("nested")
    assert len(nested["nodes"]) > len(flat["nodes"])
    assert len((await client.assistants.get_graph("nested", xray=1))["nodes"]) >= len(flat["nodes"])

    s = await client.assistants.get_schemas(AGENT_ID)
    check(s, GraphSchema)
    assert s["graph_id"] == "agent"
    assert "messages" in s["state_schema"]["properties"]

    subs = await client.assistants.get_subgraphs("nested")
    assert list(subs) == ["gp_two"]
    for v in subs.values():
        check({"graph_id": "x", **v}, GraphSchema)
    deep = await client.assistants.get_subgraphs("nested", recurse=True)
    assert set(deep) == {"gp_two", "gp_two|p_two"}
    only = await client.assistants.get_subgraphs("nested", namespace="gp_two")
    assert list(only) == ["gp_two"]
