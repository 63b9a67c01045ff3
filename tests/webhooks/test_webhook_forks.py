"""A fork's webhooks are its own: a webhook whose wait the fork runs again has a new URL and a
new key, and a POST reaches exactly one instance; a wait the fork copied as passed replays its
body, and its URL opens nothing."""

from __future__ import annotations

import pytest

import django_workflows as wf
from django_workflows.engine import webhooks
from django_workflows.models import JournalEntry, Signal
from django_workflows.store.signals import WEBHOOK_SIGNAL

from .conftest import post

pytestmark = pytest.mark.django_db


def started(order_id: str = "o1", **options) -> str:
    wf.start("checkout", {"id": order_id, **options}, id=order_id)
    wf.drain()
    return order_id


def key_of(id: str) -> str:
    return str(JournalEntry.objects.get(instance_id=id, name="$webhook:paid").document["key"])


def forked_waiting(provider) -> tuple[str, str, str]:
    """o1 waits for its POST; its fork from the step that hands the URL out waits too. The
    original's id and URL, and the fork's URL (its re-run step handed it out)."""
    started()
    original_url = provider.callbacks["o1"]
    fork = wf.fork("o1", from_step="create-payment").id
    wf.drain()
    fork_url = provider.callbacks["o1"]
    assert wf.get_status(fork).status == "suspended"
    return original_url, fork, fork_url


def test_a_fork_waiting_on_a_webhook_has_its_own_url_and_key(checkout, provider, workflow_clock):
    original_url, fork, fork_url = forked_waiting(provider)
    assert fork_url != original_url
    assert webhooks.read(fork_url.rstrip("/").rsplit("/", 1)[1])[0] == fork
    assert key_of(fork) != key_of("o1")


def test_the_originals_post_completes_only_the_original_then_the_forks_only_the_fork(
    checkout, provider, workflow_clock
):
    original_url, fork, fork_url = forked_waiting(provider)
    assert post(original_url, {"to": "original"}).status_code == 202
    wf.drain()
    assert wf.get_status("o1").output["body"] == {"to": "original"}
    assert wf.get_status(fork).status == "suspended"
    assert post(fork_url, {"to": "fork"}).status_code == 202
    wf.drain()
    status = wf.get_status(fork)
    assert status.status == "completed", status.error
    assert status.output["body"] == {"to": "fork"}
    assert wf.get_status("o1").output["body"] == {"to": "original"}
    assert post(original_url, {"again": 1}).status_code == 404
    assert post(fork_url, {"again": 1}).status_code == 404
    assert Signal.objects.filter(name=WEBHOOK_SIGNAL).count() == 2


def test_the_forks_post_completes_only_the_fork_then_the_originals_only_the_original(
    checkout, provider, workflow_clock
):
    original_url, fork, fork_url = forked_waiting(provider)
    assert post(fork_url, {"to": "fork"}).status_code == 202
    wf.drain()
    assert wf.get_status(fork).output["body"] == {"to": "fork"}
    assert wf.get_status("o1").status == "suspended"
    assert post(original_url, {"to": "original"}).status_code == 202
    wf.drain()
    assert wf.get_status("o1").output["body"] == {"to": "original"}
    assert wf.get_status(fork).output["body"] == {"to": "fork"}


def test_a_fork_after_the_originals_post_gets_a_post_of_its_own(checkout, provider, workflow_clock):
    started()
    assert post(provider.callbacks["o1"], {"to": "original"}).status_code == 202
    # Forked before the original took the body, and after: the body is the original's alone.
    early = wf.fork("o1", from_step="create-payment").id
    wf.drain()
    early_url = provider.callbacks["o1"]
    assert wf.get_status("o1").output["body"] == {"to": "original"}
    late = wf.fork("o1", from_step="create-payment").id
    wf.drain()
    late_url = provider.callbacks["o1"]
    assert wf.get_status(early).status == wf.get_status(late).status == "suspended"
    assert post(early_url, {"to": "early"}).status_code == 202
    assert post(late_url, {"to": "late"}).status_code == 202
    wf.drain()
    assert wf.get_status(early).output["body"] == {"to": "early"}
    assert wf.get_status(late).output["body"] == {"to": "late"}
    assert wf.get_status("o1").output["body"] == {"to": "original"}


def test_a_fork_of_a_fork_has_a_webhook_of_its_own_too(checkout, provider, workflow_clock):
    original_url, fork, fork_url = forked_waiting(provider)
    again = wf.fork(fork, from_step="create-payment").id
    wf.drain()
    again_url = provider.callbacks["o1"]
    assert len({key_of("o1"), key_of(fork), key_of(again)}) == 3
    assert post(fork_url, {"to": "fork"}).status_code == 202
    wf.drain()
    assert wf.get_status(fork).status == "completed"
    assert wf.get_status(again).status == wf.get_status("o1").status == "suspended"
    assert post(again_url, {"to": "again"}).status_code == 202
    wf.drain()
    assert wf.get_status(again).output["body"] == {"to": "again"}
    assert wf.get_status("o1").status == "suspended"


@pytest.fixture
def shop(define, provider):
    """A step before the webhook is minted, and one after its wait."""
    ran: list[str] = []

    @define("shop")
    def shop(ctx, order):
        ctx.step("reserve", lambda step: ran.append("reserve"))
        hook = ctx.webhook("paid")
        ctx.step("create-payment", lambda step: provider.create_payment(order["id"], hook.url))
        body = hook.wait()
        ctx.step("ship", lambda step: ran.append("ship"))
        return {"body": body, "url": hook.url}

    return ran


def test_a_fork_from_before_the_webhook_was_minted_mints_its_own(shop, provider, workflow_clock):
    wf.start("shop", {"id": "s1"}, id="s1")
    wf.drain()
    original_url = provider.callbacks["s1"]
    fork = wf.fork("s1", from_step="reserve").id
    wf.drain()
    fork_url = provider.callbacks["s1"]
    assert fork_url != original_url
    assert key_of(fork) != key_of("s1")
    assert post(original_url, {"to": "original"}).status_code == 202
    wf.drain()
    assert wf.get_status("s1").output["body"] == {"to": "original"}
    assert wf.get_status(fork).status == "suspended"
    assert post(fork_url, {"to": "fork"}).status_code == 202
    wf.drain()
    assert wf.get_status(fork).output["body"] == {"to": "fork"}


def test_a_fork_after_the_wait_replays_its_body_and_its_url_opens_nothing(
    shop, provider, workflow_clock
):
    wf.start("shop", {"id": "s1"}, id="s1")
    wf.drain()
    assert post(provider.callbacks["s1"], {"to": "original"}).status_code == 202
    wf.drain()
    assert shop == ["reserve", "ship"]
    fork = wf.fork("s1", from_step="ship").id
    wf.drain()
    status = wf.get_status(fork)
    assert status.status == "completed", status.error
    assert status.output["body"] == {"to": "original"}  # the wait, copied, replays the body
    assert key_of(fork) == key_of("s1")  # the entry as it was: the replay gives the same
    assert shop == ["reserve", "ship", "ship"]
    assert post(status.output["url"], {"late": True}).status_code == 404
    assert Signal.objects.filter(name=WEBHOOK_SIGNAL).count() == 1
