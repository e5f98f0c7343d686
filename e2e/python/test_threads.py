"""threads.*: CRUD, search/count, copy, prune, state, history, each response
checked against langgraph_sdk.schema."""

import asyncio
import uuid

import pytest
from langgraph_sdk.errors import ConflictError, NotFoundError, UnprocessableEntityError
from langgraph_sdk.schema import Thread, ThreadState, ThreadUpdateStateResponse

from schema_check import check


def human(content):
    return {"type": "human", "content": content}


def contents(values):
    return [m["content"] for m in values["messages"]]


async def test_crud(client):
    tid = str(uuid.uuid4())
    t = await client.threads.create(metadata={"owner": "ann"}, thread_id=tid, if_exists="raise", ttl=60)
    check(t, Thread)
    assert (t["thread_id"], t["status"], t["values"], t["interrupts"]) == (tid, "idle", None, {})
    with pytest.raises(ConflictError):
        await client.threads.create(thread_id=tid)
    again = await client.threads.create(thread_id=tid, if_exists="do_nothing")
    assert again["created_at"] == t["created_at"]

    got = await client.threads.get(tid, include=["ttl"])
    check(got, Thread)
    assert got["ttl"]["strategy"] == "delete" and got["ttl"]["ttl_minutes"] == 60
    assert "ttl" not in await client.threads.get(tid)

    u = await client.threads.update(tid, metadata={"tag": "x"}, ttl={"ttl": 30, "strategy": "keep_latest"})
    check(u, Thread)
    assert u["metadata"] == {"owner": "ann", "tag": "x"}
    minimal = await client.threads.update(tid, metadata={"more": 1}, return_minimal=True)
    assert minimal is None or minimal["thread_id"] == tid
    assert (await client.threads.get(tid))["metadata"]["more"] == 1

    g = await client.threads.create(graph_id="agent")
    assert g["metadata"]["graph_id"] == "agent"

    assert await client.threads.delete(tid) is None
    with pytest.raises(NotFoundError):
        await client.threads.get(tid)


async def test_search_count_copy_prune(client):
    tag = str(uuid.uuid4())
    made = []
    for i in range(3):
        made.append(await client.threads.create(metadata={"tag": tag, "i": i}))
    await client.runs.wait(made[0]["thread_id"], "agent", input={"messages": [human("foo")]})

    found = await client.threads.search(metadata={"tag": tag}, limit=2, offset=0, sort_by="created_at", sort_order="asc")
    for t in found:
        check(t, Thread)
    assert [t["thread_id"] for t in found] == [made[0]["thread_id"], made[1]["thread_id"]]
    assert len(await client.threads.search(metadata={"tag": tag}, limit=2, offset=2)) == 1
    idle = await client.threads.search(metadata={"tag": tag}, status="idle", values={"messages": [{"content": "foo"}]})
    assert [t["thread_id"] for t in idle] == [made[0]["thread_id"]]
    sel = await client.threads.search(metadata={"tag": tag, "i": 1}, select=["thread_id", "status"])
    assert sel == [{"thread_id": made[1]["thread_id"], "status": "idle"}]
    by_ids = await client.threads.search(ids=[made[2]["thread_id"], made[1]["thread_id"]], sort_by="thread_id")
    assert {t["thread_id"] for t in by_ids} == {made[1]["thread_id"], made[2]["thread_id"]}
    with pytest.raises(UnprocessableEntityError):
        await client.threads.search(status="sleeping")

    assert await client.threads.count(metadata={"tag": tag}) == 3
    assert await client.threads.count(metadata={"tag": tag}, status="idle", values={"messages": [{"content": "foo"}]}) == 1

    copy = await client.threads.copy(made[0]["thread_id"])
    check(copy, Thread)
    assert copy["thread_id"] != made[0]["thread_id"]
    state = await client.threads.get_state(copy["thread_id"])
    assert contents(state["values"]) == ["foo", "begin", "tool_call__begin", "end"]
    with pytest.raises(ConflictError):
        await client.threads.copy(str(uuid.uuid4()))

    kept = await client.threads.prune([made[0]["thread_id"]], strategy="keep_latest")
    assert kept == {"pruned_count": 1}
    assert len(await client.threads.get_history(made[0]["thread_id"])) == 1
    gone = await client.threads.prune([made[1]["thread_id"], made[2]["thread_id"]])
    assert gone == {"pruned_count": 2}
    with pytest.raises(NotFoundError):
        await client.threads.get(made[1]["thread_id"])


