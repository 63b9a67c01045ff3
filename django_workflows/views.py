"""The webhook view: a POST of JSON to a durable webhook's URL, delivered to its wait once.

CSRF-exempt and unauthenticated beyond the token, by design: the other system holds nothing
but the URL. It writes nothing but the store's signal (no session, no message, no cookie).
"""

from __future__ import annotations

import json

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from .client import webhooks
from .conf import database_alias, get_settings
from .engine.webhooks import read
from .store.jsonvalues import to_json

JSON_TYPES = ("application/json",)


def _not_found() -> HttpResponse:
    # One answer for a forged, moved, used, timed-out or finished token: it says not which.
    return HttpResponse("Not found.\n", status=404, content_type="text/plain; charset=utf-8")


def _is_json_type(content_type: str) -> bool:
    media = content_type.split(";")[0].strip().lower()
    return not media or media in JSON_TYPES or media.endswith("+json")


@csrf_exempt
@require_POST
def webhook(request: HttpRequest, token: str) -> HttpResponse:
    """202 once the JSON body is delivered to the token's webhook; 404 for a token that opens
    nothing (forged, another's, used, past its wait's deadline, its instance finished, gone,
    compensating or asked to cancel or terminate); 413 for a body over WEBHOOK['MAX_BYTES'];
    400 for a body that is not JSON; 411 for a chunked body the server cannot read (WSGI
    without `wsgi.input_terminated`); 405 for another method."""
    if read(token) is None:
        return _not_found()  # before reading a byte of a stranger's body
    limit = get_settings().webhook.max_bytes
    try:
        declared = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return HttpResponse("Bad Content-Length.\n", status=400, content_type="text/plain")
    if declared > limit:
        return _too_large(limit)
    raw = _read(request, limit + 1)  # not request.body: stop one byte past the limit
    if raw is None:
        return HttpResponse(
            "Send the body with a Content-Length header: this server cannot read a chunked body.\n",
            status=411,
            content_type="text/plain",
        )
    if len(raw) > limit:
        return _too_large(limit)
    if not _is_json_type(request.content_type or ""):
        return _bad_request("The body must be JSON (Content-Type: application/json).")
    try:
        body = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return _bad_request("The body is not JSON.")
    using = database_alias()
    try:
        body = to_json(body, "The webhook's body", using=using)
    except (TypeError, ValueError) as error:
        return _bad_request(str(error))
    if not webhooks.deliver(token, body, using=using):
        return _not_found()
    return JsonResponse({"accepted": True}, status=202)


def _read(request: HttpRequest, size: int) -> bytes | None:
    """Up to `size` bytes of the body, or None for a chunked body this server cannot read.

    Without a Content-Length, Django's WSGI request reads nothing; a server that de-chunks the
    body says so with `wsgi.input_terminated` (gunicorn, uWSGI), and the stream it gives is read
    to its end. An ASGI request holds its whole body already."""
    chunked = "chunked" in request.META.get("HTTP_TRANSFER_ENCODING", "").lower()
    stream = request.META.get("wsgi.input")
    if not chunked or request.META.get("CONTENT_LENGTH") or stream is None:
        return request.read(size)
    if not request.META.get("wsgi.input_terminated"):
        return None
    return bytes(stream.read(size))


def _too_large(limit: int) -> HttpResponse:
    return HttpResponse(f"The body is over {limit} bytes.\n", status=413, content_type="text/plain")


def _bad_request(message: str) -> HttpResponse:
    return HttpResponse(f"{message}\n", status=400, content_type="text/plain; charset=utf-8")
