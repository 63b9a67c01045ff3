"""Fair share (@workflow(fair_key=...), start(fair_key=...)): among due instances of equal
priority, claims take the fair keys in turn. One key's backlog never holds back another key's
instances; priorities stay strict across keys."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import transaction
from django.urls import reverse

import django_workflows as wf
from django_workflows import clock
from django_workflows.models import WorkflowInstance
from tests.helpers import claim_ids

pytestmark = pytest.mark.django_db(transaction=True)


def claim(limit: int = 10, names: tuple[str, ...] = ("tenant-job",)) -> list[str]:
    """One claim as a worker makes it: the ids it leased, in claim order."""
    return claim_ids(list(names), limit=limit, lease="5m")


def claimed_in_order(count: int, batch: int = 10) -> list[str]:
    """The first `count` instances claimed, `batch` at a time."""
    order: list[str] = []
    while len(order) < count:
        got = claim(min(batch, count - len(order)))
        if not got:
            break
        order += got
    return order


@pytest.fixture
def tenant_job(define):
    @define("tenant-job", fair_key=lambda input: input["tenant"])
    def run(ctx, input):
        return input

    return run


def start_backlog(key: str, count: int, *, prefix: str | None = None, **options) -> list[str]:
    ids = [f"{prefix or key}-{n:05}" for n in range(count)]
    with transaction.atomic():
        for id in ids:
            wf.start("tenant-job", {"tenant": key}, id=id, **options)
    return ids


def test_one_keys_backlog_of_10000_holds_back_none_of_100_other_keys(tenant_job):
    start_backlog("big", 10_000)
    others = [wf.start("tenant-job", {"tenant": f"t{n}"}, id=f"t{n}").id for n in range(100)]
    first = claimed_in_order(200)
    assert set(others) <= set(first)


def test_with_a_clock_that_stands_still_the_other_keys_still_go_first(tenant_job, workflow_clock):
    start_backlog("big", 1_000)
    others = [wf.start("tenant-job", {"tenant": f"t{n}"}, id=f"t{n}").id for n in range(20)]
    first = claimed_in_order(40)
    assert set(others) <= set(first)
    assert all(WorkflowInstance.objects.get(pk=id).wake_at <= clock.now() for id in first)


def test_two_backlogs_take_turns(tenant_job):
    start_backlog("a", 50)
    start_backlog("b", 50)
    first = claimed_in_order(20)
    assert sum(id.startswith("a-") for id in first) == 10
    assert sum(id.startswith("b-") for id in first) == 10


def test_a_key_that_comes_while_others_wait_takes_the_current_round(tenant_job):
    start_backlog("a", 30)
    start_backlog("b", 30)
    assert len(claimed_in_order(10)) == 10
    late = wf.start("tenant-job", {"tenant": "c"}, id="c-late").id
    assert late in claim(3)  # a round: one turn of each of the three keys


def test_every_instance_of_a_backlog_is_due_and_claimed(tenant_job):
    ids = start_backlog("big", 300) + start_backlog("small", 3)
    assert sorted(claimed_in_order(400, batch=50)) == sorted(ids)


def test_priorities_stay_strict_across_keys(tenant_job):
    backlog = start_backlog("big", 50)
    low = wf.start("tenant-job", {"tenant": "t1"}, id="low", priority=5).id
    order = claimed_in_order(51)
    assert order[-1] == low and set(order[:50]) == set(backlog)


def test_keyless_instances_keep_their_place_by_time(define, tenant_job):
    @define("plain-job")
    def plain(ctx, input):
        return input

    first = wf.start("plain-job", id="plain-first").id
    start_backlog("big", 5)
    status = wf.get_status(first)
    assert status.fair_key is None
    order = claim(10, names=("tenant-job", "plain-job"))
    assert order[0] == first


def test_the_fair_key_is_the_workflows_function_of_the_input_unless_given(tenant_job):
    assert wf.get_status(wf.start("tenant-job", {"tenant": "acme"}).id).fair_key == "acme"
    given = wf.start("tenant-job", {"tenant": "acme"}, fair_key="globex").id
    assert wf.get_status(given).fair_key == "globex"
    listed = wf.list_instances(workflow="tenant-job")
    assert sorted(i.fair_key for i in listed) == ["acme", "globex"]


def test_a_workflow_without_a_fair_key_function_takes_a_given_key(define):
    @define("keyless-job")
    def keyless(ctx, input):
        return input

    assert wf.get_status(wf.start("keyless-job", fair_key="acme").id).fair_key == "acme"
    assert wf.get_status(wf.start("keyless-job").id).fair_key is None


def test_a_function_returning_none_gives_no_key(define):
    @define("maybe-keyed", fair_key=lambda input: (input or {}).get("tenant"))
    def maybe(ctx, input):
        return input

    assert wf.get_status(wf.start("maybe-keyed", {}).id).fair_key is None


def test_a_fair_key_that_is_not_a_function_is_refused_at_definition(define):
    with pytest.raises(TypeError, match="fair_key=lambda input: 'acme'"):

        @define("badly-keyed", fair_key="acme")
        def bad(ctx, input):
            return input


def test_bad_fair_keys_are_refused_before_anything_is_written(define, tenant_job):
    @define("int-keyed", fair_key=lambda input: 42)
    def int_keyed(ctx, input):
        return input

    with pytest.raises(TypeError, match="must return a string or None, not int"):
        wf.start("int-keyed", {})
    with pytest.raises(TypeError, match="fair_key must be a string, not int"):
        wf.start("tenant-job", {"tenant": "a"}, fair_key=7)
    with pytest.raises(ValueError, match="fair_key is 300 characters long"):
        wf.start("tenant-job", {"tenant": "a"}, fair_key="k" * 300)
    assert not WorkflowInstance.objects.exists()


def test_a_delayed_or_debounced_start_keeps_its_time(tenant_job):
    start_backlog("big", 5)
    before = clock.now()
    debounced = wf.start("tenant-job", {"tenant": "big"}, id="later", debounce="1m")
    wake_at = WorkflowInstance.objects.get(pk=debounced.id).wake_at
    assert wake_at >= before + timedelta(minutes=1)


def test_a_fork_keeps_the_fair_key_or_takes_its_inputs(define):
    @define("stepped-job", fair_key=lambda input: input["tenant"])
    def stepped(ctx, input):
        return ctx.step("echo", lambda step: input)

    started = wf.start("stepped-job", {"tenant": "acme"}, id="to-fork")
    wf.drain()
    same = wf.fork(started.id, from_step="echo", new_id="forked")
    assert wf.get_status(same.id).fair_key == "acme"
    other = wf.fork(started.id, from_step="echo", new_id="moved", input={"tenant": "globex"})
    assert wf.get_status(other.id).fair_key == "globex"


def test_a_rolled_back_start_leaves_no_turn_behind(tenant_job):
    with pytest.raises(RuntimeError), transaction.atomic():
        start_backlog("big", 5)
        raise RuntimeError("rolled back")
    assert not WorkflowInstance.objects.exists()
    first = wf.start("tenant-job", {"tenant": "big"}, id="after").id
    assert claim(1) == [first]


def test_the_admin_filters_instances_by_fair_key(admin_client, tenant_job):
    start_backlog("acme", 2)
    start_backlog("globex", 1)
    changelist = reverse("admin:django_workflows_workflowinstance_changelist")
    html = admin_client.get(changelist).content.decode()
    assert "By fair key" in html and "?fair_key=acme" in html and "?fair_key=globex" in html
    response = admin_client.get(changelist, {"fair_key": "acme"})
    assert sorted(r.pk for r in response.context["cl"].result_list) == ["acme-00000", "acme-00001"]
    page = admin_client.get(
        reverse("admin:django_workflows_workflowinstance_change", args=["globex-00000"])
    )
    assert "globex" in page.content.decode()


def test_start_on_gives_a_fair_key_from_the_signals_arguments(define):
    from django.dispatch import Signal

    placed = Signal()

    @wf.start_on(placed, id=lambda order, **kw: order, input=None, fair_key=lambda shop, **kw: shop)
    @define("shop-order")
    def shop_order(ctx, input):
        return None

    placed.send(sender=None, order="o-1", shop="acme")
    assert wf.get_status("o-1").fair_key == "acme"
    with pytest.raises(TypeError, match="the fair_key function must return a string, not int"):
        placed.send(sender=None, order="o-2", shop=42)
    assert not WorkflowInstance.objects.filter(pk="o-2").exists()


def test_a_child_takes_its_parents_fair_key_unless_its_workflow_gives_one(define, tenant_job):
    @define("plain-child")
    def plain_child(ctx, input):
        return input

    @define("tenant-parent", fair_key=lambda input: input["tenant"])
    def parent(ctx, input):
        ctx.start_child("plain-child", None, id=f"{ctx.instance_id}-plain")
        ctx.start_child("tenant-job", {"tenant": "own"}, id=f"{ctx.instance_id}-own")
        ctx.start_child("plain-child", None, id=f"{ctx.instance_id}-given", fair_key="given")
        return None

    wf.start("tenant-parent", {"tenant": "acme"}, id="parent")
    wf.drain()
    assert wf.get_status("parent-plain").fair_key == "acme"
    assert wf.get_status("parent-own").fair_key == "own"
    assert wf.get_status("parent-given").fair_key == "given"


def test_a_debounced_start_takes_the_fair_key_of_its_last_input(tenant_job):
    wf.start("tenant-job", {"tenant": "acme"}, id="burst", debounce="1m")
    again = wf.start("tenant-job", {"tenant": "globex"}, id="burst", debounce="1m")
    assert again.debounced
    assert wf.get_status("burst").fair_key == "globex"
