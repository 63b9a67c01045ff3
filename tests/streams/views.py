"""The views of the SSE tests: a sync view (WSGI) and an async one (ASGI)."""

from __future__ import annotations

from django_workflows.streams import sse_response


def events(request, id, name):
    return sse_response(request, id, name)


async def aevents(request, id, name):
    return sse_response(request, id, name)
