"""Claims under concurrency and rate limits (the store contract's `claim()` with `limits` and
`rateLimits`).

An instance holds a concurrency slot while its lease is live. A rate-limit window admits `max`
claims; it opens with the first claim after the previous one ended and closes `duration` later.
Counting and leasing are one step: the claim takes a transaction-scoped lock per workflow with
concurrency limits (in a fixed order) before it counts, and locks each window it takes room in
(an insert-or-lock of its row, in a fixed order) and counts again under that lock, so two claims
never take the last room. Candidates are taken in stages, so one busy key never holds back the
others. The due instances of a key whose every slot is taken are parked as the claim passes over
them (store/parking.py), so that the next claims do not read them again.
"""

from __future__ import annotations

import functools
import operator
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.db import connections
from django.db.models import Count, F, Q

from ..models import RateLimitWindow, Status, WorkflowInstance
from . import parking
from .backends import backend

SCAN = 20  # candidates read per slot asked for: room for the ones passed over
# Under a key's limit the scan starts at FIRST rows per slot asked for: it returns the full
# keys' instances too, which are parked, and while too few are left it runs again, GROWTH times
# larger, up to SCAN rows per slot, and up to LARGEST rows while it parks (the statements then
# carry as many ids).
FIRST = 2
GROWTH = 4
LARGEST = 10_000
LIVE = (Status.RUNNING, Status.COMPENSATING)  # the statuses of an instance with a live lease


@dataclass(frozen=True)
class ConcurrencyRule:
    """At most `limit` instances of the workflow (any version) hold a slot, and at most
    `per_key` of those with one concurrency key; None: no such limit."""

    limit: int | None = None
    per_key: int | None = None


@dataclass(frozen=True)
class Window:
    max: int
    duration: timedelta


@dataclass(frozen=True)
class RateRule:
    """At most `limit.max` claims per window of the workflow, and `per_key.max` per window of
    one rate-limit key; None: no such limit."""

    limit: Window | None = None
    per_key: Window | None = None


@dataclass(frozen=True)
class Candidate:
    id: str
    workflow: str
    concurrency_key: str | None
    rate_limit_key: str | None
    # Whether its key had every slot taken (the scan's flag under a key's limit, else None).
    full: bool | None = None


WindowId = tuple[str, str, str]  # (workflow, scope "workflow" or "key", key or "")


def pick(
    using: str,
    *,
    now: datetime,
    limit: int,
    workflows: list[tuple[str, int]],
    concurrency: dict[str, ConcurrencyRule],
    rates: dict[str, RateRule],
    queues: list[str] | None = None,
) -> list[str]:
    """Inside the claim's transaction: the ids to lease, in claim order, within every limit
    (of the instances due now in `queues`; the slots and windows count every queue's).

    Takes the concurrency locks, locks the candidates (skipping those another claim holds),
    and takes room in the rate-limit windows of the ones it returns."""
    backend(using).lock_names([f"concurrency:{name}" for name in concurrency])
    slots = _free_slots(using, now, concurrency)
    full = _full(using, now, concurrency, rates, slots)
    if full.per_key:
        if parking.unpark_lapsed_due(using, now):
            parking.unpark_lapsed(using, now, sorted(full.per_key))
    candidates = _candidates(
        using,
        now=now,
        limit=limit,
        workflows=workflows,
        full=full,
        rated=bool(rates),
        queues=queues,
    )
    if not candidates:
        return []
    key_slots = _free_key_slots(using, now, concurrency, candidates)
    room, stored = _room(using, now, rates, candidates)
    chosen = _stages(candidates, limit, concurrency, rates, slots, key_slots, room)
    if not chosen or not rates:
        return [c.id for c in chosen]
    # Lock the windows the chosen take room in, count again, and keep what still fits.
    needed = sorted({w for c in chosen for w, _ in _windows_of(c, rates)})
    room = _lock_windows(using, now, rates, needed, stored)
    kept: list[Candidate] = []
    taken: Counter[WindowId] = Counter()
    for candidate in chosen:
        windows = [w for w, _ in _windows_of(candidate, rates)]
        if all(taken[w] < room[w] for w in windows):
            kept.append(candidate)
            taken.update(windows)
    _take_room(using, now, rates, taken)
    return [c.id for c in kept]


