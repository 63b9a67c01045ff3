"""django-absurd: a Django task of three trivial steps of Absurd's workflow context."""

from __future__ import annotations

from typing import Any

from django.tasks import task
from django_absurd import get_absurd_context


@task
def bench_three() -> dict[str, Any]:
    context = get_absurd_context()
    last: dict[str, Any] = {}
    for i in range(3):
        last = context.step(f"step-{i}", lambda i=i: {"i": i, "ok": True})
    return {"steps": 3, "last": last}
