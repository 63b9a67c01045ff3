"""Reading streams: read_stream() and aread_stream() in order from `after`, waiting for new
items, ending at the close or the instance's end; InstanceStatus.streams (SPEC.md section 14)."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
from asgiref.sync import sync_to_async
from django.db import connections

import django_workflows as wf
from django_workflows import clock
from django_workflows.store import streams
from tests.helpers import worker_thread


@pytest.fixture
def chatty(define):
    """Writes `n` items to "tokens" from a step, then waits for a signal `go` and closes it."""

    @define("streams-chatty")
    def run(ctx, input):
        def talk(step):
            out = step.stream("tokens")
            for n in range(input["n"]):
                out.write({"n": n})
            return 1

        ctx.step("talk", talk)
        ctx.wait_for_signal("go", "go", key=ctx.instance_id)
        ctx.stream("tokens").close()
        return "done"

    return run


@pytest.mark.django_db
def test_items_come_in_order_from_after_until_the_close(chatty):
    wf.start("streams-chatty", {"n": 5}, id="r1")
    wf.drain()
    wf.signal("go", key="r1")
    wf.drain()
    read = list(wf.read_stream("r1", "tokens", after=2))
    assert [(i.offset, i.value, i.attempt) for i in read] == [
        (3, {"n": 2}, 1),
        (4, {"n": 3}, 1),
        (5, {"n": 4}, 1),
    ]
    assert all(isinstance(i, wf.StreamItem) and i.at is not None for i in read)
    assert wf.get_status("r1").streams == {"tokens": {"items": 5, "closed": True}}


@pytest.mark.django_db
def test_reading_ends_with_the_instance_when_the_stream_is_not_closed(define):
    @define("streams-unclosed")
    def run(ctx, input):
        ctx.stream("s").write(1)
        return 1

    wf.start("streams-unclosed", id="u1")
    wf.drain()
    assert [i.value for i in wf.read_stream("u1", "s")] == [1]
    assert [i.value for i in wf.read_stream("u1", "never")] == []
    assert wf.get_status("u1").streams == {"s": {"items": 1, "closed": False}}


@pytest.mark.django_db
def test_a_timeout_bounds_the_wait_for_the_next_item(chatty):
    wf.start("streams-chatty", {"n": 2}, id="t1")
    wf.drain()  # suspended, the stream open
    reader = wf.read_stream("t1", "tokens", timeout=0.2)
    assert [next(reader).offset, next(reader).offset] == [1, 2]
    started = time.monotonic()
    with pytest.raises(wf.WorkflowResultTimeoutError) as raised:
        next(reader)
    assert 0.15 < time.monotonic() - started < 2
    assert raised.value.instance_id == "t1"


@pytest.mark.django_db
def test_bad_arguments_are_refused_at_once():
    with pytest.raises(wf.WorkflowNotFoundError):
        wf.read_stream("nobody", "s")
    with pytest.raises(TypeError):
        wf.read_stream("x", "")
    with pytest.raises(ValueError):
        wf.read_stream("x", "s", after=-1)
    with pytest.raises(ValueError):
        wf.read_stream("x", "s", timeout="soon")


@pytest.mark.django_db(transaction=True)
def test_a_reader_gets_items_as_a_worker_writes_them(define):
    release = threading.Event()

    @define("streams-live-read")
    def run(ctx, input):
        def talk(step):
            out = step.stream("tokens")
            out.write("a")
            release.wait(10)
            out.write("b")
            return 1

        ctx.step("talk", talk)
        return 1

    wf.start("streams-live-read", id="lr")
    got = []
    with worker_thread(concurrency=1):
        reader = wf.read_stream("lr", "tokens", timeout=10)
        got.append(next(reader).value)  # while the step still runs
        assert wf.get_status("lr").status == "running"
        release.set()
        got.extend(i.value for i in reader)  # until the instance ends
    assert got == ["a", "b"]


@pytest.mark.django_db(transaction=True)
def test_a_write_in_another_thread_wakes_a_waiting_reader_at_once(chatty):
    wf.start("streams-chatty", {"n": 0}, id="w1")
    wf.drain()  # suspended, nothing written yet

    def write_later():
        time.sleep(0.3)
        try:
            streams.append("default", "w1", "tokens", ["late"], attempt=None, now=clock.now())
        finally:
            connections.close_all()

    writer = threading.Thread(target=write_later)
    writer.start()
    reader = wf.read_stream("w1", "tokens", timeout=5)
    started = time.monotonic()
    item = next(reader)
    woke = time.monotonic() - started
    writer.join()
    assert item.value == "late"
    assert woke < 0.3 + 0.2


@pytest.mark.django_db(transaction=True)
def test_aread_stream_is_the_async_twin(chatty):
    wf.start("streams-chatty", {"n": 3}, id="a1")
    wf.drain()

    async def read():
        found = []
        async for item in wf.aread_stream("a1", "tokens", after=1, timeout=5):
            found.append(item.offset)
            if item.offset == 3:
                await asyncio.to_thread(_close, "a1")
        # The reads' thread (sync_to_async's) keeps its connection: close it.
        await sync_to_async(connections.close_all, thread_sensitive=True)()
        return found

    assert asyncio.run(read()) == [2, 3]


def _close(id):
    try:
        streams.close("default", id, "tokens", now=clock.now())
    finally:
        connections.close_all()


@pytest.mark.django_db(transaction=True)
def test_on_postgresql_a_write_notifies_readers_of_an_awaited_instance(chatty):
    from django.db import connection

    from django_workflows.store.backends.base import ENDED_CHANNEL

    if connection.vendor != "postgresql":
        pytest.skip("only PostgreSQL has NOTIFY")
    import psycopg

    wf.start("streams-chatty", {"n": 0}, id="n1")
    wf.drain()
    settings = connection.settings_dict
    with psycopg.connect(
        host=settings["HOST"],
        port=settings["PORT"],
        user=settings["USER"],
        password=settings["PASSWORD"],
        dbname=settings["NAME"],
        autocommit=True,
    ) as listener:
        listener.execute(f"LISTEN {ENDED_CHANNEL}")
        streams.append("default", "n1", "tokens", ["quiet"], attempt=None, now=clock.now())
        assert list(listener.notifies(timeout=0.3)) == []  # nobody reads: no NOTIFY
        wf.get_status("n1")
        from django_workflows.store import instances

        instances.mark_awaited("default", "n1")  # what a waiting read_stream() does
        streams.append("default", "n1", "tokens", ["heard"], attempt=None, now=clock.now())
        heard = [n.payload for n in listener.notifies(timeout=2, stop_after=1)]
    assert heard == ["n1"]
