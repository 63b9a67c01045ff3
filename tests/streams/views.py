"""The views of the SSE tests: a sync view (WSGI) and an async one (ASGI)."""

from __future__ import annotations

from django_workflows.streams import sse_response


def events(request, id, name):
    return sse_response(request, id, name)


async def aevents(request, id, name):
    return sse_response(request, id, name)


PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>stream</title></head>
<body><ol id="lines"></ol><p id="state">following</p>
<script>
  const lines = document.getElementById("lines");
  const events = new EventSource("/streams/%(id)s/%(name)s/");
  events.onmessage = (event) => {
    const line = document.createElement("li");
    line.textContent = event.lastEventId + ":" + JSON.parse(event.data);
    lines.append(line);
  };
  events.addEventListener("end", () => {
    events.close();
    document.getElementById("state").textContent = "ended";
  });
</script></body></html>"""


def page(request, id, name):
    from django.http import HttpResponse
    from django.utils.html import escapejs

    return HttpResponse(PAGE % {"id": escapejs(id), "name": escapejs(name)})
