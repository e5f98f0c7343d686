"""runs.*: create (with its options), create_batch, wait, list, get, cancel,
cancel_many, join, join_stream and delete, each response checked against
langgraph_sdk.schema."""

import asyncio
import uuid

import pytest
from langgraph_sdk.errors import ConflictError, NotFoundError
from langgraph_sdk.schema import Run, StreamPart, Thread

from conftest import SyncAsAsync, collect
from schema_check import check


def human(content):
    return {"type": "human", "content": content}


def contents(values):
    return [m["content"] for m in values["messages"]]


async def until_status(client, tid, rid, *statuses):
    for _ in range(400):
        run = await client.runs.get(tid, rid)
        if run["status"] in statuses:
            return run
        await asyncio.sleep(0.05)
    raise AssertionError(f"run {rid} never reached {statuses}: {run['status']}")


async def test_create_get_join_list_delete(client):
    t = await client.threads.create()
    tid = t["thread_id"]
    created = []
    run = await client.runs.create(
        tid, "agent", input={"messages": [human("foo")]}, metadata={"who": "py"},
        config={"configurable": {"user_id": "u1"}, "tags": ["py"]}, stream_mode=["values", "updates"],
        stream_subgraphs=False, stream_resumable=True, multitask_strategy="enqueue",
        durability="sync", on_run_created=created.append,
    )
    check(run, Run)
    assert run["status"] in ("pending", "running") and run["metadata"]["who"] == "py"
    assert created == [{"run_id": run["run_id"], "thread_id": tid}]
    out = await client.runs.join(tid, run["run_id"])
    assert contents(out) == ["foo", "begin", "tool_call__begin", "end"]
    got = await client.runs.get(tid, run["run_id"])
    check(got, Run)
    assert got["status"] == "success"

    run2 = await client.runs.create(tid, "agent", input={"messages": [human("bar")]}, context={"model": "x"}, after_seconds=0)
    await client.runs.join(tid, run2["run_id"])
    runs = await client.runs.list(tid)
    for r in runs:
        check(r, Run)
    assert [r["run_id"] for r in runs] == [run2["run_id"], run["run_id"]]
    assert [r["run_id"] for r in await client.runs.list(tid, limit=1, offset=1)] == [run["run_id"]]
    assert [r["run_id"] for r in await client.runs.list(tid, status="success", select=["run_id"])] == [run2["run_id"], run["run_id"]]
    assert await client.runs.list(tid, status="error") == []

    assert await client.runs.delete(tid, run["run_id"]) is None
    with pytest.raises(NotFoundError):
        await client.runs.get(tid, run["run_id"])


async def test_stateless_and_if_not_exists(client):
    run = await client.runs.create(None, "agent", input={"messages": [human("foo")]}, on_completion="keep")
    check(run, Run)
    out = await client.runs.join(run["thread_id"], run["run_id"])
    assert contents(out)[-1] == "end"
    check(await client.threads.get(run["thread_id"]), Thread)

    tid = str(uuid.uuid4())
    with pytest.raises(NotFoundError):
        await client.runs.create(tid, "agent", input={"messages": []})
    r = await client.runs.create(tid, "agent", input={"messages": [human("foo")]}, if_not_exists="create")
    assert r["thread_id"] == tid
    await client.runs.join(tid, r["run_id"])


async def test_wait(client):
    t = await client.threads.create()
    created = []
    out = await client.runs.wait(
        t["thread_id"], "agent", input={"messages": [human("foo")]}, metadata={"m": 1},
        config={"recursion_limit": 20}, on_run_created=created.append, durability="exit",
    )
    assert contents(out)[-1] == "end" and created[0]["thread_id"] == t["thread_id"]
    stateless = await client.runs.wait(None, "agent", input={"messages": [human("foo")]})
    assert contents(stateless)[-1] == "end"

    # The async client raises on an __error__ output unless raise_error=False;
    # the sync client 0.4.3 sends raise_error in the body and never raises.
    if isinstance(client, SyncAsAsync):
        err = await client.runs.wait(None, "error", input={"messages": [human("x")]})
        assert err == {"__error__": {"error": "CustomError", "message": "Boo!"}}
    else:
        with pytest.raises(Exception) as ei:
            await client.runs.wait(None, "error", input={"messages": [human("x")]})
        assert "CustomError: Boo!" in str(ei.value)
    err = await client.runs.wait(None, "error", input={"messages": [human("x")]}, raise_error=False)
    assert err == {"__error__": {"error": "CustomError", "message": "Boo!"}}

    # interrupt_before / interrupt_after, then resume with a command
    t2 = await client.threads.create()
    # (a static breakpoint's output is {"__interrupt__": []}, as LangGraph's)
    out = await client.runs.wait(t2["thread_id"], "agent", input={"messages": [human("foo")]}, interrupt_before=["tool"])
    assert out == {"__interrupt__": []}
    state = await client.threads.get_state(t2["thread_id"])
    assert state["next"] == ["tool"] and contents(state["values"]) == ["foo", "begin"]
    out = await client.runs.wait(t2["thread_id"], "agent", input=None, interrupt_after="*")
    assert out == {"__interrupt__": []}
    assert (await client.threads.get_state(t2["thread_id"]))["next"] == ["agent"]
    out = await client.runs.wait(t2["thread_id"], "agent", input=None)
    assert contents(out)[-1] == "end"

    t3 = await client.threads.create()
    out = await client.runs.wait(t3["thread_id"], "agent", input={"messages": [human("foo")], "interrupt": True})
    assert out["__interrupt__"][0]["value"] == "i want to interrupt"
    assert (await client.threads.get(t3["thread_id"]))["status"] == "interrupted"
    out = await client.runs.wait(t3["thread_id"], "agent", command={"resume": "yes"})
    assert contents(out)[-1] == "end"

    # replay from a checkpoint, by object and by id: the run goes on from there
    hist = await client.threads.get_history(t2["thread_id"], limit=100)
    first_loop = [h for h in hist if h["metadata"]["step"] == 0][-1]
    forked = await client.runs.wait(t2["thread_id"], "agent", input=None, checkpoint=first_loop["checkpoint"])
    assert contents(forked)[:2] == ["foo", "begin"] and contents(forked)[-1] in ("begin", "end")
    forked2 = await client.runs.wait(t2["thread_id"], "agent", input=None, checkpoint_id=first_loop["checkpoint"]["checkpoint_id"])
    assert contents(forked2)[0] == "foo" and len(contents(forked2)) >= 3


