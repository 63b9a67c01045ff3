"""An execution's lease (`x.lease`) and its writes: the fenced, buffered write, the store calls
made on the execution's own thread, and the signals it read.

The execution holds the lease; every write goes through `write()`, fenced by the lease token.
Writes are buffered: a step's result and the next step's start share one transaction.

While the journal is untouched (Replay.untouched), the claim count stands in for the first
step's start. The first step of an execution that has written nothing since a recent claim
starts without a write of its own (its start rides with the next write), unless it is the
step's last attempt. Each claim before this one counts as an attempt of that step that stopped
with its worker (stopped_before_writing; steps.py stops counting at the last attempt): an
execution ends with a write unless it crashed, was killed or lost its lease, and a release that
leaves the journal untouched takes its claim back.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from django.db import connections

from .. import clock
from ..errors import WorkflowPayloadError
from ..models import UNFINISHED
from ..store import instances as store
from ..store.backends import backend
from ..store.jsonvalues import to_json
from ..store.signals import recorded_before, signals_for
from .faults import call_store
from .guards import Guards
from .interrupts import LeaseLost, Unreadable
from .replay import Replay
from .stops import Stops
from .threads import OwnerCalls

UNSET: Any = object()
"""Lease.desired_status until ctx.set_status() is called (status.py)."""


class Lease:
    """The lease of one execution (execution.Execution), its writes of the journal's buffered
    entries (replay.Replay) and its other store calls, which stop it (stops.Stops) when the
    lease is lost or the database keeps failing."""

    def __init__(
        self,
        guards: Guards,
        replay: Replay,
        stops: Stops,
        *,
        token: str,
        last_signal_id: int,
        lease_duration: timedelta,
    ):
        self.guards = guards
        self.journal = replay
        self.stops = stops
        self.instance = instance = guards.instance
        self.using = guards.using
        self.lock = guards.lock
        self.token = token
        self.last_signal_id = last_signal_id
        self.lease_duration = lease_duration
        self.custom_status = instance.custom_status  # as written; status.py sets the desired one
        self.desired_status: Any = UNSET
        self.calls = OwnerCalls(guards.owner)
        self.written = False  # whether the execution wrote since its claim
        self._signals: dict[tuple[str, str | None], list[Any]] = {}
        self._lease_extended: datetime | None = clock.now()  # the claim just set the lease
        # When the lease runs out, as far as this process knows (time.monotonic()): the claim,
        # a write that extends it and the worker's renewals push it on.
        self.lease_deadline = time.monotonic() + lease_duration.total_seconds()
        # The worker's claim to ride on the release (store.Ride), and what it leased: the
        # worker runs that instance next on this thread, without a claim of its own.
        self.ride: store.Ride | None = None
        self.rode: store.Claim | None = None

    # -- the first step's start -------------------------------------------------------------

    def untouched(self) -> bool:
        """Whether the instance's first run has journaled nothing (Replay.untouched): a run
        after ctx.continue_as_new() starts a new journal, but its claims are counted on."""
        return self.instance.generation == 0 and self.journal.untouched()

    def stopped_before_writing(self) -> int:
        """How many executions before this one stopped before their first write: with an
        untouched journal, every claim but this one's; else 0."""
        return max(self.instance.runs - 1, 0) if self.untouched() else 0

    def defers_start(self) -> bool:
        """Whether the first step may start without a write of its own: the journal is
        untouched, nothing was written since the claim, and the claim is recent (two thirds of
        its lease left), so the lease holds and the claim's read of the cancel flags is as good
        as the write's would be."""
        lease_until = self.instance.lease_until
        return (
            not self.written
            and lease_until is not None
            and lease_until - self.guards.now() > self.lease_duration * 2 / 3
            and self.untouched()
        )

    # -- the lease and the database, always from the execution's own thread ----------------

    def lease_renewed(self, started: float) -> None:
        """A renewal that started at `started` (time.monotonic()) extended the lease."""
        self.lease_deadline = max(
            self.lease_deadline, started + self.lease_duration.total_seconds()
        )

    def store_call(self, fn: Callable[[], Any], what: str) -> Any:
        """A store call on the execution's thread, run again after a database fault
        (faults.call_store): never the workflow's error."""
        return self.calls.run(lambda: call_store(self, fn, what))

    def to_json(self, value: Any, what: str) -> Any:
        """`value` in its JSON form, checked to be storable here (store.values.to_json); the
        size check's read of the server's limits is a store call like any other."""
        return self.store_call(lambda: to_json(value, what, using=self.using), "a size check")

    def checkpoint(self, entry_name: str, progress: Any) -> None:
        """A step's heartbeat: its entry's `progress`, written now."""
        with self.lock:
            doc = {**self.journal.entries[entry_name], "progress": progress}
            self.journal.entries[entry_name] = doc
            self.journal.pending[entry_name] = doc
        self.write()

    def write(
        self,
        *,
        changes: dict[str, Any] | None = None,
        release: store.Release | None = None,
        guarded: dict[str, dict[str, Any]] | None = None,
        signal: dict[str, Any] | None = None,
        announce: bool = False,
        restart: bool = False,
        attributes: dict[str, Any] | None = None,
    ) -> store.LeaseFlags:
        """Write the buffered entries with `changes`, and `release` the instance or record a
        child's end `signal`, fenced by the lease token; LeaseLost when the lease is gone.
        `announce`: wake get_value() waiting in other processes at the commit. `restart`:
        delete the journal first (ctx.continue_as_new()). `attributes`: search attributes to
        set or (None) remove (ctx.set_attributes())."""
        return self.calls.run(
            lambda: self._write(
                changes or {}, release, guarded or {}, signal, announce, restart, attributes
            )
        )

    def write_with(self, rows: Callable[[], Any], record: Callable[[Any], Any]) -> None:
        """`rows()`, then write() of the buffered entries with what `record(rows())` adds to
        them, in one transaction on the execution's thread, fenced by the lease token: both
        commit or neither (LeaseLost when the lease is gone). What `rows()` raises is the
        caller's, and writes nothing."""

        def both() -> store.LeaseFlags:
            with backend(self.using).write_transaction():
                record(rows())
                return self._write({}, None, {})

        self.calls.run(lambda: call_store(self, both, "a stream's write"))

    def write_here(self) -> store.LeaseFlags:
        """write() of the buffered entries on this thread's connection, not the execution's:
        inside an atomic step's transaction, wherever the step runs (a gather branch too)."""
        return self._write({}, None, {})

    def _write(
        self,
        changes: dict[str, Any],
        release: store.Release | None,
        guarded: dict[str, dict[str, Any]],
        signal: dict[str, Any] | None = None,
        announce: bool = False,
        restart: bool = False,
        attributes: dict[str, Any] | None = None,
    ) -> store.LeaseFlags:
        self.written = True
        if (
            release is not None
            and not release.waits
            and not restart
            and changes.get("status") in UNFINISHED
            and "runs" not in changes
            and self.untouched()
        ):
            # Nothing ran that the next execution must count (stopped_before_writing).
            changes["runs"] = max(self.instance.runs - 1, 0)
        with self.lock:
            replay = self.journal
            entries, replay.pending = replay.pending, {}
            status_changed = (
                self.desired_status is not UNSET and self.desired_status != self.custom_status
            )
            if status_changed:
                changes["custom_status"] = self.desired_status
            if replay.warn_journal:
                changes["journal_warned"] = True
                replay.warn_journal = False
        now = self.guards.now()
        # Extend the lease with the write only once a third of it has passed: a worker's
        # renewer keeps it alive anyway, and most writes then touch the journal alone.
        extend = (
            self._lease_extended is None or now - self._lease_extended >= self.lease_duration / 3
        )
        if extend:
            self._lease_extended = now
        write = store.InstanceWrite(
            now=now,
            entries=entries,
            guarded_entries=guarded,
            changes=changes,
            lease_until=now + self.lease_duration if extend else None,
            release=release,
            signal=signal,
            announce=announce,
            restart=restart,
            attributes=attributes,
            unpark=store.parked_by(self.instance),
        )
        # A claim rides on the release of an execution that is not stopping, outside a
        # transaction of the caller's (whose commit the lease would wait for).
        ride = (
            self.ride
            if release is not None
            and self.stops.stop_reason is None
            and not connections[self.using].in_atomic_block
            else None
        )
        started = time.monotonic()
        flags = call_store(
            self,
            lambda: store.write(self.using, self.instance.id, self.token, write, ride),
            "a write",
        )
        if flags is not None and extend:
            self.lease_renewed(started)
        if flags is None:
            self.stops.stop_reason = "lease-lost"
            raise LeaseLost()
        if ride is not None:
            self.ride, self.rode = None, flags.rode
        self.stops.flags = flags
        if status_changed:
            self.custom_status = changes["custom_status"]
            self.guards.emit("custom-status", status=self.custom_status)
        return flags

    def signals(self, name: str, key: str | None) -> list[Any]:
        """The signals `name` with `key` this execution may see, read once per execution;
        Unreadable when the codec cannot read one."""
        with self.lock:
            cached = self._signals.get((name, key))
        if cached is None:
            try:
                cached = self.store_call(
                    lambda: signals_for(
                        self.using,
                        name=name,
                        key=key,
                        after_id=self.instance.signal_cursor,
                        up_to_id=self.last_signal_id,
                    ),
                    "a read of signals",
                )
            except WorkflowPayloadError as error:
                raise Unreadable(error) from error
            with self.lock:
                self._signals[(name, key)] = cached
        return cached

    def signals_recorded_before(
        self, waits: list[tuple[str, str | None]], deadline: datetime
    ) -> list[Any]:
        """The signals for `waits` newer than this execution's claim and recorded by
        `deadline`, read now (store.signals.recorded_before); Unreadable when the codec cannot
        read one."""
        try:
            return self.store_call(  # type: ignore[no-any-return]
                lambda: recorded_before(
                    self.using, waits=waits, after_id=self.last_signal_id, deadline=deadline
                ),
                "a read of signals",
            )
        except WorkflowPayloadError as error:
            raise Unreadable(error) from error
