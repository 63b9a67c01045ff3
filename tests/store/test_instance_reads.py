"""An instance read by one hand-written SELECT, the same as the ORM reads it: alone
(get_instance()), with one journal entry of it (get_instance_and_entry(), a task's
get_result()), with which related tables hold its rows (get_instance_and_related(),
get_status())."""

from __future__ import annotations

import base64

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

import django_workflows as wf
from django_workflows.codecs import AesGcmPayloadCodec
from django_workflows.models import JournalEntry, WorkflowInstance
from django_workflows.store import instances as store
from django_workflows.store import payloads
from django_workflows.store.backends import backend

pytestmark = pytest.mark.django_db

RESULT = {"été": ["😀", 1.5, None, True], "nested": {"quote": 'say "hi"', "back": "\\"}}


@pytest.fixture
def steps(define):
    @define("reads-back")
    def run(ctx, input):
        return ctx.step("charge", lambda step: RESULT)

    return run


def fields(instance: WorkflowInstance) -> dict:
    return {f.attname: getattr(instance, f.attname) for f in WorkflowInstance._meta.concrete_fields}


def test_an_unknown_id_reads_nothing():
    assert store.get_instance_and_entry("default", "no-such-id", "charge") is None


def test_the_instance_and_its_entry_are_read_in_one_query_as_the_orm_reads_them(steps):
    wf.start("reads-back", {"order": "A-1", "note": "naïve"}, id="rb-1", tags=["vip"])
    wf.drain()
    with CaptureQueriesContext(connection) as queries:
        row, entry = store.get_instance_and_entry("default", "rb-1", "charge")
    assert len(queries.captured_queries) == 1
    assert row.status == "completed"
    assert row.input == {"order": "A-1", "note": "naïve"}
    assert row.output == RESULT
    # the ORM's row decoded as get_instance_and_entry() decodes (a CODEC run seals payloads)
    assert fields(row) == fields(payloads.decode_instance(WorkflowInstance.objects.get(pk="rb-1")))
    assert entry == dict(store.load_journal("default", "rb-1"))["charge"]
    assert entry["result"] == RESULT


def test_an_entry_not_written_yet_reads_none(steps):
    wf.start("reads-back", id="rb-2")
    row, entry = store.get_instance_and_entry("default", "rb-2", "charge")
    assert (row.id, row.status, entry) == ("rb-2", "pending", None)
    wf.drain()
    _, other = store.get_instance_and_entry("default", "rb-2", "another step")
    assert other is None


def test_another_instances_entry_is_not_read(steps):
    wf.start("reads-back", id="rb-3")
    wf.drain()
    wf.start("reads-back", id="rb-4")
    row, entry = store.get_instance_and_entry("default", "rb-4", "charge")
    assert (row.id, entry) == ("rb-4", None)


def test_payloads_a_codec_sealed_are_read_decoded(steps, settings):
    key = base64.b64encode(b"K" * 32).decode()
    settings.DJANGO_WORKFLOWS = {"CODEC": AesGcmPayloadCodec(keys={"2026-12": key})}
    wf.start("reads-back", {"card": "4242 4242 4242 4242"}, id="rb-5")
    wf.drain()
    stored = JournalEntry.objects.get(instance_id="rb-5", name="charge").document
    assert "nested" not in str(stored)  # sealed as stored
    row, entry = store.get_instance_and_entry("default", "rb-5", "charge")
    assert row.input == {"card": "4242 4242 4242 4242"}
    assert row.output == RESULT
    assert entry["result"] == RESULT


def test_get_instance_reads_the_row_as_the_orm_does(steps):
    wf.start("reads-back", {"note": "naïve"}, id="rb-6", tags=["vip"])
    wf.drain()
    row = store.get_instance("default", "rb-6")
    assert fields(row) == fields(WorkflowInstance.objects.get(pk="rb-6"))
    assert row._state.db == "default" and not row._state.adding
    assert store.get_instance("default", "rb-unknown") is None


@pytest.fixture
def everything(define):
    @define("has-everything")
    def run(ctx, input):
        ctx.set_value("stage", "waiting")
        ctx.stream("progress").write(1)
        ctx.wait_for_signal("go", "go", key=ctx.instance_id)

    return run


def test_the_related_tables_with_rows_are_named(everything, steps):
    wf.start("reads-back", id="plain")
    wf.drain()
    assert store.get_instance_and_related("default", "plain")[1] == set()
    wf.start("has-everything", id="full", tags=["vip"], attributes={"total": 2499})
    wf.drain()
    row, related = store.get_instance_and_related("default", "full")
    assert row.status == "suspended"
    assert related == {"waits", "values", "tags", "attributes", "streams"}
    wf.start("reads-back", id="tagged", tags=["vip"])
    assert store.get_instance_and_related("default", "tagged")[1] == {"tags"}
    assert store.get_instance_and_related("default", "nobody") is None


