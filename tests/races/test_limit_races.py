"""Claims under limits racing each other with real threads: never more than the limits admit."""

from __future__ import annotations

from collections import Counter

import pytest
from django.db import connection

import django_workflows as wf
from django_workflows import Concurrency, RateLimit
from django_workflows.engine.registry import registry
from tests.helpers import claim_ids, end_leases

from .conftest import race, threads_for

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def limited():
    @wf.workflow("race-capped", concurrency=Concurrency(limit=3))
    def capped(ctx, input):
        return None

    @wf.workflow("race-per-key", concurrency=Concurrency(limit=1, key=lambda i: i["k"]))
    def per_key(ctx, input):
        return None

    @wf.workflow("race-rated", rate_limit=RateLimit(max=5, duration="1h"))
    def rated(ctx, input):
        return None

    yield
    for definition in (capped, per_key, rated):
        registry.unregister(definition)


def claim_until_empty(name: str, *, release: bool) -> list[str]:
    got: list[str] = []
    for _ in range(200):
        ids = claim_ids([name], limit=2, lease="5m")
        if not ids:
            return got
        got.extend(ids)
        if release:  # quick executions that end at once: their slots free, their window room not
            end_leases(ids, wake_at=None, status="completed")
    raise AssertionError("claims never ran dry")


def test_racing_claims_never_exceed_a_concurrency_limit(limited):
    # More candidates than one claim reads (2 x SCAN), so that claims lock different ones.
    for i in range(400 if connection.vendor != "sqlite" else 60):
        wf.start("race-capped", {}, id=f"cap-{i}")
    results = race([lambda: claim_until_empty("race-capped", release=False)] * threads_for(8, 3))
    claimed = [id for r in results for id in r]
    assert len(claimed) == 3 == len(set(claimed)), claimed


def test_racing_claims_never_exceed_a_per_key_limit(limited):
    for k in range(10):
        for n in range(3 if connection.vendor == "sqlite" else 30):
            wf.start("race-per-key", {"k": f"key-{k}"}, id=f"pk-{k}-{n}")
    results = race([lambda: claim_until_empty("race-per-key", release=False)] * threads_for(8, 3))
    claimed = [id for r in results for id in r]
    keys = Counter(id.rsplit("-", 1)[0] for id in claimed)
    assert keys == {f"pk-{k}": 1 for k in range(10)}, keys


def test_racing_claims_never_exceed_a_rate_limit_window(limited):
    for i in range(400 if connection.vendor != "sqlite" else 60):
        wf.start("race-rated", {}, id=f"rate-{i}")
    results = race([lambda: claim_until_empty("race-rated", release=True)] * threads_for(8, 3))
    claimed = [id for r in results for id in r]
    assert len(claimed) == 5 == len(set(claimed)), claimed
