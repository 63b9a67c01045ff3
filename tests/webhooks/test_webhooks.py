"""Durable webhooks: ctx.webhook(name) gives a one-shot URL; its JSON POST resumes the wait once.

Django's test client drives the view (real request handling through the URLconf, the CSRF
middleware and the view), the worker runs the instance.
"""

from __future__ import annotations

import pytest
from django.urls import reverse

import django_workflows as wf
from django_workflows.engine import webhooks
from django_workflows.models import JournalEntry, Signal
from django_workflows.store import payloads
from django_workflows.store.signals import WEBHOOK_SIGNAL

from .conftest import post, started

pytestmark = pytest.mark.django_db


def test_the_post_resumes_the_wait_with_its_body(checkout, provider, workflow_clock):
    started()
    assert wf.get_status("o1").status == "suspended"
    response = post(provider.callbacks["o1"], {"status": "paid", "amount": 4200})
    assert response.status_code == 202
    assert response.json() == {"accepted": True}
    assert wf.drain() == 1
    status = wf.get_status("o1")
    assert status.status == "completed", status.error
    assert status.output["body"] == {"status": "paid", "amount": 4200}


def test_the_url_is_the_base_url_and_the_served_path_holding_the_token(
    checkout, provider, workflow_clock, settings
):
    settings.DJANGO_WORKFLOWS = {
        **getattr(settings, "DJANGO_WORKFLOWS", {}),
        "WEBHOOK": {"BASE_URL": "https://shop.example.com/"},
    }
    started()
    url = provider.callbacks["o1"]
    post(url, {"ok": True})
    wf.drain()
    output = wf.get_status("o1").output
    path = reverse("django_workflows:webhook", kwargs={"token": output["token"]})
    assert path.startswith("/workflows/webhooks/")
    assert url == output["url"] == "https://shop.example.com" + path


def test_without_a_base_url_the_url_is_the_path(checkout, provider, workflow_clock):
    started()
    assert provider.callbacks["o1"].startswith("/workflows/webhooks/")


def test_the_token_is_the_same_on_every_replay_and_journaled_as_a_key_only(
    checkout, provider, workflow_clock
):
    started()
    handed_out = provider.callbacks["o1"]
    post(handed_out, {"n": 1})
    wf.drain()  # a new execution: it replays the webhook's entry
    assert wf.get_status("o1").output["url"] == handed_out
    entry = JournalEntry.objects.get(instance_id="o1", name="$webhook:paid")
    assert entry.document["kind"] == "webhook"
    assert wf.get_status("o1").output["token"] not in str(entry.document)  # no bearer secret


def test_a_second_post_is_404_and_stores_nothing(checkout, provider, workflow_clock):
    started()
    url = provider.callbacks["o1"]
    assert post(url, {"n": 1}).status_code == 202
    assert post(url, {"n": 2}).status_code == 404
    assert Signal.objects.filter(name=WEBHOOK_SIGNAL).count() == 1
    wf.drain()
    assert wf.get_status("o1").output["body"] == {"n": 1}
    assert post(url, {"n": 3}).status_code == 404  # and after the instance finished
    assert Signal.objects.filter(name=WEBHOOK_SIGNAL).count() == 1


def test_a_post_before_the_wait_is_kept_for_it(checkout, provider, workflow_clock):
    started(sleep="1h")
    assert post(provider.callbacks["o1"], {"early": True}).status_code == 202
    assert wf.drain() == 0  # still asleep: the body waits for the wait
    workflow_clock.advance("1h")
    wf.drain()
    assert wf.get_status("o1").output["body"] == {"early": True}


def test_the_wait_times_out_with_none_and_the_url_then_opens_nothing(
    checkout, provider, workflow_clock
):
    started(timeout="2h")
    workflow_clock.advance("2h")
    wf.drain()
    status = wf.get_status("o1")
    assert status.status == "completed"
    assert status.output["body"] is None
    assert post(provider.callbacks["o1"], {"late": True}).status_code == 404
    assert not Signal.objects.exists()


def test_a_post_in_time_beats_the_timeout(checkout, provider, workflow_clock):
    started(timeout="2h")
    workflow_clock.advance("1h")
    assert post(provider.callbacks["o1"], {"n": 1}).status_code == 202
    wf.drain()
    assert wf.get_status("o1").output["body"] == {"n": 1}


def test_a_forged_or_altered_token_is_404(checkout, provider, workflow_clock):
    started()
    url = provider.callbacks["o1"]
    token = url.rstrip("/").rsplit("/", 1)[1]
    value, signature = token.split(":")
    flipped = signature[:-1] + ("A" if signature[-1] != "A" else "B")
    for forged in ["nonsense", f"{value}:{flipped}", f"{value}x:{signature}", f"{value}:", "a:b:c"]:
        path = reverse("django_workflows:webhook", kwargs={"token": forged})
        response = post(path, {"n": 1})
        assert response.status_code == 404, forged
        assert response.content == b"Not found.\n"
    assert not Signal.objects.exists()
    assert wf.get_status("o1").status == "suspended"


