"""The tutorial's fulfilment tests, every one, run against the async def fulfilment
(shop/asyncworkflows.py) registered in place of the sync one, same name and version."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from django_workflows.engine.asynccontext import workflow_runner
from django_workflows.engine.registry import registry
from shop import asyncworkflows
from shop.workflows import fulfil_order

from .test_fulfilment import *  # noqa: F403 - the tutorial's scenarios, collected here again


@pytest.fixture(autouse=True)
def async_fulfilment() -> Iterator[None]:
    """order-fulfilment version 1 runs the async function for the test. The definition object
    stays the one registered (frozen: set through object.__setattr__), so its limits, timeout
    and start_on/signal_on triggers stay exactly the sync fulfilment's."""
    sync_run = fulfil_order.run
    object.__setattr__(fulfil_order, "run", workflow_runner(asyncworkflows.fulfil_order))
    try:
        yield
    finally:
        object.__setattr__(fulfil_order, "run", sync_run)


def test_the_async_fulfilment_is_the_one_that_runs() -> None:
    definition = registry.resolve("order-fulfilment")
    assert definition.run.__wrapped__ is asyncworkflows.fulfil_order
    assert definition.run.is_async
