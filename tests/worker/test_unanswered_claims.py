"""A claim whose answer never reached its worker: the claim committed, then the connection broke
(a killed connection, a server going away) before the worker learned what it leased. Its
instances are handed back at the worker's next claim, not left to lapse a lease later."""

from __future__ import annotations

import pytest
from django.db import OperationalError, connection

import django_workflows as wf
from django_workflows.models import JournalEntry, WorkflowInstance
from django_workflows.worker import Worker

pytestmark = pytest.mark.django_db(transaction=True)
JOURNAL = JournalEntry._meta.db_table


@pytest.fixture
def napper(define):
    @define("napper")
    def napper(ctx, _):
        ctx.sleep("nap", "1m")
        return ctx.step("after", lambda step: "done")

    return napper


def broken_after_the_claim(execute, sql, params, many, context):
    """The first read of journals after a claim fails, as when the connection is killed
    between the claim's commit and that read."""
    reads_journals = sql.lstrip().upper().startswith("SELECT") and JOURNAL in sql
    if reads_journals and not getattr(broken_after_the_claim, "done", False):
        broken_after_the_claim.done = True
        raise OperationalError("the connection broke after the claim committed")
    return execute(sql, params, many, context)


def test_an_unanswered_claims_instances_are_handed_back_at_the_next_claim(
    napper, workflow_clock, caplog
):
    wf.start(napper, None, id="n1")
    wf.drain()
    workflow_clock.advance("1m")  # due again: its claim reads its journal
    broken_after_the_claim.done = False
    with connection.execute_wrapper(broken_after_the_claim):
        # As `runworkflows --once`: the claims on this thread, which logs a failed claim and
        # goes on. The manual clock stands still: no lease lapses meanwhile.
        Worker(poll_interval="10ms").run_until_idle()
    assert broken_after_the_claim.done
    assert "Claiming due instances failed" in caplog.text
    status = wf.get_status("n1")
    assert status.status == "completed", status
    row = WorkflowInstance.objects.get(pk="n1")
    assert (row.lease_token, row.lease_until) == (None, None)
    assert row.runs == 2  # the claim that went unanswered ran nothing: not counted


def test_a_claim_that_failed_before_its_commit_hands_back_nothing(napper, workflow_clock):
    from django_workflows.store import instances as store

    wf.start(napper, None, id="n2")
    assert store.hand_back(connection.alias, "no-such-token", workflow_clock.now()) == 0
    assert WorkflowInstance.objects.get(pk="n2").status == "pending"