async def test_state_history_updates(client):
    t = await client.threads.create()
    tid = t["thread_id"]
    empty = await client.threads.get_state(tid)
    assert empty["values"] == {} and empty["next"] == [] and empty["checkpoint"] is None
    assert await client.threads.get_history(tid) == []

    await client.runs.wait(tid, "agent", input={"messages": [human("foo")]})
    state = await client.threads.get_state(tid)
    check(state, ThreadState)
    assert state["metadata"]["source"] == "loop" and state["next"] == []

    history = await client.threads.get_history(tid, limit=10)
    for h in history:
        check(h, ThreadState)
    assert [h["metadata"]["step"] for h in history] == [3, 2, 1, 0, -1]
    third = history[2]
    assert (await client.threads.get_state(tid, checkpoint_id=third["checkpoint"]["checkpoint_id"]))["next"] == ["tool"]
    assert (await client.threads.get_state(tid, checkpoint=third["checkpoint"]))["checkpoint"] == third["checkpoint"]
    older = await client.threads.get_history(tid, before=third["checkpoint"], limit=10)
    assert [h["checkpoint"]["checkpoint_id"] for h in older] == [h["checkpoint"]["checkpoint_id"] for h in history[3:]]
    assert len(await client.threads.get_history(tid, limit=2)) == 2
    assert len(await client.threads.get_history(tid, metadata={"source": "input"})) == 1
    assert len(await client.threads.get_history(tid, checkpoint={"checkpoint_ns": ""}, limit=3)) == 3

    upd = await client.threads.update_state(tid, {"messages": [human("edited")]}, as_node="agent")
    check(upd, ThreadUpdateStateResponse)
    after = await client.threads.get_state(tid)
    assert contents(after["values"])[-1] == "edited"
    assert after["checkpoint"]["checkpoint_id"] == upd["checkpoint"]["checkpoint_id"]
    fork = await client.threads.update_state(tid, {"messages": [human("forked")]}, checkpoint_id=third["checkpoint"]["checkpoint_id"], as_node="tool")
    assert fork["checkpoint"]["checkpoint_id"] != upd["checkpoint"]["checkpoint_id"]
    fork2 = await client.threads.update_state(tid, {"messages": [human("forked2")]}, checkpoint=third["checkpoint"], as_node="tool")
    check(fork2, ThreadUpdateStateResponse)


async def test_subgraph_state(client):
    t = await client.threads.create()
    tid = t["thread_id"]
    await client.runs.wait(tid, "weather", input={"messages": [human("sf?")]})
    state = await client.threads.get_state(tid)
    assert state["next"] == ["weather_graph"]
    task = state["tasks"][0]
    assert task["checkpoint"]["checkpoint_ns"].startswith("weather_graph:")
    assert task["state"] is None
    deep = await client.threads.get_state(tid, subgraphs=True)
    check(deep, ThreadState)
    sub = deep["tasks"][0]["state"]
    check(sub, ThreadState)
    assert sub["next"] == ["weather_node"]
    await client.threads.update_state(tid, {"city": "LA"}, checkpoint={"checkpoint_ns": task["checkpoint"]["checkpoint_ns"]})
    out = await client.runs.wait(tid, "weather", input=None)
    assert out["messages"][-1]["content"] == "It's sunny in LA!"


async def test_busy_thread_refuses_update(client):
    t = await client.threads.create()
    run = await client.runs.create(t["thread_id"], "delay", input={"messages": [], "delay": 3000})
    for _ in range(100):
        if (await client.runs.get(t["thread_id"], run["run_id"]))["status"] == "running":
            break
        await asyncio.sleep(0.05)
    with pytest.raises(ConflictError):
        await client.threads.update_state(t["thread_id"], {"messages": [human("x")]}, as_node="long_running")
    await client.runs.cancel(t["thread_id"], run["run_id"], wait=True)


async def test_search_ids_and_extract(client):
    """threads.search ids and extract (issue 20 item 2): one path per alias,
    dotted keys and [index] (negative from the end), evaluated per thread."""
    tag = str(uuid.uuid4())
    a = await client.threads.create(metadata={"tag": tag, "owner": {"name": "ann"}})
    b = await client.threads.create(metadata={"tag": tag})
    await client.threads.create(metadata={"tag": tag})
    await client.runs.wait(a["thread_id"], "agent", input={"messages": [human("foo")]})
    found = await client.threads.search(
        ids=[a["thread_id"], b["thread_id"]], sort_by="created_at", sort_order="asc",
        extract={"last": "values.messages[-1].content", "first": "values.messages[0].content",
                 "owner": "metadata.owner.name", "gone": "values.messages[99]"},
    )
    for t in found:
        check(t, Thread)
    assert [t["thread_id"] for t in found] == [a["thread_id"], b["thread_id"]]
    assert found[0]["extracted"] == {"last": "end", "first": "foo", "owner": "ann", "gone": None}
    assert found[1]["extracted"] == {"last": None, "first": None, "owner": None, "gone": None}
    sel = await client.threads.search(ids=[a["thread_id"]], select=["thread_id"], extract={"n": "values.messages[1].content"})
    assert sel == [{"thread_id": a["thread_id"], "extracted": {"n": "begin"}}]
    assert "extracted" not in (await client.threads.search(ids=[a["thread_id"]]))[0]
    with pytest.raises(UnprocessableEntityError):
        await client.threads.search(extract={f"k{i}": "values.x" for i in range(11)})
    with pytest.raises(UnprocessableEntityError):
        await client.threads.search(extract={"bad": "values.messages[oops]"})
    with pytest.raises(UnprocessableEntityError):
        await client.threads.search(extract={"bad": "status"})
    with pytest.raises(UnprocessableEntityError):
        await client.threads.search(ids=["not-a-uuid"])
