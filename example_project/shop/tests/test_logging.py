"""The worker's log, as the README and the tutorial describe it: each step as it completes."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

import django_workflows
from shop.workflows import fulfilment_id


class Recorder(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.NOTSET)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(f"{record.levelname} {record.getMessage()}")


@pytest.fixture
def log() -> Iterator[list[str]]:
    """What the django_workflows logger lets through at the level the shop's LOGGING sets."""
    recorder = Recorder()
    logger = logging.getLogger("django_workflows")
    logger.addHandler(recorder)
    try:
        yield recorder.lines
    finally:
        logger.removeHandler(recorder)


def test_the_log_shows_each_step_of_an_order(place, log) -> None:
    order = place()
    django_workflows.drain()
    id = fulfilment_id(order.id)
    started = [line for line in log if line.startswith(f"INFO workflow-started {id} ")]
    steps = [line.split()[1:3] for line in log if line.split()[1] == "step-completed"]
    assert started and steps == [["step-completed", id], ["step-completed", id]]
    assert "step='charge-payment'" in next(line for line in log if "step-completed" in line)
    assert any(line.startswith(f"DEBUG workflow-suspended {id} ") for line in log)
