"""sse_response(): a stream as Server-Sent Events under WSGI and ASGI, resumed from
Last-Event-ID, ended by `event: end` (SPEC.md section 14)."""

from __future__ import annotations

import asyncio

import pytest
from asgiref.sync import sync_to_async
from django.db import connections
from django.test import AsyncClient

import django_workflows as wf
from django_workflows.streams import sse_response


@pytest.fixture
def written(define):
    @define("streams-sse")
    def run(ctx, input):
        out = ctx.stream("progress")
        out.write({"stage": "paid"})
        out.write("packed é")
        out.write([1, 2])
        out.close()
        return 1

    wf.start("streams-sse", id="o1")
    wf.drain()
    return "o1"


def body(response):
    return b"".join(response.streaming_content).decode()


@pytest.mark.django_db
def test_every_item_is_an_event_then_the_end(client, written):
    response = client.get("/streams/o1/progress/")
    assert response["Content-Type"] == "text/event-stream"
    assert response["Cache-Control"] == "no-cache"
    assert body(response) == (
        'id: 1\ndata: {"stage":"paid"}\n\n'
        'id: 2\ndata: "packed é"\n\n'
        "id: 3\ndata: [1,2]\n\n"
        "event: end\ndata: {}\n\n"
    )


@pytest.mark.django_db
def test_last_event_id_resumes_after_it(client, written):
    response = client.get("/streams/o1/progress/", headers={"Last-Event-ID": "2"})
    assert body(response) == "id: 3\ndata: [1,2]\n\nevent: end\ndata: {}\n\n"


@pytest.mark.django_db
def test_an_unknown_instance_ends_at_once_saying_why(client):
    text = body(client.get("/streams/nobody/progress/"))
    assert text.startswith('event: end\ndata: {"error": ')
    assert "nobody" in text


@pytest.mark.django_db
def test_a_bad_name_is_refused(rf):
    with pytest.raises(TypeError):
        sse_response(rf.get("/"), "o1", "")


@pytest.mark.django_db(transaction=True)
def test_under_asgi_the_content_is_an_async_iterator(written):
    async def read():
        response = await AsyncClient().get("/astreams/o1/progress/", headers={"Last-Event-ID": "1"})
        assert response.is_async
        chunks = [chunk async for chunk in response.streaming_content]
        await sync_to_async(connections.close_all, thread_sensitive=True)()
        return b"".join(chunks).decode()

    text = asyncio.run(read())
    assert text == 'id: 2\ndata: "packed é"\n\nid: 3\ndata: [1,2]\n\nevent: end\ndata: {}\n\n'


@pytest.mark.django_db
def test_a_quiet_stream_sends_keep_alive_comments(client, define, monkeypatch):
    from django_workflows.streams import sse

    monkeypatch.setattr(sse, "KEEPALIVE", 0.1)

    @define("streams-sse-quiet")
    def run(ctx, input):
        ctx.stream("progress").write("started")
        ctx.wait_for_signal("go", "go", key=ctx.instance_id)
        return 1

    wf.start("streams-sse-quiet", id="q1")
    wf.drain()
    chunks = iter(client.get("/streams/q1/progress/").streaming_content)
    assert next(chunks) == b'id: 1\ndata: "started"\n\n'
    assert next(chunks) == b": keep-alive\n\n"
    assert next(chunks) == b": keep-alive\n\n"