def test_another_instances_token_opens_nothing_here(checkout, provider, workflow_clock):
    started("o1")
    started("o2")
    token = provider.callbacks["o1"].rstrip("/").rsplit("/", 1)[1]
    value, signature = token.split(":")
    _, name, key = webhooks.read(token)
    # o1's key and signature, moved to o2: the salt names the instance, so the signature fails.
    from django.core import signing

    moved = signing.b64_encode(f'["o2","{name}","{key}"]'.encode()).decode()
    path = reverse("django_workflows:webhook", kwargs={"token": f"{moved}:{signature}"})
    assert post(path, {"n": 1}).status_code == 404
    assert not Signal.objects.exists()
    # A token signed for o1 does not pass for the other webhook name either.
    assert webhooks.read(webhooks.sign("o1", "paid", key)) == ("o1", "paid", key)
    renamed = webhooks.sign("o1", "refunded", key).split(":")[0] + ":" + signature
    assert webhooks.read(renamed) is None


def test_each_instance_gets_its_own_url_and_body(checkout, provider, workflow_clock):
    started("o1")
    started("o2")
    assert provider.callbacks["o1"] != provider.callbacks["o2"]
    post(provider.callbacks["o2"], {"for": "o2"})
    wf.drain()
    assert wf.get_status("o2").output["body"] == {"for": "o2"}
    assert wf.get_status("o1").status == "suspended"


def test_a_finished_instances_token_is_404(checkout, provider, workflow_clock):
    started()
    wf.cancel("o1")
    wf.drain()
    assert wf.get_status("o1").status == "cancelled"
    assert post(provider.callbacks["o1"], {"n": 1}).status_code == 404
    assert not Signal.objects.exists()


def test_a_deleted_instances_token_is_404(checkout, provider, workflow_clock):
    started()
    wf.terminate("o1")
    wf.drain()
    wf.delete("o1")
    assert post(provider.callbacks["o1"], {"n": 1}).status_code == 404
    assert not Signal.objects.exists()


def test_the_view_needs_no_csrf_token_and_sets_no_cookie(checkout, provider, workflow_clock):
    started()
    response = post(provider.callbacks["o1"], {"n": 1}, client={"enforce_csrf_checks": True})
    assert response.status_code == 202
    assert not response.cookies


def test_only_post_is_allowed(checkout, provider, workflow_clock, client):
    started()
    assert client.get(provider.callbacks["o1"]).status_code == 405
    assert (
        client.put(provider.callbacks["o1"], "{}", content_type="application/json").status_code
        == 405
    )
    assert not Signal.objects.exists()


def test_the_body_is_stored_through_the_codec_like_any_signal(checkout, provider, workflow_clock):
    started()
    post(provider.callbacks["o1"], {"card": "4242"})
    stored = Signal.objects.get(name=WEBHOOK_SIGNAL)
    assert payloads.decode_signal(stored).payload == {"card": "4242"}


def test_webhook_received_is_sent_at_commit(
    checkout, provider, workflow_clock, events, django_capture_on_commit_callbacks
):
    started()
    with django_capture_on_commit_callbacks(execute=True):
        post(provider.callbacks["o1"], {"n": 1})
    received = [e for e in events if e.type == "webhook-received"]
    assert len(received) == 1
    assert received[0].id == "o1" and received[0].workflow == "checkout"
    assert received[0].data["webhook"] == "paid"
    assert received[0].data["signal_id"] == Signal.objects.get().id


def test_a_token_signed_before_a_key_rotation_opens_with_the_fallback(
    checkout, provider, workflow_clock, settings
):
    started()
    url = provider.callbacks["o1"]
    old = settings.SECRET_KEY
    settings.SECRET_KEY = "a-new-secret-key-for-the-rotation-test"
    settings.SECRET_KEY_FALLBACKS = []
    assert post(url, {"n": 1}).status_code == 404
    settings.SECRET_KEY_FALLBACKS = [old]
    assert post(url, {"n": 1}).status_code == 202


def test_the_handle_is_a_webhook_that_keeps_its_token_out_of_its_repr(define, workflow_clock):
    seen = {}

    @define("handle")
    def handle(ctx, _):
        hook = ctx.webhook("paid")
        seen.update(is_webhook=isinstance(hook, wf.Webhook), repr=repr(hook), token=hook.token)
        return None

    wf.start("handle", None, id="h")
    wf.drain()
    assert wf.get_status("h").status == "completed"
    assert seen["is_webhook"] is True
    assert seen["token"] not in seen["repr"] and "paid" in seen["repr"]


def test_an_old_token_opens_nothing_in_a_new_instance_under_the_same_id(
    checkout, provider, workflow_clock
):
    started()
    old_url = provider.callbacks["o1"]
    wf.terminate("o1")
    wf.drain()
    wf.delete("o1")
    started()  # the same id again: a new webhook, with a new key
    assert provider.callbacks["o1"] != old_url
    assert post(old_url, {"n": 1}).status_code == 404
    assert not Signal.objects.exists()
    assert post(provider.callbacks["o1"], {"n": 2}).status_code == 202


def test_a_token_opens_nothing_where_the_instance_has_no_such_webhook_entry(
    checkout, provider, workflow_clock
):
    started()
    JournalEntry.objects.filter(instance_id="o1", name="$webhook:paid").delete()
    assert post(provider.callbacks["o1"], {"n": 1}).status_code == 404
    assert not Signal.objects.exists()
