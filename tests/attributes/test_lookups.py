"""list_instances(attributes=...): every lookup on every type, on each database; an int and a
float compare as numbers, a bool only with bools; and the ORM filters through the related
names, as docs/reference/api.md describes them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

import django_workflows as wf
from django_workflows.models import WorkflowInstance

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)

ROWS = {
    "i1": {"tier": "basic", "amount": 10, "vip": False, "placed": T0},
    "i2": {"tier": "pro", "amount": 1000, "vip": True, "placed": T0 + timedelta(hours=1)},
    "i3": {"tier": "team", "amount": 1500.5, "vip": True, "placed": T0 + timedelta(days=1)},
    "i4": {"tier": "pro", "amount": -3, "placed": T0 - timedelta(microseconds=1)},
    "i5": {},
}


@pytest.fixture
def stored(define):
    @define("searchable")
    def run(ctx, input):
        return 1

    for id, attributes in ROWS.items():
        wf.start("searchable", id=id, attributes=attributes)


def found(**conditions) -> list[str]:
    return [s.id for s in wf.list_instances(workflow="searchable", attributes=conditions)]


@pytest.mark.parametrize(
    ("conditions", "ids"),
    [
        # str
        ({"tier": "pro"}, ["i2", "i4"]),
        ({"tier__exact": "team"}, ["i3"]),
        ({"tier__gt": "pro"}, ["i3"]),
        ({"tier__gte": "pro"}, ["i2", "i3", "i4"]),
        ({"tier__lt": "pro"}, ["i1"]),
        ({"tier__lte": "pro"}, ["i1", "i2", "i4"]),
        ({"tier__in": ["basic", "team"]}, ["i1", "i3"]),
        ({"tier": "PRO"}, []),  # exact, also on MySQL and MariaDB
        ({"tier": "pro "}, []),
        # numbers: ints and floats together
        ({"amount": 1000}, ["i2"]),
        ({"amount": 1000.0}, ["i2"]),
        ({"amount": 1500.5}, ["i3"]),
        ({"amount__gt": 1000}, ["i3"]),
        ({"amount__gte": 1000}, ["i2", "i3"]),
        ({"amount__lt": 10}, ["i4"]),
        ({"amount__lte": 10.0}, ["i1", "i4"]),
        ({"amount__in": [10, 1500.5]}, ["i1", "i3"]),
        ({"amount__gte": 0, "amount__lt": 1001}, ["i1", "i2"]),
        # bools: not numbers
        ({"vip": True}, ["i2", "i3"]),
        ({"vip": False}, ["i1"]),
        ({"vip__in": [True, False]}, ["i1", "i2", "i3"]),
        ({"amount": 1, "vip": True}, []),
        # datetimes
        ({"placed": T0}, ["i1"]),
        ({"placed": T0.astimezone(__import__("zoneinfo").ZoneInfo("Europe/Paris"))}, ["i1"]),
        ({"placed__gt": T0}, ["i2", "i3"]),
        ({"placed__gte": T0}, ["i1", "i2", "i3"]),
        ({"placed__lt": T0}, ["i4"]),
        ({"placed__lte": T0 + timedelta(hours=1)}, ["i1", "i2", "i4"]),
        ({"placed__in": [T0, T0 + timedelta(days=1)]}, ["i1", "i3"]),
        # isnull, and conditions together
        ({"vip__isnull": True}, ["i4", "i5"]),
        ({"vip__isnull": False}, ["i1", "i2", "i3"]),
        ({"tier": "pro", "vip": True}, ["i2"]),
        ({"tier__in": []}, []),
        ({"nothing": "x"}, []),
    ],
)
def test_each_lookup_on_each_type(stored, conditions, ids):
    assert found(**conditions) == ids


def test_a_number_does_not_match_a_string_that_spells_it(define):
    @define("searchable")
    def run(ctx, input):
        return 1

    wf.start("searchable", id="s", attributes={"code": "10"})
    wf.start("searchable", id="n", attributes={"code": 10})
    assert found(code="10") == ["s"]
    assert found(code=10) == ["n"]
    assert found(code__gte=0) == ["n"]


def test_attributes_combine_with_the_other_filters_and_the_page(stored):
    assert [s.id for s in wf.list_instances(attributes={"amount__gte": 0}, limit=2)] == ["i1", "i2"]
    assert [s.id for s in wf.list_instances(attributes={"amount__gte": 0}, limit=2, offset=2)] == [
        "i3"
    ]
    assert wf.list_instances(workflow="other", attributes={"amount__gte": 0}) == []


def test_the_orm_filters_through_the_related_names(stored):
    rows = WorkflowInstance.objects.filter(
        attributes__name="amount",
        attributes__number__gte=1000,
        attributes__kind__in=["int", "float"],
    )
    assert sorted(rows.values_list("id", flat=True)) == ["i2", "i3"]
    wf.start("searchable", id="t1", tags=["express"])
    assert list(
        WorkflowInstance.objects.filter(tags__tag="express").values_list("id", flat=True)
    ) == ["t1"]
