"""store.*: items, search, namespaces, through both clients."""

import uuid

import pytest
from langgraph_sdk.errors import UnprocessableEntityError
from langgraph_sdk.schema import Item, ListNamespaceResponse, SearchItemsResponse

from schema_check import check


async def test_items(client):
    ns = ["py", str(uuid.uuid4())]
    assert await client.store.put_item(ns, "prefs", {"theme": "dark", "n": 1}) is None
    await client.store.put_item(ns, "ttl", {"x": 1}, index=False, ttl=5)
    await client.store.put_item(ns, "indexed", {"text": "hello world"}, index=["text"])
    item = await client.store.get_item(ns, "prefs")
    check(item, Item)
    assert item["namespace"] == ns and item["value"] == {"theme": "dark", "n": 1}
    refreshed = await client.store.get_item(ns, "ttl", refresh_ttl=True)
    check(refreshed, Item)
    assert await client.store.get_item(ns, "missing") is None

    res = await client.store.search_items(ns, filter={"theme": "dark"}, limit=5, offset=0)
    check(res, SearchItemsResponse)
    assert [i["key"] for i in res["items"]] == ["prefs"]
    all_ = await client.store.search_items(ns, limit=2, offset=1, refresh_ttl=False)
    assert len(all_["items"]) == 2
    q = await client.store.search_items(ns, query="hello")
    check(q, SearchItemsResponse)
    assert q["items"] and q["items"][0]["key"] == "indexed"

    assert await client.store.delete_item(ns, "prefs") is None
    assert await client.store.get_item(ns, "prefs") is None
    with pytest.raises(UnprocessableEntityError):
        await client.store.put_item([], "k", {})


async def test_namespaces(client):
    root = str(uuid.uuid4())
    for sub in (["a", "x"], ["a", "y"], ["b"]):
        await client.store.put_item([root, *sub], "k", {"v": 1})
    res = await client.store.list_namespaces(prefix=[root])
    check(res, ListNamespaceResponse)
    assert sorted(res["namespaces"]) == [[root, "a", "x"], [root, "a", "y"], [root, "b"]]
    assert (await client.store.list_namespaces(prefix=[root], suffix=["y"]))["namespaces"] == [[root, "a", "y"]]
    assert sorted((await client.store.list_namespaces(prefix=[root], max_depth=2))["namespaces"]) == [[root, "a"], [root, "b"]]
    assert len((await client.store.list_namespaces(prefix=[root], limit=1, offset=1))["namespaces"]) == 1
