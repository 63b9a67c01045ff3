"""start() marks the instances it stored headers with (`has_headers`), and the claim reads the
journal of a first execution only for those: an instance started outside any span costs the
claim no journal read, on every claim path (the hand-written ones and the one under limits)."""

from __future__ import annotations

import uuid

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

import django_workflows as wf
from django_workflows import Concurrency, clock
from django_workflows.durations import parse_duration
from django_workflows.engine.registry import registry
from django_workflows.middleware import HEADERS_ENTRY
from django_workflows.models import JournalEntry, WorkflowInstance
from django_workflows.store import instances as store
from django_workflows.worker.worker import limit_rules

pytestmark = pytest.mark.django_db(transaction=True)

JOURNAL_TABLE = JournalEntry._meta.db_table


def claim(names: list[str]) -> tuple[store.Claim, list[str]]:
    """One claim as the worker makes it while a process_execution() exists, and the SQL it ran."""
    concurrency, rates = limit_rules(names)
    now = clock.now()
    with CaptureQueriesContext(connection) as queries:
        claimed = store.claim(
            "default",
            owner="test",
            token=uuid.uuid4().hex,
            now=now,
            lease_until=now + parse_duration("30s", "lease"),
            limit=10,
            workflows=registry.pairs(names),
            concurrency=concurrency,
            rates=rates,
            first_journals=True,
        )
    return claimed, [query["sql"] for query in queries.captured_queries]


@pytest.fixture(params=["plain", "limited"])
def headed(request, define):
    """A workflow, with a concurrency limit on the "limited" claim path."""
    options = {"concurrency": Concurrency(5)} if request.param == "limited" else {}
    define("otel-headed", **options)(lambda ctx, input: "done")
    return "otel-headed"


def test_a_first_execution_started_outside_any_span_costs_the_claim_no_journal_read(headed, spans):
    wf.start(headed, None, id="unheaded-1")
    wf.start(headed, None, id="unheaded-2")
    assert not WorkflowInstance.objects.filter(has_headers=True).exists()
    claimed, sql = claim([headed])
    assert sorted(i.id for i in claimed.instances) == ["unheaded-1", "unheaded-2"]
    assert not any(claimed.journals.values())
    assert [q for q in sql if JOURNAL_TABLE in q] == []


def test_a_first_execution_started_inside_a_span_has_its_headers_read_by_the_claim(
    headed, spans, tracer
):
    with tracer.start_as_current_span("POST /orders"):
        wf.start(headed, None, id="headed-1")
    wf.start(headed, None, id="unheaded-1")
    assert list(WorkflowInstance.objects.filter(has_headers=True).values_list("id", flat=True)) == [
        "headed-1"
    ]
    claimed, sql = claim([headed])
    assert sorted(i.id for i in claimed.instances) == ["headed-1", "unheaded-1"]
    assert [id for id, journal in claimed.journals.items() if journal] == ["headed-1"]
    [(name, document)] = claimed.journals["headed-1"]
    assert name == HEADERS_ENTRY and "traceparent" in document["headers"]
    assert len([q for q in sql if JOURNAL_TABLE in q]) == 1


def test_the_journal_get_status_shows_leaves_the_headers_out(headed, spans, tracer):
    with tracer.start_as_current_span("POST /orders"):
        wf.start(headed, None, id="headed-1")
    assert list(JournalEntry.objects.filter(instance_id="headed-1").values_list("name", flat=True))
    assert wf.get_status("headed-1", journal=True).journal == []
    wf.drain()
    assert wf.get_status("headed-1", journal=True).journal == []


def test_without_the_middleware_start_stores_no_headers(define):
    define("otel-plain")(lambda ctx, input: "done")
    wf.start("otel-plain", None, id="plain-1")
    assert WorkflowInstance.objects.get(pk="plain-1").has_headers is False
    assert not JournalEntry.objects.filter(instance_id="plain-1").exists()
