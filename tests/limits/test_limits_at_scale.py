"""Limit how many run at once, with many keys at their limit (issue 15): the full keys stay in
the database, so a claim's statements do not grow with them."""

from __future__ import annotations

import pytest
from django.db import connection

import django_workflows as wf
from django_workflows import Concurrency
from django_workflows.models import WorkflowInstance

from .test_limits import claim, release

pytestmark = pytest.mark.django_db


def test_a_claim_parks_the_full_keys_instances_and_the_next_sends_no_list_of_them(
    define, workflow_clock
):
    @define("many-keys", concurrency=Concurrency(limit=1, key=lambda input: input["k"]))
    def many_keys(ctx, input):
        return None

    for i in range(60):
        wf.start("many-keys", {"k": f"key-{i:02d}"}, id=f"a{i:02d}")
    assert len(claim("many-keys", limit=60)) == 60  # 60 keys at their limit
    for i in range(60):
        wf.start("many-keys", {"k": f"key-{i:02d}"}, id=f"b{i:02d}")  # each waits on its key
    wf.start("many-keys", {"k": "free"}, id="c00")
    assert claim("many-keys") == ["c00"]
    parked = WorkflowInstance.objects.filter(parked=True)
    assert sorted(parked.values_list("id", flat=True)) == [f"b{i:02d}" for i in range(60)]
    wf.start("many-keys", {"k": "free-too"}, id="c01")
    sent: list[int] = []

    def count(execute, sql, params, many, context):
        sent.append(len(params or ()))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(count):
        assert claim("many-keys") == ["c01"]
    assert max(sent) < 60  # the parked are out of the scan: no statement lists their keys
    release("a07")  # its key's parked instance is back
    assert list(parked.values_list("id", flat=True)) != [] and "b07" not in set(
        parked.values_list("id", flat=True)
    )
    assert claim("many-keys") == ["b07"]


def test_a_key_with_several_slots_counts_only_its_live_leases(define, workflow_clock):
    @define("two-per-key", concurrency=Concurrency(limit=2, key=lambda input: input["k"]))
    def two_per_key(ctx, input):
        return None

    for i in range(4):
        wf.start("two-per-key", {"k": "x"}, id=f"x{i}")
    wf.start("two-per-key", {"k": "y"}, id="y0")
    assert claim("two-per-key", limit=1) == ["x0"]
    assert claim("two-per-key") == ["x1", "y0"]  # one slot of x left, and y's
    assert claim("two-per-key") == []
    release("x0")
    workflow_clock.advance("1s")
    assert claim("two-per-key") == ["x2"]


def test_a_claim_under_a_key_limit_is_four_statements_on_postgresql(define, workflow_clock):
    """The workflow's lock, the keys of lapsed leases (their parked instances go back), the
    candidates' scan (each row with whether its key is full), and the lease: the limits' stages
    run in Python between them, on the candidates' rows the scan returned. A claim that passes
    over a full key's instances parks them: two statements more, once."""
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL's hand-written claim under limits")

    @define("few-statements", concurrency=Concurrency(limit=1, key=lambda input: input["k"]))
    def few_statements(ctx, input):
        return None

    for i in range(3):
        wf.start("few-statements", {"k": "same"}, id=f"a{i}")
    wf.start("few-statements", {"k": "other"}, id="b0")
    sent: list[str] = []

    def count(execute, sql, params, many, context):
        if not sql.startswith(("SAVEPOINT", "RELEASE SAVEPOINT")):  # the test's transaction
            sent.append(sql)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(count):
        assert claim("few-statements") == ["a0", "b0"]  # each key's first
    assert len(sent) == 4, sent
    sent.clear()
    with connection.execute_wrapper(count):
        assert claim("few-statements") == []  # both keys at their limit: a1 and a2 parked
    assert len(sent) == 5, sent  # lock, lapsed keys, scan, the holders' lock, park
    assert set(WorkflowInstance.objects.filter(parked=True).values_list("id", flat=True)) == {
        "a1",
        "a2",
    }
    release("a0")
    workflow_clock.advance("1s")
    assert claim("few-statements") == ["a1"]
