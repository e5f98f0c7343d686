"""crons.*: every method of the sub-client, as langgraph_sdk sends it."""

import uuid

import pytest
from langgraph_sdk.errors import NotFoundError
from langgraph_sdk.schema import Cron

from schema_check import check


async def test_crons(client):
    t = await client.threads.create()
    tag = str(uuid.uuid4())
    thread_cron = await client.crons.create_for_thread(
        t["thread_id"], "agent", schedule="*/5 * * * *", input={"messages": []}, metadata={"tag": tag},
        config={"tags": ["c"]}, multitask_strategy="enqueue", stream_mode=["values"], enabled=True,
    )
    check(thread_cron, Cron)
    assert thread_cron["thread_id"] == t["thread_id"] and thread_cron["schedule"] == "*/5 * * * *"
    cron = await client.crons.create(
        "agent", schedule="0 12 * * *", input={"messages": []}, metadata={"tag": tag},
        on_run_completed="keep", timezone="Europe/Paris", enabled=False,
    )
    check(cron, Cron)
    assert cron["thread_id"] is None and cron["enabled"] is False

    updated = await client.crons.update(cron["cron_id"], schedule="0 13 * * *", enabled=True, metadata={"x": 1})
    check(updated, Cron)
    assert updated["schedule"] == "0 13 * * *" and updated["enabled"] is True

    found = await client.crons.search(metadata={"tag": tag}, limit=10, offset=0, sort_by="created_at", sort_order="asc")
    for c in found:
        check(c, Cron)
    assert [c["cron_id"] for c in found] == [thread_cron["cron_id"], cron["cron_id"]]
    assert [c["cron_id"] for c in await client.crons.search(thread_id=t["thread_id"])] == [thread_cron["cron_id"]]
    # The default order is created_at desc (wire contract 2.9): the newest first.
    assert await client.crons.search(metadata={"tag": tag}, select=["cron_id"], limit=1) == [{"cron_id": cron["cron_id"]}]
    assert await client.crons.count(metadata={"tag": tag}) == 2
    assert await client.crons.count(assistant_id=thread_cron["assistant_id"], thread_id=t["thread_id"]) == 1

    assert await client.crons.delete(cron["cron_id"]) is None
    with pytest.raises(NotFoundError):
        await client.crons.delete(cron["cron_id"])
    await client.crons.delete(thread_cron["cron_id"])
