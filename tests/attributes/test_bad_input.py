"""Bad tags and attributes: a clear TypeError or ValueError before anything is written, the
caller's transaction still usable (on PostgreSQL a failed statement would abort it); bad
list_instances() conditions and static tags too."""

from __future__ import annotations

from datetime import datetime

import pytest
from django.db import transaction

import django_workflows as wf
from django_workflows.models import InstanceAttribute, InstanceTag, WorkflowInstance

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def plain(define):
    @define("bad-tags", tags=[f"s{n}" for n in range(15)])
    def run(ctx, input):
        return 1

    return run


BAD_STARTS = [
    ({"tags": "express"}, TypeError, "tags must be a list of strings"),
    ({"tags": [1]}, TypeError, "must be a string, not int"),
    ({"tags": [""]}, ValueError, "empty string"),
    ({"tags": ["x" * 101]}, ValueError, "the most a tag can be is 100"),
    ({"tags": ["a\x00b"]}, ValueError, "NUL"),
    ({"tags": [f"t{n}" for n in range(6)]}, ValueError, "21 tags"),
    ({"attributes": ["a"]}, TypeError, "attributes must be a dict"),
    ({"attributes": {"items": [1, 2]}}, TypeError, "'items' is a list"),
    ({"attributes": {"meta": {"a": 1}}}, TypeError, "'meta' is a dict"),
    ({"attributes": {"at": datetime(2026, 1, 1)}}, ValueError, "naive datetime"),
    ({"attributes": {"x": float("nan")}}, ValueError, "must be finite"),
    ({"attributes": {"x": float("inf")}}, ValueError, "must be finite"),
    ({"attributes": {"x": 2**53 + 1}}, ValueError, "beyond ±2**53"),
    ({"attributes": {"x": None}}, TypeError, "is None"),
    ({"attributes": {"1st": 1}}, ValueError, "identifier-like"),
    ({"attributes": {"a-b": 1}}, ValueError, "identifier-like"),
    ({"attributes": {"a__b": 1}}, ValueError, "double underscore"),
    ({"attributes": {"é": 1}}, ValueError, "identifier-like"),
    ({"attributes": {1: 1}}, TypeError, "must be a string, not int"),
    ({"attributes": {"n" * 101: 1}}, ValueError, "the most it can be is 100"),
    ({"attributes": {"t": "x" * 256}}, ValueError, "the most a text attribute can be is 255"),
    ({"attributes": {"t": "a\x00"}}, ValueError, "NUL"),
    ({"attributes": {f"a{n}": n for n in range(51)}}, ValueError, "at most 50"),
]


@pytest.mark.parametrize(("options", "error", "message"), BAD_STARTS)
def test_a_bad_start_is_refused_before_anything_is_written(plain, options, error, message):
    with transaction.atomic():
        with pytest.raises(error, match=message.replace("*", r"\*").replace("(", r"\(")):
            wf.start("bad-tags", id="refused", **options)
        # The transaction still works: nothing failed in the database.
        wf.start("bad-tags", id="after")
    assert not WorkflowInstance.objects.filter(id="refused").exists()
    assert WorkflowInstance.objects.filter(id="after").exists()
    assert not InstanceTag.objects.filter(instance_id="refused").exists()
    assert not InstanceAttribute.objects.filter(instance_id="refused").exists()


def test_an_int_at_two_to_the_53_is_kept_exactly(plain):
    wf.start("bad-tags", id="big", attributes={"big": 2**53, "small": -(2**53)})
    assert wf.get_status("big").attributes == {"big": 2**53, "small": -(2**53)}


@pytest.mark.parametrize(
    ("tags", "error"),
    [
        ("x", TypeError),
        ([None], TypeError),
        (["ok", ""], ValueError),
        ([f"t{n}" for n in range(21)], ValueError),
    ],
)
def test_bad_static_tags_are_refused_at_the_definition(define, tags, error):
    with pytest.raises(error, match="Workflow 'bad-static'"):

        @define("bad-static", tags=tags)
        def run(ctx, input):
            return 1


BAD_QUERIES = [
    ({"attributes": ["a"]}, TypeError, "attributes must be a dict"),
    ({"attributes": {"amount__like": 1}}, ValueError, "lookup 'like'"),
    ({"attributes": {"x__y__gte": 1}}, ValueError, "double underscore"),
    ({"attributes": {"amount__gte": [1]}}, TypeError, "is a list"),
    ({"attributes": {"amount__in": 1}}, TypeError, "takes a list"),
    ({"attributes": {"amount__in": [1, "a"]}}, TypeError, "mixes values"),
    ({"attributes": {"amount__in": [1, True]}}, TypeError, "mixes values"),
    ({"attributes": {"vip__gt": True}}, TypeError, "orders a bool"),
    ({"attributes": {"vip__isnull": 1}}, TypeError, "True or False"),
    ({"attributes": {"at__lt": datetime(2026, 1, 1)}}, ValueError, "naive datetime"),
    ({"attributes": {"x": None}}, TypeError, "isnull"),
    ({"attributes": {"x": float("nan")}}, ValueError, "finite"),
    ({"attributes": {"t": "a\x00"}}, ValueError, "NUL"),
    ({"tag": 1}, TypeError, "tag must be a string"),
    ({"tag": "a\x00"}, ValueError, "NUL"),
]


@pytest.mark.parametrize(("options", "error", "message"), BAD_QUERIES)
def test_a_bad_list_instances_condition_is_refused_before_any_query(plain, options, error, message):
    with transaction.atomic():
        with pytest.raises(error, match=message):
            wf.list_instances(**options)
        assert wf.list_instances(workflow="bad-tags") == []  # the transaction still works
