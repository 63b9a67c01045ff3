"""Ids, names and keys compare exactly on every database: a trailing space makes another one.

MySQL's and MariaDB's `utf8mb4_bin` is a PAD SPACE collation, under which `"a "` equals `"a"`;
the key columns use a NO PAD binary collation there instead, whatever the database's default.
"""

from __future__ import annotations

import pytest
from django.db import connection

import django_workflows as wf
from django_workflows import Concurrency, RateLimit
from django_workflows.checks import check_database
from django_workflows.models import JournalEntry, RateLimitWindow, Signal, WorkflowInstance
from tests.helpers import claim_ids

pytestmark = pytest.mark.django_db


def test_a_signal_key_with_a_trailing_space_does_not_wake_the_wait_for_the_key(workflow_clock):
    wf.start("wait-once", {"key": "user-1"}, id="waiting")
    wf.drain()
    assert wf.signal("ping", {"n": 1}, key="user-1 ").woken == 0
    assert wf.drain() == 0
    assert wf.get_status("waiting").status == "suspended"
    assert wf.signal("ping", {"n": 2}, key="user-1").woken == 1
    wf.drain()
    assert wf.get_status("waiting").output == {"n": 2}


def test_a_signal_name_with_a_trailing_space_is_another_signal(workflow_clock):
    wf.start("wait-once", {"key": "A"}, id="waiting")
    wf.drain()
    assert wf.signal("ping ", {"n": 1}, key="A").woken == 0
    assert wf.drain() == 0
    assert wf.get_status("waiting").status == "suspended"


def test_an_instance_id_with_a_trailing_space_is_another_instance(workflow_clock):
    first = wf.start("wait-once", {"key": "A"}, id="inv-7")
    second = wf.start("wait-once", {"key": "B"}, id="inv-7 ")
    assert (first.id, first.created) == ("inv-7", True)
    assert (second.id, second.created) == ("inv-7 ", True)
    assert wf.get_status("inv-7 ").input == {"key": "B"}
    assert wf.get_status("inv-7").input == {"key": "A"}
    assert WorkflowInstance.objects.count() == 2


def test_a_dedupe_id_with_a_trailing_space_is_another_signal(workflow_clock):
    first = wf.signal("delivered", {"n": 1}, key="o1", id="TRK1")
    second = wf.signal("delivered", {"n": 2}, key="o1", id="TRK1 ")
    assert first.created is True and second.created is True
    assert second.signal_id != first.signal_id
    assert sorted(Signal.objects.values_list("dedupe_id", flat=True)) == ["TRK1", "TRK1 "]


def test_steps_whose_names_differ_by_a_trailing_space_are_journaled_apart(define, workflow_clock):
    @define("two-steps")
    def two_steps(ctx, input):
        return [ctx.step("charge", lambda step: 1), ctx.step("charge ", lambda step: 2)]

    wf.start("two-steps", None, id="steps")
    wf.drain()
    status = wf.get_status("steps")
    assert status.status == "completed", status.error
    assert status.output == [1, 2]
    names = JournalEntry.objects.filter(instance_id="steps").values_list("name", flat=True)
    assert {"charge", "charge "} <= set(names)


def test_concurrency_keys_that_differ_by_a_trailing_space_are_counted_apart(define, workflow_clock):
    @define("per-user", concurrency=Concurrency(limit=1, key=lambda input: input["user"]))
    def per_user(ctx, input):
        return None

    wf.start("per-user", {"user": "u1"}, id="plain")
    wf.start("per-user", {"user": "u1 "}, id="spaced")
    assert sorted(claim_ids(["per-user"], limit=10)) == ["plain", "spaced"]


def test_rate_limit_keys_that_differ_by_a_trailing_space_have_windows_of_their_own(
    define, workflow_clock
):
    @define("per-tenant", rate_limit=RateLimit(max=1, duration="1m", key=lambda i: i["tenant"]))
    def per_tenant(ctx, input):
        return None

    wf.start("per-tenant", {"tenant": "t1"}, id="plain")
    wf.start("per-tenant", {"tenant": "t1 "}, id="spaced")
    assert sorted(claim_ids(["per-tenant"], limit=10)) == ["plain", "spaced"]
    keys = RateLimitWindow.objects.filter(workflow="per-tenant", scope="key")
    assert sorted(keys.values_list("key", flat=True)) == ["t1", "t1 "]


def test_the_key_columns_of_a_migrated_database_pass_the_collation_check():
    problems = check_database(databases=[connection.alias])
    assert [p for p in problems if p.id == "django_workflows.W002"] == []
