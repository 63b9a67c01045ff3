"""sse_response(): a stream as Server-Sent Events, for a browser's EventSource.

Each item is an event whose `id:` is its offset and whose `data:` is its value as JSON, so a
browser that reconnects sends `Last-Event-ID` and resumes after it. The response ends with
`event: end` when the stream is closed or its instance ends; the page closes its EventSource
then, or the browser would connect again. A comment line every KEEPALIVE seconds without an
item keeps proxies from closing an idle connection, and under WSGI finds a reader that left.

Under ASGI the response's content is an async iterator (aread_stream()): a long stream holds no
thread. Under WSGI it is read_stream(), on the request's thread.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

from django.core.handlers.asgi import ASGIRequest
from django.http import HttpRequest, StreamingHttpResponse

from ..client.streams import aread_stream, read_stream
from ..errors import WorkflowNotFoundError, WorkflowResultTimeoutError
from ..jsonvalues import check_lookup
from ..results import StreamItem

KEEPALIVE = 15.0
"""Seconds without an item after which a comment line is sent."""


def _after(request: HttpRequest) -> int:
    """The offset to resume after: the Last-Event-ID header's, else 0."""
    raw = request.headers.get("Last-Event-ID", "").strip()
    return int(raw) if raw.isdigit() else 0


def _event(item: StreamItem) -> str:
    data = json.dumps(item.value, ensure_ascii=False, separators=(",", ":"))
    return f"id: {item.offset}\ndata: {data}\n\n"


def _end(error: str | None = None) -> str:
    return f"event: end\ndata: {json.dumps({} if error is None else {'error': error})}\n\n"


def _events(id: str, name: str, after: int, using: str | None) -> Iterator[str]:
    try:
        while True:
            try:
                for item in read_stream(id, name, after=after, timeout=KEEPALIVE, using=using):
                    after = item.offset
                    yield _event(item)
                break
            except WorkflowResultTimeoutError:
                yield ": keep-alive\n\n"
    except WorkflowNotFoundError as error:
        yield _end(str(error))
        return
    yield _end()


async def _aevents(id: str, name: str, after: int, using: str | None) -> AsyncIterator[str]:
    try:
        while True:
            try:
                async for item in aread_stream(
                    id, name, after=after, timeout=KEEPALIVE, using=using
                ):
                    after = item.offset
                    yield _event(item)
                break
            except WorkflowResultTimeoutError:
                yield ": keep-alive\n\n"
    except WorkflowNotFoundError as error:
        yield _end(str(error))
        return
    yield _end()


def sse_response(
    request: HttpRequest, id: str, name: str, *, using: str | None = None
) -> StreamingHttpResponse:
    """The stream `name` of instance `id` as a `text/event-stream` response, from the item
    after the request's `Last-Event-ID` (an offset). Each item: `id: <offset>` and
    `data: <JSON>`; then `event: end` (its data `{}`, or `{"error": ...}` for an unknown id).
    Check the user may see the instance before you call it. TypeError or ValueError for a bad
    id or name."""
    if not isinstance(id, str) or not isinstance(name, str) or not name:
        raise TypeError(
            f"sse_response() needs an instance id and a stream name (strings), got {id!r} "
            f"and {name!r}."
        )
    check_lookup("The instance id", id)
    check_lookup("The stream's name", name)
    after = _after(request)
    content: Any
    if isinstance(request, ASGIRequest):
        content = _aevents(id, name, after, using)
    else:
        content = _events(id, name, after, using)
    response = StreamingHttpResponse(content, content_type="text/event-stream")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"  # nginx: pass each event on at once
    return response
