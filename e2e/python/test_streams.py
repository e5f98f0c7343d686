"""runs.stream in every stream mode, as v1 StreamParts and v2 typed parts:
each event is checked against langgraph_sdk.schema's payload TypedDicts
(issue 20 items 3 and 4: checkpoint tasks carry `state`, task results are
objects)."""

from typing import Any

import pytest
from langgraph_sdk.schema import (
    CheckpointPayload,
    CheckpointsStreamPart,
    CustomStreamPart,
    DebugPayload,
    DebugStreamPart,
    MessagesCompleteStreamPart,
    MessagesMetadataStreamPart,
    MessagesPartialStreamPart,
    MessagesTupleStreamPart,
    MetadataStreamPart,
    RunMetadataPayload,
    TaskPayload,
    TaskResultPayload,
    TasksStreamPart,
    UpdatesStreamPart,
    ValuesStreamPart,
)

from conftest import collect
from schema_check import check

MODES = ["values", "updates", "messages", "messages-tuple", "events", "debug", "tasks", "checkpoints", "custom"]

# data of each v1 event, by event name (before any "|namespace")
V1_DATA: dict[str, Any] = {
    "metadata": RunMetadataPayload,
    "values": dict[str, Any],
    "updates": dict[str, Any],
    "messages": tuple[dict[str, Any], dict[str, Any]],
    "messages/partial": list[dict[str, Any]],
    "messages/complete": list[dict[str, Any]],
    "messages/metadata": dict[str, Any],
    "events": dict[str, Any],
    "debug": DebugPayload,
    "tasks": TaskPayload | TaskResultPayload,
    "checkpoints": CheckpointPayload,
    "custom": Any,
}

V2_PART: dict[str, Any] = {
    "metadata": MetadataStreamPart,
    "values": ValuesStreamPart,
    "updates": UpdatesStreamPart,
    "messages": MessagesTupleStreamPart,
    "messages/partial": MessagesPartialStreamPart,
    "messages/complete": MessagesCompleteStreamPart,
    "messages/metadata": MessagesMetadataStreamPart,
    "debug": DebugStreamPart,
    "tasks": TasksStreamPart,
    "checkpoints": CheckpointsStreamPart,
    "custom": CustomStreamPart,
}

# the event names each mode produces for one agent run
MODE_EVENTS = {
    "values": {"values"},
    "updates": {"updates"},
    "messages": {"messages/metadata", "messages/partial", "messages/complete"},
    "messages-tuple": {"messages"},
    "events": {"events"},
    "debug": {"debug"},
    "tasks": {"tasks"},
    "checkpoints": {"checkpoints"},
    "custom": {"custom"},
}

SLEEPY = {"messages": [{"type": "human", "content": "foo"}], "sleep": {"steps": 2, "ms": 1}}


def subgraph_tasks_as_sdk_types(payload: Any) -> Any:
    """LangGraph's server replaces a subgraph task's `state` (its config) by
    `checkpoint` in checkpoint payloads (langgraph_api stream.py,
    _preproces_debug_checkpoint_task), where CheckpointTaskPayload types
    `state` as required: such tasks are checked with state None."""
    if isinstance(payload, dict) and isinstance(payload.get("tasks"), list):
        tasks = [
            {**t, "state": None} if isinstance(t, dict) and "checkpoint" in t and "state" not in t else t
            for t in payload["tasks"]
        ]
        return {**payload, "tasks": tasks}
    return payload


def check_v1(part) -> None:
    # StreamPart types data as a dict, though messages data are lists: the
    # data are checked per event below.
    assert isinstance(part.event, str) and (part.id is None or isinstance(part.id, str))
    base = part.event.split("|")[0]
    assert base in V1_DATA, f"unexpected event {part.event}"
    data = part.data
    if base == "checkpoints":
        data = subgraph_tasks_as_sdk_types(data)
    if base == "debug" and isinstance(data, dict) and data.get("type") == "checkpoint":
        data = {**data, "payload": subgraph_tasks_as_sdk_types(data["payload"])}
    check(data, V1_DATA[base], f"$<{part.event}>")
    if base == "tasks" and "triggers" not in part.data:
        check(part.data, TaskResultPayload, "$<tasks result>")
    if base == "debug":
        kind = {"checkpoint": CheckpointPayload, "task": TaskPayload, "task_result": TaskResultPayload}[data["type"]]
        check(data["payload"], kind, f"$<debug {data['type']}>")


def check_v2(part: dict) -> None:
    data = part["data"]
    if part["type"] == "checkpoints":
        data = subgraph_tasks_as_sdk_types(data)
    if part["type"] == "debug" and data.get("type") == "checkpoint":
        data = {**data, "payload": subgraph_tasks_as_sdk_types(data["payload"])}
    check({**part, "data": data}, V2_PART[part["type"]], f"$<{part['type']}>")


