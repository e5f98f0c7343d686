"""threads.join_stream: GET /threads/{id}/stream in its three modes, with
Last-Event-ID resume; the stream never ends, so reads stop on a condition."""

import pytest
from langgraph_sdk.errors import NotFoundError, UnprocessableEntityError
from langgraph_sdk.schema import RunMetadataPayload, ThreadState

from conftest import collect
from schema_check import check


def run_done(run_id):
    return lambda parts: any(p.event == "metadata" and p.data.get("status") == "run_done" and p.data.get("run_id") == run_id for p in parts)


async def test_run_modes_replay_and_resume(client):
    t = await client.threads.create()
    tid = t["thread_id"]
    run = await client.runs.create(tid, "agent", input={"messages": [{"type": "human", "content": "foo"}]}, stream_mode=["values", "updates"], stream_resumable=True)
    parts = await collect(client.threads.join_stream(tid, last_event_id="-"), until=run_done(run["run_id"]))
    check(parts[0].data, RunMetadataPayload)
    assert parts[0].data == {"run_id": run["run_id"], "attempt": 1}
    assert {p.event for p in parts} == {"metadata", "values", "updates"}
    assert parts[-1].data == {"status": "run_done", "run_id": run["run_id"]}
    ids = [p.id for p in parts]
    assert all(i and "-" in i for i in ids)
    resumed = await collect(client.threads.join_stream(tid, last_event_id=ids[0], stream_mode="run_modes"), until=run_done(run["run_id"]))
    assert [p.id for p in resumed] == ids[1:]


async def test_lifecycle_and_state_update(client):
    t = await client.threads.create()
    tid = t["thread_id"]
    run = await client.runs.create(tid, "agent", input={"messages": [{"type": "human", "content": "foo"}]}, stream_resumable=True)
    life = await collect(client.threads.join_stream(tid, last_event_id="-", stream_mode="lifecycle"), until=run_done(run["run_id"]))
    assert [p.event for p in life] == ["metadata", "metadata"]
    await client.runs.join(tid, run["run_id"])
    await client.threads.update_state(tid, {"messages": [{"type": "human", "content": "edited"}]}, as_node="agent")
    updates = await collect(client.threads.join_stream(tid, last_event_id="-", stream_mode=["state_update", "lifecycle"]),
                            until=lambda ps: any(p.event == "state_update" for p in ps))
    su = [p for p in updates if p.event == "state_update"][0]
    assert su.data["thread_id"] == tid
    check(su.data["state"], ThreadState)
    assert su.data["state"]["values"]["messages"][-1]["content"] == "edited"
    assert {p.event for p in updates} <= {"metadata", "state_update"}


async def test_errors(client):
    t = await client.threads.create()
    with pytest.raises(UnprocessableEntityError):
        await collect(client.threads.join_stream(t["thread_id"], stream_mode="values"), until=lambda ps: True)
    with pytest.raises(UnprocessableEntityError):
        await collect(client.threads.join_stream(t["thread_id"], last_event_id="not-an-id"), until=lambda ps: True)
    with pytest.raises(NotFoundError):
        await collect(client.threads.join_stream("00000000-0000-4000-8000-000000000000"), until=lambda ps: True)
