"""Streams in the store: offsets 1, 2, ... per instance and name, the STREAMS bounds, a closed
stream, the codec, and the rows going with their instance (SPEC.md section 14)."""

from __future__ import annotations

import base64

import pytest
from django.core import management
from django.core.checks import run_checks

import django_workflows as wf
from django_workflows import clock
from django_workflows.codecs import AesGcmPayloadCodec
from django_workflows.conf import get_settings
from django_workflows.models import WorkflowStream, WorkflowStreamItem
from django_workflows.store import streams

pytestmark = pytest.mark.django_db


@pytest.fixture
def instance(define):
    @define("streams-store")
    def run(ctx, input):
        return 1

    wf.start("streams-store", id="s1")
    return "s1"


def append(id, name, *values, attempt=None):
    return streams.append("default", id, name, list(values), attempt=attempt, now=clock.now())


def test_offsets_count_from_one_per_instance_and_name(instance):
    assert append(instance, "a", 1, 2).offset == 2
    assert append(instance, "b", "x").offset == 1
    assert append(instance, "a", {"k": 3}, attempt=2).offset == 3
    items = streams.read("default", instance, "a", after=1, limit=10)
    assert [(i.offset, i.value, i.attempt) for i in items] == [(2, 2, None), (3, {"k": 3}, 2)]
    assert streams.heads("default", [instance]) == {
        instance: {"a": {"items": 3, "closed": False}, "b": {"items": 1, "closed": False}}
    }


def test_a_write_past_max_items_raises_and_writes_nothing(instance, settings):
    settings.DJANGO_WORKFLOWS = {"STREAMS": {"MAX_ITEMS": 3}}
    append(instance, "a", 1, 2)
    with pytest.raises(wf.WorkflowStreamFullError) as raised:
        append(instance, "a", 3, 4)
    assert raised.value.stream == "a"
    assert "MAX_ITEMS (3)" in str(raised.value)
    assert WorkflowStreamItem.objects.filter(name="a").count() == 2
    append(instance, "a", 3)


def test_a_write_past_max_bytes_raises(instance, settings):
    settings.DJANGO_WORKFLOWS = {"STREAMS": {"MAX_BYTES": 10}}
    append(instance, "a", "abcd")  # six bytes of JSON
    with pytest.raises(wf.WorkflowStreamFullError):
        append(instance, "a", "abcd")
    assert WorkflowStream.objects.get(name="a").bytes == 6


def test_a_closed_stream_takes_no_more_items(instance):
    append(instance, "a", 1)
    streams.close("default", instance, "a", now=clock.now())
    streams.close("default", instance, "b", now=clock.now())  # made closed, empty
    assert streams.is_closed("default", instance, "a")
    with pytest.raises(wf.WorkflowStateError, match="closed"):
        append(instance, "a", 2)
    assert streams.heads("default", [instance])[instance]["b"] == {"items": 0, "closed": True}


def test_items_are_encoded_by_the_codec(instance, settings):
    key = base64.b64encode(b"k" * 32).decode()
    settings.DJANGO_WORKFLOWS = {"CODEC": AesGcmPayloadCodec(keys={"k1": key})}
    append(instance, "a", {"card": "4242 4242"})
    stored = WorkflowStreamItem.objects.get().value
    assert "4242 4242" not in str(stored)
    assert streams.read("default", instance, "a", after=0, limit=1)[0].value == {
        "card": "4242 4242"
    }


@pytest.mark.parametrize("remove", ["delete", "purge"])
def test_stream_rows_go_with_their_instance(instance, remove):
    append(instance, "a", 1, 2)
    wf.drain()
    if remove == "delete":
        wf.delete(instance)
    else:
        wf.purge(older_than=0)
    assert not WorkflowStream.objects.exists()
    assert not WorkflowStreamItem.objects.exists()


def test_many_instances_are_deleted_with_their_streams(define):
    @define("streams-many")
    def run(ctx, input):
        return 1

    ids = [f"m{n}" for n in range(1200)]  # past MySQL's listed ids: the temporary table
    for id in ids:
        wf.start("streams-many", id=id)
    for id in ids[::100]:
        append(id, "a", 1)
    wf.drain()
    assert wf.purge(older_than=0, batch_size=2000).instances == len(ids)
    assert not WorkflowStreamItem.objects.exists()


@pytest.mark.parametrize(
    "streams_setting, message",
    [
        ({"MAX_ITEMS": 0}, "STREAMS['MAX_ITEMS'] must be a positive integer"),
        ({"MAX_BYTES": "1MB"}, "STREAMS['MAX_BYTES'] must be a positive integer"),
        ({"MAX_ROWS": 1}, "unknown keys: MAX_ROWS"),
        ([1], "STREAMS'] must be a dict"),
    ],
)
def test_a_bad_streams_setting_is_named_by_the_check(settings, streams_setting, message):
    settings.DJANGO_WORKFLOWS = {"STREAMS": streams_setting}
    problems = [p for p in run_checks() if p.id == "django_workflows.E001"]
    assert message in problems[0].msg


def test_the_default_bounds(settings):
    settings.DJANGO_WORKFLOWS = {}
    limits = get_settings().streams
    assert (limits.max_items, limits.max_bytes) == (10_000, 10_000_000)


def test_the_migrations_are_complete():
    management.call_command("makemigrations", "django_workflows", "--check", "--dry-run")


@pytest.mark.django_db(transaction=True)
def test_concurrent_appends_take_every_offset_once(define):
    import threading

    from django.db import connections

    @define("streams-concurrent")
    def run(ctx, input):
        return 1

    wf.start("streams-concurrent", id="cc")
    failures = []

    def writer(n):
        try:
            for i in range(25):
                streams.append("default", "cc", "s", [f"{n}-{i}"], attempt=n, now=clock.now())
        except Exception as error:  # reported below
            failures.append(error)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    read = streams.read("default", "cc", "s", after=0, limit=1000)
    assert [i.offset for i in read] == list(range(1, 101))
    assert sorted(i.value for i in read) == sorted(f"{n}-{i}" for n in range(4) for i in range(25))
    assert WorkflowStream.objects.get().items == 100