@pytest.mark.parametrize("mode", MODES)
async def test_stream_mode_v1(client, mode):
    t = await client.threads.create()
    parts = await collect(client.runs.stream(t["thread_id"], "agent", input=SLEEPY, stream_mode=mode))
    assert parts[0].event == "metadata"
    for p in parts:
        check_v1(p)
    names = {p.event for p in parts[1:]}
    assert names == MODE_EVENTS[mode], f"{mode}: {names}"
    if mode == "custom":
        assert [p.data for p in parts[1:]] == [{"type": "sleep", "step": 0}, {"type": "sleep", "step": 1}]
    if mode == "checkpoints":
        assert [p.data["metadata"]["step"] for p in parts[1:]] == [-1, 0, 1, 2, 3]
        assert all("state" in task for p in parts[1:] for task in p.data["tasks"])
    if mode == "tasks":
        results = [p.data for p in parts[1:] if "result" in p.data]
        assert results and all(isinstance(r["result"], dict) for r in results)
        assert any(r["name"] == "agent" and "messages" in r["result"] for r in results)


@pytest.mark.parametrize("mode", [m for m in MODES if m != "events"])
async def test_stream_mode_v2(client, mode):
    t = await client.threads.create()
    parts = await collect(client.runs.stream(t["thread_id"], "agent", input=SLEEPY, stream_mode=mode, version="v2"))
    assert parts[0]["type"] == "metadata"
    for p in parts:
        check_v2(p)
        assert p["ns"] == []
    assert {p["type"] for p in parts[1:]} == MODE_EVENTS[mode]


async def test_stream_all_modes_subgraphs_interrupt(client):
    """Every mode at once on the weather graph, subgraph events namespaced
    (v1 "mode|ns", v2 ns lists), ending at the subgraph's breakpoint."""
    t = await client.threads.create()
    created = []
    parts = await collect(client.runs.stream(
        t["thread_id"], "weather", input={"messages": [{"type": "human", "content": "sf?"}]},
        stream_mode=MODES, stream_subgraphs=True, on_run_created=created.append, stream_resumable=True,
    ))
    assert created and created[0]["thread_id"] == t["thread_id"]
    for p in parts:
        check_v1(p)
        assert p.id is not None
    spaced = [p.event for p in parts if "|" in p.event]
    assert spaced and all(e.split("|")[1].startswith("weather_graph:") for e in spaced)
    interrupts = [p for p in parts if p.event == "values" and "__interrupt__" in p.data]
    assert interrupts and interrupts[-1].data["__interrupt__"] == []

    v2 = await collect(client.runs.stream(
        None, "weather", input={"messages": [{"type": "human", "content": "sf?"}]},
        stream_mode=["values", "updates", "debug"], stream_subgraphs=True, version="v2",
    ))
    for p in v2:
        check_v2(p)
    assert any(p["ns"] and p["ns"][0].startswith("weather_graph:") for p in v2)
    last_values = [p for p in v2 if p["type"] == "values" and not p["ns"]][-1]
    assert last_values["interrupts"] == [] and "__interrupt__" not in last_values["data"]


async def test_stream_error_and_options(client):
    parts = await collect(client.runs.stream(None, "error", input={"messages": [{"type": "human", "content": "x"}]}))
    assert parts[-1].event == "error"
    assert parts[-1].data == {"error": "CustomError", "message": "Boo!"}

    # the options each run takes, on a stream
    t = await client.threads.create()
    parts = await collect(client.runs.stream(
        t["thread_id"], "agent", input={"messages": [{"type": "human", "content": "foo"}]},
        metadata={"m": 1}, config={"tags": ["x"], "recursion_limit": 10}, context={"c": 1},
        interrupt_before=["tool"], feedback_keys=["k"], on_disconnect="continue", multitask_strategy="enqueue",
        if_not_exists="create", durability="async", stream_mode=["updates"],
    ))
    assert parts[-1].event == "updates" and parts[-1].data == {"__interrupt__": []}
    resumed = await collect(client.runs.stream(t["thread_id"], "agent", command={"resume": None, "goto": "tool"}, stream_mode="updates"))
    assert any("tool" in p.data for p in resumed if p.event == "updates")
    cp = (await client.threads.get_history(t["thread_id"], limit=100))[-2]["checkpoint"]
    forked = await collect(client.runs.stream(t["thread_id"], "agent", input=None, checkpoint=cp, checkpoint_id=cp["checkpoint_id"], after_seconds=0))
    assert forked[0].event == "metadata"
    stateless = await collect(client.runs.stream(None, "agent", input={"messages": [{"type": "human", "content": "foo"}]}, on_completion="delete", webhook=None))
    assert stateless[-1].data["messages"][-1]["content"] == "end"