@dataclass
class Full:
    """What has no room at all: whole workflows, keys of a workflow (by column), and the
    workflows whose concurrency keys have `per_key` slots each, of which the keys with every
    slot taken by a live lease (as of `now`) are full too: the scan's rows say which of theirs
    are (parking.full_key_sql), and those instances are parked, not filtered in the scan."""

    workflows: set[str]
    keys: dict[tuple[str, str], set[str]]  # (workflow, "concurrency_key" | "rate_limit_key")
    per_key: dict[str, int] = field(default_factory=dict)

    def sql(self) -> tuple[str, list[Any]]:
        """The candidates with room, as SQL (for the backend's candidates' scan)."""
        parts: list[str] = []
        params: list[Any] = []
        if self.workflows:
            parts.append(f"workflow NOT IN ({', '.join(['%s'] * len(self.workflows))})")
            params += sorted(self.workflows)
        for (workflow, column), keys in sorted(self.keys.items()):
            parts.append(
                f"NOT (workflow = %s AND {column} IS NOT NULL "
                f"AND {column} IN ({', '.join(['%s'] * len(keys))}))"
            )
            params += [workflow, *sorted(keys)]
        return " AND ".join(parts), params


def _full(
    using: str,
    now: datetime,
    concurrency: dict[str, ConcurrencyRule],
    rates: dict[str, RateRule],
    slots: dict[str, float],
) -> Full:
    """The workflows and keys without a free slot or room in their window: the candidates'
    scan passes over them, so a full key never fills the scan and holds back the others."""
    full = Full({w for w, free in slots.items() if free <= 0}, {})
    full.per_key = {w: r.per_key for w, r in concurrency.items() if r.per_key is not None}
    if rates:
        windows = RateLimitWindow.objects.using(using).filter(
            workflow__in=list(rates), window_end__gt=now
        )
        for workflow, scope, key, count in windows.values_list("workflow", "scope", "key", "count"):
            rule = rates[workflow]
            window = rule.limit if scope == "workflow" else rule.per_key
            if window is None or count < window.max:
                continue
            if scope == "workflow":
                full.workflows.add(workflow)
            else:
                full.keys.setdefault((workflow, "rate_limit_key"), set()).add(key)
    return full


def _candidates(
    using: str,
    *,
    now: datetime,
    limit: int,
    workflows: list[tuple[str, int]],
    full: Full,
    rated: bool,
    queues: list[str] | None = None,
) -> list[Candidate]:
    """Due instances with room for a claim of `limit`, in claim order, locked, skipping those
    another claim holds: `limit` * SCAN of them, read at once.

    Under a key's limit (and no rate limit) the scan starts at `limit` * FIRST rows, whose
    flags say which keys are full: their instances are parked and left out. While the rows left
    hold fewer than `limit` a claim may lease (a key's first `per_key`), the scan runs again,
    GROWTH times larger: up to `limit` * SCAN rows, and on up to LARGEST while each round parks
    some (the ones parked are out of its range now)."""
    if not full.per_key:
        return _scan(
            using, now=now, limit=limit * SCAN, workflows=workflows, full=full, queues=queues
        )
    size = limit * (SCAN if rated else FIRST)
    while True:
        rows = _scan(using, now=now, limit=size, workflows=workflows, full=full, queues=queues)
        passed = [c for c in rows if c.full]
        kept = [c for c in rows if not c.full]
        parked = parking.park(using, now, passed, full.per_key) if passed else 0
        if _leasable(kept, full.per_key) >= limit or len(rows) < size:
            return kept
        if parked:
            size = min(size * GROWTH, max(LARGEST, limit * SCAN))
        elif size < limit * SCAN:
            size = min(size * GROWTH, limit * SCAN)
        else:
            return kept


def _leasable(rows: list[Candidate], per_key: dict[str, int]) -> int:
    """How many of `rows` (none of a full key) a claim could lease by their concurrency keys:
    each key's first `per_key`."""
    taken: Counter[tuple[str, str]] = Counter()
    count = 0
    for c in rows:
        slots = per_key.get(c.workflow)
        if slots is not None and c.concurrency_key is not None:
            if taken[(c.workflow, c.concurrency_key)] >= slots:
                continue
            taken[(c.workflow, c.concurrency_key)] += 1
        count += 1
    return count


