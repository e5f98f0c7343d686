"""The API under a path prefix (examples/reference -prefix /agents, an
http.StripPrefix in front of httpapi) through the SDK pointed at the
prefixed URL. Location and Content-Location are paths relative to the API's
base URL: the SDK hands Location to httpx (_async/http.py stream:
reconnect_path = Location), which joins a relative path to base_url, so a
run stream whose connection drops reconnects under the prefix."""

from __future__ import annotations

import httpx
import pytest
from langgraph_sdk.client import LangGraphClient

from conftest import Server


@pytest.fixture(scope="module")
def server():
    s = Server("-prefix", "/agents")
    yield s
    s.stop()


class DropOnce(httpx.AsyncBaseTransport):
    """Passes requests through, recording them; the first run stream's body
    fails after `frames` SSE frames, as a dropped connection does."""

    def __init__(self, frames: int) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.frames = frames
        self.dropped = False
        self.requests: list[tuple[str, str, str | None]] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.requests.append((request.method, request.url.path, request.headers.get("last-event-id")))
        resp = await self.inner.handle_async_request(request)
        if self.dropped or not request.url.path.endswith("/runs/stream"):
            return resp
        self.dropped = True
        inner, frames = resp.stream, self.frames

        class Cut(httpx.AsyncByteStream):
            async def __aiter__(self):
                seen, buf = 0, b""
                async for chunk in inner:
                    buf += chunk
                    while b"\n\n" in buf:
                        frame, buf = buf.split(b"\n\n", 1)
                        yield frame + b"\n\n"
                        seen += 1
                        if seen == frames:
                            raise httpx.RemoteProtocolError("connection dropped")

            async def aclose(self) -> None:
                await inner.aclose()

        return httpx.Response(resp.status_code, headers=resp.headers, stream=Cut(), request=request)

    async def aclose(self) -> None:
        await self.inner.aclose()


async def test_run_stream_reconnects_under_prefix(server):
    assert server.url.endswith("/agents")
    transport = DropOnce(frames=2)  # metadata and the first values
    client = LangGraphClient(httpx.AsyncClient(base_url=server.url, transport=transport))
    try:
        thread = await client.threads.create()
        tid = thread["thread_id"]
        parts = [
            p
            async for p in client.runs.stream(
                tid,
                "agent",
                input={"messages": [{"role": "human", "content": "input"}], "sleep": {"steps": 3, "ms": 100}},
                stream_mode=["values", "custom"],
                stream_resumable=True,
            )
        ]
        run_id = parts[0].data["run_id"]
        runs = [r for r in transport.requests if "/runs" in r[1]]
        assert runs == [
            ("POST", f"/agents/threads/{tid}/runs/stream", None),
            ("GET", f"/agents/threads/{tid}/runs/{run_id}/stream", "1"),
        ]
        full = [p async for p in client.runs.join_stream(tid, run_id, last_event_id="-1")]

        def body(ps):
            return [(p.event, p.data) for p in ps if p.event != "metadata"]

        assert body(parts) == body(full)
        assert [e for e, _ in body(full)] == ["values", "custom", "custom", "custom", "values", "values", "values"]
    finally:
        await client.aclose()
