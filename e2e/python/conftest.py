"""Fixtures of the Python SDK suite.

Each test module gets its own examples/reference server, started on a free
port with a fresh SQLite file, as e2e/test/server.js does for node. Every
test that takes `client` runs twice: with the SDK's async client
(get_client) and with its sync client (get_sync_client), the latter seen
through SyncAsAsync so that one test body drives both.
"""

from __future__ import annotations

import asyncio
import inspect
import os
import re
import shutil
import subprocess
import tempfile
import threading
import urllib.parse
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from langgraph_sdk import get_client, get_sync_client

REPO = Path(__file__).resolve().parents[2]


def _binary(program: str = "reference") -> str:
    """The server of examples/<program>: GRAPHSERVER_<PROGRAM>_BIN, or built
    once."""
    env = f"GRAPHSERVER_{program.upper()}_BIN"
    given = os.environ.get(env)
    if given and os.path.exists(given):
        return given
    out = os.path.join(tempfile.mkdtemp(prefix="gs-pybin-"), program)
    subprocess.run(["go", "build", "-o", out, f"./examples/{program}"], cwd=REPO, check=True)
    os.environ[env] = out
    return out


class Server:
    """A running examples/reference (or examples/<program>) process."""

    def __init__(self, *flags: str, program: str = "reference") -> None:
        self.dir = tempfile.mkdtemp(prefix="gs-pye2e-")
        db = os.path.join(self.dir, "gs.db")
        # GRAPHSERVER_E2E_POSTGRES_URL runs the suite on PostgreSQL: each
        # server gets a database of its own, dropped when it stops.
        self.pg_db = None
        base = os.environ.get("GRAPHSERVER_E2E_POSTGRES_URL")
        if base:
            self.pg_db = "gs_pye2e_" + os.urandom(6).hex()
            subprocess.run(["psql", base, "-qAtc", f"CREATE DATABASE {self.pg_db}"], check=True, capture_output=True)
            u = urllib.parse.urlsplit(base)
            db = urllib.parse.urlunsplit((u.scheme, u.netloc, "/" + self.pg_db, u.query, u.fragment))
        self.proc = subprocess.Popen(
            [_binary(program), "-addr", "127.0.0.1:0", "-db", db, *flags],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.log: list[str] = []
        threading.Thread(target=self._drain_stderr, daemon=True).start()
        self.url = self._await_url()

    def _drain_stderr(self) -> None:
        for line in self.proc.stderr:
            self.log.append(line)

    def _await_url(self) -> str:
        found: list[str] = []

        def read() -> None:
            for line in self.proc.stdout:
                m = re.search(r"listening on (http://\S+)", line)
                if m:
                    found.append(m.group(1))
                    break
            for _ in self.proc.stdout:  # keep the pipe drained
                pass

        t = threading.Thread(target=read, daemon=True)
        t.start()
        for _ in range(300):
            if found:
                return found[0]
            if self.proc.poll() is not None:
                break
            t.join(0.1)
        self.stop()
        raise RuntimeError("reference server did not start:\n" + "".join(self.log))

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)
        if self.pg_db:
            base = os.environ["GRAPHSERVER_E2E_POSTGRES_URL"]
            subprocess.run(["psql", base, "-qAtc", f"DROP DATABASE IF EXISTS {self.pg_db} WITH (FORCE)"], capture_output=True)
            self.pg_db = None


@pytest.fixture(scope="module")
def server():
    s = Server()
    yield s
    s.stop()


class _Call:
    """A sync SDK call seen as async: awaiting it runs the call in a worker
    thread; iterating it runs the call, then each next(), in worker threads
    (closing the sync iterator when the loop stops early)."""

    def __init__(self, fn, args, kwargs) -> None:
        self.fn, self.args, self.kwargs = fn, args, kwargs

    def __await__(self):
        return asyncio.to_thread(self.fn, *self.args, **self.kwargs).__await__()

    def __aiter__(self):
        return self._iterate()

    async def _iterate(self):
        it = iter(await asyncio.to_thread(self.fn, *self.args, **self.kwargs))
        done = object()
        try:
            while True:
                item = await asyncio.to_thread(next, it, done)
                if item is done:
                    return
                yield item
        finally:
            close = getattr(it, "close", None)
            if close is not None:
                await asyncio.to_thread(close)


class SyncAsAsync:
    """Wraps a get_sync_client() client (or one of its sub-clients) so that
    its methods are awaited and iterated like the async client's."""

    def __init__(self, obj: Any) -> None:
        self._obj = obj

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._obj, name)
        if inspect.ismethod(attr) or inspect.isfunction(attr):
            return lambda *a, **kw: _Call(attr, a, kw)
        if hasattr(attr, "http"):
            return SyncAsAsync(attr)
        return attr


@pytest.fixture(params=["async", "sync"])
async def client(request, server):
    """The SDK client under test: get_client, or get_sync_client."""
    if request.param == "async":
        c = get_client(url=server.url, api_key=None)
        yield c
        await c.aclose()
    else:
        c = get_sync_client(url=server.url, api_key=None)
        yield SyncAsAsync(c)
        c.close()


def stream_of(call: Any) -> AsyncIterator[Any]:
    """The async iterator of a streaming SDK call, whichever client made it:
    the async client's runs.stream returns one, its threads.join_stream a
    coroutine of one, the sync client's calls an iterable _Call."""
    if hasattr(call, "__aiter__"):
        return call.__aiter__()

    async def gen():
        it = await call
        async for x in it:
            yield x

    return gen()


async def collect(call: Any, until=None, limit: int = 10_000) -> list[Any]:
    """Reads a streaming call to its end, or until until(parts) holds (then
    the stream is closed: thread streams never end on their own)."""
    out: list[Any] = []
    it = stream_of(call)
    try:
        async for part in it:
            out.append(part)
            if until is not None and until(out):
                break
            assert len(out) < limit, "stream did not end"
    finally:
        aclose = getattr(it, "aclose", None)
        if aclose is not None:
            await aclose()
    return out