def test_get_status_reads_only_the_tables_that_hold_rows(everything, steps):
    wf.start("reads-back", id="plain-2")
    wf.drain()
    with CaptureQueriesContext(connection) as queries:
        plain = wf.get_status("plain-2")
    assert len(queries.captured_queries) == 1
    assert (plain.waits, plain.values, plain.tags, plain.attributes, plain.streams) == (
        [],
        {},
        [],
        {},
        {},
    )
    wf.start("has-everything", id="full-2", tags=["vip", "eu"], attributes={"total": 2499})
    wf.drain()
    with CaptureQueriesContext(connection) as queries:
        full = wf.get_status("full-2")
    assert len(queries.captured_queries) == 6
    assert [(w.signal, w.key) for w in full.waits] == [("go", "full-2")]
    assert full.values == {"stage": "waiting"}
    assert full.tags == ["eu", "vip"] and full.attributes == {"total": 2499}
    assert full.streams == {"progress": {"items": 1, "closed": False}}


def test_a_cancels_status_shows_what_get_status_shows(everything):
    wf.start("has-everything", id="full-3", tags=["vip"], attributes={"total": 2499})
    wf.drain()
    result = wf.cancel("full-3", "the customer asked")
    assert result.accepted
    assert result.instance == wf.get_status("full-3")
    assert result.instance.cancel_requested
    assert result.instance.streams == {"progress": {"items": 1, "closed": False}}
    assert result.instance.values == {"stage": "waiting"} and result.instance.tags == ["vip"]


def test_get_status_of_an_unknown_id_is_one_query_whatever_it_asks():
    with CaptureQueriesContext(connection) as queries:
        assert wf.get_status("nobody", journal=True, children=True) is None
    assert len(queries.captured_queries) == 1


def test_get_status_reads_the_row_before_the_journal_and_children(steps):
    wf.start("reads-back", id="rb-6")
    wf.drain()
    with CaptureQueriesContext(connection) as queries:
        status = wf.get_status("rb-6", journal=True, children=True)
    first = queries.captured_queries[0]["sql"]
    assert WorkflowInstance._meta.db_table in first and "EXISTS" in first
    assert [(entry.name, entry.status) for entry in status.journal] == [("charge", "completed")]
    assert status.children == []


def test_a_value_prefix_with_a_like_wildcard_is_refused():
    with pytest.raises(ValueError, match="without escaping"):
        backend("default").rows.with_related("rb-1", "$value_")


def test_list_instances_reads_only_the_tables_that_hold_rows_of_its_page(everything, steps):
    for n in range(3):
        wf.start("reads-back", id=f"list-plain-{n}", queue="listed")
    wf.drain()
    with CaptureQueriesContext(connection) as queries:
        plain = wf.list_instances(queue="listed")
    # the page, then which related tables hold rows of its instances: none
    assert len(queries.captured_queries) == 2
    assert [s.id for s in plain] == ["list-plain-0", "list-plain-1", "list-plain-2"]
    assert all(
        (s.waits, s.values, s.tags, s.attributes, s.streams) == ([], {}, [], {}, {}) for s in plain
    )
    wf.start("reads-back", id="list-tagged", queue="listed", tags=["vip"])
    with CaptureQueriesContext(connection) as queries:
        mixed = wf.list_instances(queue="listed")
    assert len(queries.captured_queries) == 3  # and the tags of its tagged instance
    assert [s.tags for s in mixed] == [[], [], [], ["vip"]]
    wf.start("has-everything", id="list-full", queue="listed", tags=["eu"], attributes={"total": 7})
    wf.drain()
    with CaptureQueriesContext(connection) as queries:
        page = wf.list_instances(queue="listed")
    assert len(queries.captured_queries) == 7
    assert page[-2:] == [wf.get_status("list-tagged"), wf.get_status("list-full")]
    full = page[-1]
    assert [(w.signal, w.key) for w in full.waits] == [("go", "list-full")]
    assert full.values == {"stage": "waiting"} and full.streams["progress"]["items"] == 1
    assert full.tags == ["eu"] and full.attributes == {"total": 7}


def test_list_instances_filtered_by_attributes_reads_only_the_tables_that_hold_rows(everything):
    wf.start("has-everything", id="list-attr-1", tags=["eu"], attributes={"total": 7})
    wf.start("has-everything", id="list-attr-2", attributes={"total": 9})
    wf.drain()
    with CaptureQueriesContext(connection) as queries:
        found = wf.list_instances(attributes={"total__gte": 8})
    assert [s.id for s in found] == ["list-attr-2"]
    assert found == [wf.get_status("list-attr-2")]
    # the page's ids, its instances, which tables hold their rows, then its waits, values,
    # attributes and streams: not its tags, of which it has none
    assert len(queries.captured_queries) == 7
