"""What the patch tests share: a deploy of one workflow's code after another."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from django_workflows import workflow
from django_workflows.engine.registry import registry

NAME = "patched-fulfilment"


class Deploy:
    """Registers one workflow function as NAME@1 at a time, replacing the one before: a deploy."""

    def __init__(self) -> None:
        self.current: Any = None

    def __call__(self, fn: Callable[..., Any]) -> Any:
        if self.current is not None:
            registry.unregister(self.current)
        self.current = workflow(NAME)(fn)
        return self.current


@pytest.fixture
def deploy() -> Iterator[Deploy]:
    deployment = Deploy()
    yield deployment
    if deployment.current is not None:
        registry.unregister(deployment.current)
