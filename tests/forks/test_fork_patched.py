"""A fork of a patched instance keeps the patch decisions made before its step: the copied
steps were taken under them, and its replay must take the same branch."""

from __future__ import annotations

from collections import Counter

import pytest

import django_workflows as wf
from django_workflows.engine.registry import registry
from django_workflows.models import JournalEntry

pytestmark = pytest.mark.django_db


@pytest.fixture
def deploy(define):
    """`deploy(broken=...)` registers "confirmed-order": charge, then the confirmation mail
    behind the patch "confirm-mail" (the old branch sends nothing), then ship, which fails on a
    bug while `broken`."""
    runs: Counter[str] = Counter()
    registered = []

    def register(*, broken: bool):
        for definition in registered:
            registry.unregister(definition)

        @define("confirmed-order")
        def confirmed_order(ctx, order):
            ctx.step("charge", lambda step: runs.update(["charge"]))
            if ctx.patched("confirm-mail"):
                ctx.step("confirm", lambda step: runs.update(["confirm"]))
            else:
                ctx.step("no-confirmation", lambda step: runs.update(["no-confirmation"]))

            def ship(step):
                runs["ship"] += 1
                if broken:
                    raise RuntimeError("the carrier's API is down for the test")
                return "shipped"

            return ctx.step("ship", ship, retry=wf.Retry(attempts=1))

        registered.append(confirmed_order)

    register.runs = runs  # type: ignore[attr-defined]
    return register


@pytest.fixture
def failed(deploy, workflow_clock):
    deploy(broken=True)
    wf.start("confirmed-order", {"order": 1}, id="patched-order")
    wf.drain()
    assert wf.get_status("patched-order").status == "failed"
    deploy(broken=False)
    return "patched-order"


def test_a_fork_after_the_patch_keeps_its_marker_and_replays_the_new_branch(deploy, failed):
    forked = wf.fork(failed, from_step="ship")
    names = set(JournalEntry.objects.filter(instance_id=forked.id).values_list("name", flat=True))
    assert "$patch:confirm-mail" in names
    wf.drain()
    assert wf.get_status(forked.id).status == "completed"
    assert deploy.runs == Counter(charge=1, confirm=1, ship=2)


def test_a_fork_from_the_patched_step_decides_the_patch_as_the_original_did(deploy, failed):
    forked = wf.fork(failed, from_step="confirm")
    wf.drain()
    assert wf.get_status(forked.id).status == "completed"
    assert deploy.runs == Counter(charge=1, confirm=2, ship=2)
