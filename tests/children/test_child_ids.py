"""Default child ids, `<parent id>/<workflow>#<n>`, fit the id column whatever the parent's id."""

from __future__ import annotations

import time

import pytest

import django_workflows as wf
from django_workflows.models import KEY_LENGTH, JournalEntry

pytestmark = pytest.mark.django_db

LONG_PARENT = "order-" + "x" * 224  # 230 characters: `/shipment#1` would make 241 ...
LONGER_PARENT = "order-" + "y" * 249  # ... and 255, the most an id can be, overflow


def drain_all(clock, times=4):
    for _ in range(times):
        wf.drain()
        clock.advance("1s")


@pytest.fixture
def parcels(define):
    @define("a-parcel-with-a-long-workflow-name-" + "z" * 20)
    def parcel(ctx, input):
        ctx.sleep("transit", "1h")
        return input["box"]

    return parcel.name


@pytest.mark.parametrize("parent", [LONG_PARENT, LONGER_PARENT])
def test_the_default_id_of_a_child_of_a_long_parent_id_fits_the_column(
    define, workflow_clock, parcels, parent
):
    @define("ships-two")
    def ships(ctx, input):
        handles = [ctx.start_child(parcels, {"box": box}) for box in ("A", "B")]
        return [handle.result() for handle in handles]

    wf.start("ships-two", None, id=parent)
    wf.drain()
    children = {i.input["box"]: i.id for i in wf.list_instances(parent_id=parent)}
    assert sorted(children) == ["A", "B"]
    assert all(len(id) <= KEY_LENGTH for id in children.values())
    assert children["A"] != children["B"]
    assert children["A"].startswith(parent[:100]) and children["A"].endswith("#1")
    workflow_clock.advance("1h")
    drain_all(workflow_clock)  # every replay finds the children it started
    status = wf.get_status(parent)
    assert (status.status, status.output) == ("completed", ["A", "B"]), status.error
    assert {i.id for i in wf.list_instances(parent_id=parent)} == set(children.values())
    journaled = JournalEntry.objects.filter(instance_id=parent, name__startswith="$child:")
    assert sorted(journaled.values_list("name", flat=True)) == sorted(
        f"$child:{id}" for id in children.values()
    )


def test_a_short_parent_ids_children_keep_the_documented_default_id(
    define, workflow_clock, parcels
):
    @define("ships-one")
    def ships(ctx, input):
        return ctx.execute_child(parcels, {"box": "A"})

    wf.start("ships-one", None, id="order-71e1973d")
    wf.drain()
    [child] = wf.list_instances(parent_id="order-71e1973d")
    assert child.id == f"order-71e1973d/{parcels}#1"


def test_the_derived_child_ids_of_gather_branches_find_each_branchs_own_child_on_replay(
    define, workflow_clock, parcels
):
    @define("two-parcels-long")
    def two(ctx, input):
        def first():
            time.sleep(0.3 if ctx.run == 1 else 0)  # reached last in the first run, first after
            return ctx.execute_child(parcels, {"box": "A"})

        def second():
            time.sleep(0 if ctx.run == 1 else 0.3)
            return ctx.execute_child(parcels, {"box": "B"})

        return ctx.gather(first, second)

    wf.start("two-parcels-long", None, id=LONGER_PARENT)
    wf.drain()
    first = {i.input["box"]: i.id for i in wf.list_instances(parent_id=LONGER_PARENT)}
    assert first["B"].endswith("#1") and first["A"].endswith("#2")
    workflow_clock.advance("1h")
    drain_all(workflow_clock)
    status = wf.get_status(LONGER_PARENT)
    assert (status.status, status.output) == ("completed", ["A", "B"]), status.error
    assert {i.input["box"]: i.id for i in wf.list_instances(parent_id=LONGER_PARENT)} == first
