"""Several versions of one workflow side by side."""

from __future__ import annotations

import pytest

import django_workflows as wf
from django_workflows.engine.registry import registry
from django_workflows.worker import Worker
from tests.testapp.workflows import versioned_v1

pytestmark = pytest.mark.django_db


def test_new_instances_start_on_the_highest_registered_version(workflow_clock):
    started = wf.start("versioned", None, id="new")
    assert started.version == 2
    wf.drain()
    assert wf.get_status("new").output == "v2"


def test_version_pins_an_instance_to_an_older_version(workflow_clock):
    started = wf.start("versioned", None, id="old", version=1)
    assert started.version == 1
    wf.drain()
    status = wf.get_status("old")
    assert (status.version, status.output) == (1, "v1")


def test_an_unregistered_version_is_not_found(workflow_clock):
    with pytest.raises(wf.WorkflowNotFoundError):
        wf.start("versioned", None, version=3)


def test_a_worker_only_claims_the_versions_it_has_registered(workflow_clock):
    wf.start("versioned", None, id="old", version=1)
    wf.start("versioned", None, id="new")
    registry.unregister(versioned_v1)  # a process deployed without version 1
    try:
        assert wf.drain() == 1
        assert wf.get_status("new").status == "completed"
        assert wf.get_status("old").status == "pending"
        unfinished = wf.list_instances(
            workflow="versioned",
            version=1,
            status=["pending", "running", "suspended", "compensating"],
        )
        assert [i.id for i in unfinished] == ["old"]
    finally:
        registry.register(versioned_v1)
    assert wf.drain() == 1
    assert wf.get_status("old").output == "v1"


def test_a_worker_for_some_workflows_only_claims_those(world, workflow_clock):
    wf.start("versioned", None, id="versioned")
    wf.start("wait-once", {}, id="other")
    assert Worker(workflows=["versioned"]).drain() == 1
    assert wf.get_status("versioned").status == "completed"
    assert wf.get_status("other").status == "pending"
