from __future__ import annotations

import pytest

from django_workflows.events import workflow_event
from tests.testapp.workflows import hang_gates
from tests.testapp.world import world as the_world


@pytest.fixture
def world():
    """The outside world's stand-ins, fresh for each test."""
    the_world.reset()
    return the_world


@pytest.fixture
def events():
    """Every WorkflowEvent sent during the test, in order."""
    received = []

    def receiver(sender, event, **kwargs):
        received.append(event)

    workflow_event.connect(receiver, weak=False)
    yield received
    workflow_event.disconnect(receiver)


@pytest.fixture
def gates():
    for gate in hang_gates.values():
        gate.clear()
    yield hang_gates
    hang_gates["release"].set()  # never leave a step hanging