def _scan(
    using: str,
    *,
    now: datetime,
    limit: int,
    workflows: list[tuple[str, int]],
    full: Full,
    queues: list[str] | None = None,
) -> list[Candidate]:
    """The first `limit` due instances not filtered out by `full`, in claim order, locked,
    each with whether its key is full (under a key's limit: the flag's SQL, read with them)."""
    adapt = connections[using].ops.adapt_datetimefield_value
    flag = parking.full_key_sql(full.per_key, now, adapt) if full.per_key else None
    rows = backend(using).claim_candidates(
        now=now, limit=limit, workflows=workflows, where=full.sql(), queues=queues, flag=flag
    )
    return [Candidate(*row) for row in rows]


def _free_slots(
    using: str, now: datetime, concurrency: dict[str, ConcurrencyRule]
) -> dict[str, float]:
    """Free slots per workflow: its limit minus its live leases (counted only for a workflow
    with a limit of its own)."""
    limited = [workflow for workflow, rule in concurrency.items() if rule.limit is not None]
    held: Counter[str] = Counter()
    if limited:
        # A live lease is a running or compensating instance's (every other status comes with
        # its release): the status index then reads the few that run, not the workflow's history.
        live = (
            WorkflowInstance.objects.using(using)
            .filter(status__in=LIVE, workflow__in=limited, lease_until__gte=now)
            .values_list("workflow")
            .annotate(n=Count("id"))
        )
        held.update(dict(live.order_by()))
    return {
        workflow: float("inf") if rule.limit is None else rule.limit - held[workflow]
        for workflow, rule in concurrency.items()
    }


def _free_key_slots(
    using: str,
    now: datetime,
    concurrency: dict[str, ConcurrencyRule],
    candidates: list[Candidate],
) -> dict[tuple[str, str], float]:
    """Free slots per (workflow, concurrency key) of the candidates: the key's limit minus its
    live leases. The scan passed over the keys with none free, so a key of one slot has it free
    and needs no count; larger ones are counted, for the candidates' keys only."""
    counted = {
        (c.workflow, c.concurrency_key)
        for c in candidates
        if c.concurrency_key is not None
        and (concurrency.get(c.workflow) or ConcurrencyRule()).per_key not in (None, 1)
    }
    key_slots: dict[tuple[str, str], float] = {}
    if not counted:
        return key_slots
    match = functools.reduce(
        operator.or_,
        (
            Q(workflow=workflow, concurrency_key__in=sorted(k for w, k in counted if w == workflow))
            for workflow in sorted({w for w, _ in counted})
        ),
    )
    live = (
        WorkflowInstance.objects.using(using)
        .filter(match, status__in=LIVE, lease_until__gte=now)
        .values_list("workflow", "concurrency_key")
        .annotate(n=Count("id"))
    )
    for workflow, key, n in live.order_by():
        per_key = concurrency[workflow].per_key
        assert per_key is not None
        key_slots[(workflow, key)] = per_key - n
    return key_slots


def _windows_of(candidate: Candidate, rates: dict[str, RateRule]) -> list[tuple[WindowId, Window]]:
    rule = rates.get(candidate.workflow)
    if rule is None:
        return []
    windows = []
    if rule.limit is not None:
        windows.append(((candidate.workflow, "workflow", ""), rule.limit))
    if rule.per_key is not None and candidate.rate_limit_key is not None:
        windows.append(((candidate.workflow, "key", candidate.rate_limit_key), rule.per_key))
    return windows


def _room(
    using: str,
    now: datetime,
    rates: dict[str, RateRule],
    candidates: list[Candidate],
) -> tuple[dict[WindowId, float], set[WindowId]]:
    """Room left in each window the candidates would take room in (a window that ended is
    empty), read without a lock: pick() counts again under the windows' locks. And the windows
    whose rows this read found."""
    wanted: dict[WindowId, Window] = {}
    for candidate in candidates:
        wanted.update(_windows_of(candidate, rates))
    room: dict[WindowId, float] = {w: float(rule.max) for w, rule in wanted.items()}
    stored: set[WindowId] = set()
    if not wanted:
        return room, stored
    match = functools.reduce(operator.or_, (Q(workflow=w, scope=s, key=k) for (w, s, k) in wanted))
    rows = RateLimitWindow.objects.using(using).filter(match)
    for workflow, scope, key, window_end, count in rows.values_list(
        "workflow", "scope", "key", "window_end", "count"
    ):
        stored.add((workflow, scope, key))
        if window_end > now:
            room[(workflow, scope, key)] = wanted[(workflow, scope, key)].max - count
    return room, stored


