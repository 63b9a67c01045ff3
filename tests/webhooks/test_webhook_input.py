"""A webhook's bad input: bodies the view refuses (413, 400) and ctx.webhook() misuse, each
refused before anything is stored."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import override_settings

import django_workflows as wf
from django_workflows.models import JournalEntry, Signal

from .conftest import post

pytestmark = pytest.mark.django_db


@pytest.fixture
def url(checkout, provider, workflow_clock):
    wf.start("checkout", {"id": "o1"}, id="o1")
    wf.drain()
    return provider.callbacks["o1"]


def refused(response, status: int) -> None:
    assert response.status_code == status, response.content
    assert not Signal.objects.exists()
    assert wf.get_status("o1").status == "suspended"


def test_a_body_over_max_bytes_is_413(url, settings):
    settings.DJANGO_WORKFLOWS = {
        **getattr(settings, "DJANGO_WORKFLOWS", {}),
        "WEBHOOK": {"MAX_BYTES": 100},
    }
    refused(post(url, {"pad": "x" * 100}), 413)
    assert post(url, {"pad": "x" * 80}).status_code == 202  # 92 bytes: within the limit


def test_the_default_limit_is_a_million_bytes(url):
    refused(post(url, {"pad": "x" * 1_000_000}), 413)


@pytest.mark.parametrize(
    "raw",
    [b"not json", b"{'single': 'quotes'}", b'{"n": NaN}', b"\xff\xfe", b"", b'{"n": 1'],
)
def test_a_body_that_is_not_json_is_400(url, raw):
    refused(post(url, raw=raw), 400)


def test_a_form_encoded_body_is_400(url):
    refused(post(url, raw=b"status=paid", content_type="application/x-www-form-urlencoded"), 400)


def test_a_json_media_type_with_a_suffix_or_charset_is_taken(url):
    assert (
        post(url, {"n": 1}, content_type="application/vnd.provider+json; charset=utf-8").status_code
        == 202
    )


def test_a_body_too_deep_to_store_is_400(url):
    refused(post(url, raw=b"[" * 200 + b"]" * 200), 400)


@pytest.mark.skipif(connection.vendor != "postgresql", reason="only PostgreSQL refuses NUL")
def test_a_nul_in_the_body_is_400_on_postgresql(url):
    refused(post(url, {"name": "a\u0000b"}), 400)


def test_a_forged_token_is_404_before_the_body_is_read(url, settings):
    settings.DJANGO_WORKFLOWS = {
        **getattr(settings, "DJANGO_WORKFLOWS", {}),
        "WEBHOOK": {"MAX_BYTES": 10},
    }
    response = post("/workflows/webhooks/forged:token/", {"pad": "x" * 100})
    assert response.status_code == 404  # not 413: a stranger learns nothing


@pytest.fixture
def misuse(define):
    @define("webhook-misuse")
    def misuse(ctx, how):
        if how == "empty":
            ctx.webhook("")
        elif how == "number":
            ctx.webhook(7)
        elif how == "twice":
            ctx.webhook("paid")
            ctx.webhook("paid")
        elif how == "long":
            ctx.webhook("x" * 499)
        elif how == "wait-twice":
            hook = ctx.webhook("paid")
            hook.wait(timeout="1s")
            hook.wait(timeout="1s")
        return "done"

    return misuse


@pytest.mark.parametrize(
    ("how", "error", "says"),
    [
        ("empty", "WorkflowDefinitionError", "webhook needs a non-empty name"),
        ("number", "WorkflowDefinitionError", "webhook needs a non-empty name"),
        ("twice", "WorkflowDefinitionError", "used twice"),
        ("long", "ValueError", "499 characters long; the most it can be is 498"),
    ],
)
def test_a_bad_webhook_name_fails_the_instance_clearly(misuse, workflow_clock, how, error, says):
    wf.start("webhook-misuse", how, id="bad")
    wf.drain()
    status = wf.get_status("bad")
    assert status.status == "failed"
    assert status.error["name"] == error
    assert says in status.error["message"]


def test_a_webhook_waits_once(misuse, workflow_clock):
    wf.start("webhook-misuse", "wait-twice", id="bad")
    wf.drain()
    workflow_clock.advance("1s")
    wf.drain()
    status = wf.get_status("bad")
    assert status.status == "failed"
    assert "used twice" in status.error["message"]


def test_without_the_route_ctx_webhook_fails_clearly_and_journals_nothing(checkout, workflow_clock):
    with override_settings(ROOT_URLCONF="tests.webhooks.no_route_urls"):
        wf.start("checkout", {"id": "o1"}, id="o1")
        wf.drain()
    status = wf.get_status("o1")
    assert status.status == "failed"
    assert status.error["name"] == "ImproperlyConfigured"
    assert 'include("django_workflows.urls")' in status.error["message"]
    assert not JournalEntry.objects.filter(instance_id="o1", name="$webhook:paid").exists()


def _chunked_wsgi_post(url: str, body: bytes, **environ) -> tuple[int, bytes]:
    """POST `body` through Django's request handler as a WSGI server gives a chunked request:
    no Content-Length, Transfer-Encoding: chunked, and the body in wsgi.input."""
    import io
    from urllib.parse import urlsplit

    from django.test.client import ClientHandler, RequestFactory

    base = RequestFactory()._base_environ(
        PATH_INFO=urlsplit(url).path,
        REQUEST_METHOD="POST",
        CONTENT_TYPE="application/json",
        HTTP_TRANSFER_ENCODING="chunked",
        **{"wsgi.input": io.BytesIO(body)},
        **environ,
    )
    response = ClientHandler()(base)
    return response.status_code, response.content


def test_a_chunked_body_is_read_where_the_server_de_chunks_it(url):
    status, content = _chunked_wsgi_post(url, b'{"n": 1}', **{"wsgi.input_terminated": True})
    assert status == 202, content
    wf.drain()
    assert wf.get_status("o1").output["body"] == {"n": 1}


def test_a_chunked_body_the_server_cannot_read_is_411(url):
    status, content = _chunked_wsgi_post(url, b'{"n": 1}')
    assert status == 411 and b"Content-Length" in content
    assert not Signal.objects.exists()


def test_a_chunked_body_over_max_bytes_is_413(url):
    status, _ = _chunked_wsgi_post(
        url, b'{"pad": "' + b"x" * 1_000_000 + b'"}', **{"wsgi.input_terminated": True}
    )
    assert status == 413
    assert not Signal.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_a_chunked_post_to_the_development_server_is_411_not_400(url, live_server):
    import socket
    from urllib.parse import urlsplit

    where = urlsplit(live_server.url)
    body = b'{"n": 1}'
    # One write, the whole request: the server answers 411 without reading the body, and
    # closes; a client that sent the chunks one by one would find the connection gone.
    request = (
        (
            f"POST {url} HTTP/1.1\r\nHost: {where.netloc}\r\nContent-Type: application/json\r\n"
            f"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n{len(body):x}\r\n"
        ).encode()
        + body
        + b"\r\n0\r\n\r\n"
    )
    with socket.create_connection((where.hostname, where.port), timeout=10) as connection:
        connection.sendall(request)
        response = b""
        while chunk := connection.recv(65536):
            response += chunk
    assert response.split(b"\r\n", 1)[0].split()[1] == b"411", response[:200]
    assert not Signal.objects.exists()
