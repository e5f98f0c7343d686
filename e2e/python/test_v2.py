"""Protocol v2 (thread-centric streaming) through the Python SDK's
client.threads.stream, against examples/integration: the graphs of the
SDK's own integration suite (langgraph libs/sdk-py/integration), with the
events LangGraph's Python server gives them (sdk-integration-graphs.md §5).
The SDK's WebSocket transport needs websockets >= 13, which Debian lacks:
the WebSocket is tested from Go (examples/integration) and JS."""

from __future__ import annotations

import asyncio

import pytest

from conftest import Server
from langgraph_sdk import get_client

AGENT_INPUT = {"messages": [], "value": "init", "items": []}
TERMINAL_ITEMS = ["streamed", "tool", "asked", "sub"]


@pytest.fixture(scope="module")
def integration():
    s = Server(program="integration")
    yield s
    s.stop()


@pytest.fixture
async def aclient(integration):
    c = get_client(url=integration.url, api_key=None)
    yield c
    await c.aclose()


async def drain(it, limit: float = 15.0) -> list:
    async def go():
        return [x async for x in it]

    return await asyncio.wait_for(go(), limit)


async def test_extensions_progress_after_run_start(aclient):
    # The subscription opens after run.start answered: the SDK asks for
    # since=applied_through_seq and the replay holds every progress event.
    async with aclient.threads.stream(assistant_id="agent") as thread:
        await thread.run.start(input=AGENT_INPUT)
        events = await drain(thread.extensions["progress"])
        assert [e["step"] for e in events] == ["stream_message", "stream_message", "call_tool", "call_tool", "ask_human"]
        assert [e["phase"] for e in events] == ["start", "end", "start", "end", "start"]
        assert thread.interrupted


async def test_messages_deltas_join(aclient):
    async with aclient.threads.stream(assistant_id="agent") as thread:
        await thread.run.start(input=AGENT_INPUT)
        streams = await drain(thread.messages)
        assert len(streams) >= 1
        for s in streams:
            assert s.namespace == []
            assert s.node == "stream_message"
            text = "".join(e["delta"]["text"] for e in s.events if e.get("event") == "content-block-delta")
            assert text == "Hello, world!"


async def test_values_interrupt_and_respond(aclient):
    async with aclient.threads.stream(assistant_id="agent") as thread:
        await thread.run.start(input=AGENT_INPUT)
        snapshots = await drain(thread.values)
        assert snapshots, "values snapshots before the interrupt"
        assert thread.interrupted
        assert len(thread.interrupts) == 1
        assert thread.interrupts[0]["value"] == "Are we good?"
        assert thread.interrupts[0]["namespace"] == []
        state = await aclient.threads.get_state(thread.thread_id)
        assert state["next"] == ["ask_human"]
        assert state["values"]["items"] == ["streamed", "tool"]
        await thread.run.respond("yes")
        out = await asyncio.wait_for(thread.output, 15)
        assert out["items"] == TERMINAL_ITEMS
        assert out["value"] == "x"
    state = await aclient.threads.get_state(thread.thread_id)
    assert state["values"]["items"] == TERMINAL_ITEMS
    assert [m["id"] for m in state["values"]["messages"]][:2] == ["ai-msg-1", "ai-msg-2"]


async def test_run_start_resumes_pending_interrupt(aclient):
    # RemoteGraph relies on it: on an interrupted thread, run.start's input
    # is the resume value.
    async with aclient.threads.stream(assistant_id="agent") as thread:
        await thread.run.start(input=AGENT_INPUT)
        await drain(thread.values)
        assert thread.interrupted
    async with aclient.threads.stream(thread.thread_id, assistant_id="agent") as again:
        await again.run.start(input="yes")
        out = await asyncio.wait_for(again.output, 15)
        assert out["items"] == TERMINAL_ITEMS


async def test_tools_at_root(aclient):
    async with aclient.threads.stream(assistant_id="tools_agent") as thread:
        await thread.run.start(input={"messages": [{"role": "human", "content": "search for v3"}]})
        events = await drain(thread.subscribe(["tools"], namespaces=[[]], depth=0))
        data = [e["params"]["data"] for e in events]
        assert [d["event"] for d in data] == ["tool-started", "tool-finished"]
        assert data[0]["tool_call_id"] == "tc-1" and data[0]["tool_name"] == "search"
        assert data[0]["input"] == {"query": "v3"}
        assert data[1]["output"]["status"] == "success"
        out = await asyncio.wait_for(thread.output, 15)
        assert [m["content"] for m in out["messages"]] == ["search for v3", "", "result for 'v3'", "done."]


async def test_deep_agent_subagent_namespace(aclient):
    async with aclient.threads.stream(assistant_id="deep_agent") as thread:
        await thread.run.start(input={"messages": [{"role": "user", "content": "research the v3 spec"}]})
        events = await drain(thread.subscribe(["messages", "tasks", "tools", "lifecycle"], namespaces=[[]]))
        started = [e for e in events if e["method"] == "lifecycle" and e["params"]["data"]["event"] == "started"
                   and len(e["params"]["namespace"]) == 1]
        assert len(started) == 1
        assert started[0]["params"]["namespace"][0].startswith("tools:")
        out = await asyncio.wait_for(thread.output, 15)
        assert out["messages"][-1]["content"] == "Research complete."


async def test_factory_agent(aclient):
    thread = await aclient.threads.create()
    out = await aclient.runs.wait(thread["thread_id"], "factory_agent", input={"text": "hi"})
    assert out == {"text": "hi echoed", "access_context": "threads.create_run", "is_for_execution": True}


async def test_cancel_run_started_by_run_start(aclient):
    async with aclient.threads.stream(assistant_id="agent") as thread:
        res = await thread.run.start(input=AGENT_INPUT)
        await aclient.runs.cancel(thread.thread_id, res["run_id"], wait=False)
        await drain(thread.values, limit=10.0)
        run = await aclient.runs.get(thread.thread_id, res["run_id"])
        assert run["status"] in ("interrupted", "success")