def _lock_windows(
    using: str,
    now: datetime,
    rates: dict[str, RateRule],
    needed: list[WindowId],
    stored: set[WindowId],
) -> dict[WindowId, float]:
    """Insert-or-lock each window's row, one at a time in a fixed order (Python's, which the
    database's collation needn't share), and read its room under the lock.

    FOR UPDATE first where the unlocked read found the row, else the insert first; a row
    missing after all is inserted (a purge may delete one while this waits for its lock). The insert of a row another claim has just
    inserted leaves it locked for update, not shared: two claims upgrading a shared lock
    deadlock (see Backend.insert_or_lock)."""
    rows = RateLimitWindow.objects.using(using)
    room: dict[WindowId, float] = {}
    for workflow, scope, key in needed:
        rule = rates[workflow]
        window = rule.limit if scope == "workflow" else rule.per_key
        assert window is not None
        room[(workflow, scope, key)] = float(window.max)
        row = rows.filter(workflow=workflow, scope=scope, key=key).select_for_update()
        for attempt in range(5):
            # A row the read found: lock it. One it did not find: insert it first, since a
            # FOR UPDATE that finds no row locks the gap under MySQL's REPEATABLE READ, and
            # claims inserting into a gap they all locked deadlock.
            if attempt > 0 or (workflow, scope, key) in stored:
                found = list(row.values_list("window_end", "count"))
                if found:
                    break
            backend(using).insert_or_lock(
                RateLimitWindow(workflow=workflow, scope=scope, key=key, window_end=now, count=0),
                key_field="workflow",
            )
        else:
            raise RuntimeError(f"Rate-limit window {(workflow, scope, key)!r} could not be locked.")
        window_end, count = found[0]
        if window_end > now:
            room[(workflow, scope, key)] = window.max - count
    return room


def _take_room(
    using: str, now: datetime, rates: dict[str, RateRule], taken: Counter[WindowId]
) -> None:
    """Count the claims in their windows; a window that ended opens again, from now."""
    for (workflow, scope, key), n in sorted(taken.items()):
        rule = rates[workflow]
        window = rule.limit if scope == "workflow" else rule.per_key
        assert window is not None
        row = RateLimitWindow.objects.using(using).filter(workflow=workflow, scope=scope, key=key)
        if not row.filter(window_end__gt=now).update(count=F("count") + n):
            row.update(window_end=now + window.duration, count=n)


def _stages(
    candidates: list[Candidate],
    limit: int,
    concurrency: dict[str, ConcurrencyRule],
    rates: dict[str, RateRule],
    slots: dict[str, float],
    key_slots: dict[tuple[str, str], float],
    room: dict[WindowId, float],
) -> list[Candidate]:
    """The contract's stages, in claim order throughout."""

    def key_free(c: Candidate) -> float:
        rule = concurrency.get(c.workflow)
        if rule is None or rule.per_key is None or c.concurrency_key is None:
            return float("inf")
        return key_slots.get((c.workflow, c.concurrency_key), rule.per_key)

    # 1. pass over every candidate with no room at all
    stage = [
        c
        for c in candidates
        if slots.get(c.workflow, float("inf")) > 0
        and key_free(c) > 0
        and all(room[w] > 0 for w, _ in _windows_of(c, rates))
    ]
    # 2. each concurrency key's first, as many as it has free slots
    stage = _first(stage, lambda c: (c.workflow, c.concurrency_key), key_free)

    # 3. of those, each rate key's first, as many as its window has room for
    def key_room(c: Candidate) -> float:
        keyed = [w for w, _ in _windows_of(c, rates) if w[1] == "key"]
        return room[keyed[0]] if keyed else float("inf")

    stage = _first(stage, lambda c: (c.workflow, "rate", c.rate_limit_key), key_room)

    # 4. of those, each workflow's first, as many as its free slots and its window allow
    def workflow_room(c: Candidate) -> float:
        window = (c.workflow, "workflow", "")
        return min(slots.get(c.workflow, float("inf")), room.get(window, float("inf")))

    stage = _first(stage, lambda c: c.workflow, workflow_room)
    # 5. then the first `limit`
    return stage[:limit]


def _first(candidates: list[Candidate], group: Any, allowed: Any) -> list[Candidate]:
    """Each group's first candidates, as many as `allowed(candidate)` says, in order."""
    taken: Counter[Any] = Counter()
    kept = []
    for candidate in candidates:
        key = group(candidate)
        if taken[key] < allowed(candidate):
            kept.append(candidate)
            taken[key] += 1
    return kept