async def test_batch_and_cancel(client):
    runs = await client.runs.create_batch([
        {"assistant_id": "agent", "input": {"messages": [human("a")]}},
        {"assistant_id": "agent", "input": {"messages": [human("b")]}, "metadata": {"n": 2}},
    ])
    assert len(runs) == 2
    for r in runs:
        check(r, Run)
    assert runs[1]["metadata"]["n"] == 2

    t = await client.threads.create()
    tid = t["thread_id"]
    slow = await client.runs.create(tid, "delay", input={"messages": [], "delay": 5000})
    await until_status(client, tid, slow["run_id"], "running")
    with pytest.raises(ConflictError):
        await client.runs.create(tid, "delay", input={"messages": [], "delay": 10}, multitask_strategy="reject")
    assert await client.runs.cancel(tid, slow["run_id"]) is None
    assert (await until_status(client, tid, slow["run_id"], "interrupted"))["status"] == "interrupted"

    slow2 = await client.runs.create(tid, "delay", input={"messages": [], "delay": 5000})
    await until_status(client, tid, slow2["run_id"], "running")
    await client.runs.cancel(tid, slow2["run_id"], wait=True, action="rollback")
    with pytest.raises(NotFoundError):
        await client.runs.get(tid, slow2["run_id"])

    t2 = await client.threads.create()
    a = await client.runs.create(t2["thread_id"], "delay", input={"messages": [], "delay": 5000})
    b = await client.runs.create(t2["thread_id"], "delay", input={"messages": [], "delay": 5000}, multitask_strategy="enqueue")
    assert await client.runs.cancel_many(thread_id=t2["thread_id"], run_ids=[a["run_id"], b["run_id"]]) is None
    assert (await until_status(client, t2["thread_id"], a["run_id"], "interrupted"))["status"] == "interrupted"
    assert (await until_status(client, t2["thread_id"], b["run_id"], "interrupted"))["status"] == "interrupted"

    t3 = await client.threads.create()
    c = await client.runs.create(t3["thread_id"], "delay", input={"messages": [], "delay": 5000}, after_seconds=60)
    await client.runs.cancel_many(status="pending", action="interrupt")
    assert (await client.runs.get(t3["thread_id"], c["run_id"]))["status"] == "interrupted"


async def test_join_stream(client):
    t = await client.threads.create()
    tid = t["thread_id"]
    run = await client.runs.create(tid, "agent", input={"messages": [human("foo")]}, stream_mode=["values", "updates"], stream_resumable=True)
    parts = await collect(client.runs.join_stream(tid, run["run_id"], last_event_id="-1"))
    for p in parts:
        check(p, StreamPart)
    names = [p.event for p in parts]
    assert names[0] == "metadata" and "values" in names and "updates" in names
    ids = [int(p.id) for p in parts]
    assert ids == sorted(ids)
    only_values = await collect(client.runs.join_stream(tid, run["run_id"], stream_mode="values", last_event_id="-1"))
    assert {p.event for p in only_values} == {"metadata", "values"}
    resumed = await collect(client.runs.join_stream(tid, run["run_id"], last_event_id=parts[1].id))
    assert [p.id for p in resumed] == [p.id for p in parts[2:]]
    # cancel_on_disconnect: leaving a live run's stream cancels it
    slow = await client.runs.create(tid, "delay", input={"messages": [], "delay": 5000})
    await collect(client.runs.join_stream(tid, slow["run_id"], cancel_on_disconnect=True), until=lambda ps: len(ps) >= 1)
    assert (await until_status(client, tid, slow["run_id"], "interrupted"))["status"] == "interrupted"
