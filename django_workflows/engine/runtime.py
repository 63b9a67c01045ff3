"""An execution's lease and its writes: the fenced, buffered write, the store calls made on
the execution's own thread, and the signals it read.

The execution holds the lease; every write goes through `write()`, fenced by the lease token.
Writes are buffered: a step's result and the next step's start share one transaction.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from django.db import connections

from .. import clock
from ..definitions import Workflow
from ..errors import WorkflowPayloadError
from ..models import WorkflowInstance
from ..store import instances as store
from ..store.signals import recorded_before, signals_for
from ..store.values import to_json
from .faults import call_store
from .interrupts import LeaseLost, Unreadable
from .registry import registry
from .status import UNSET
from .stops import Stops
from .threads import OwnerCalls

if TYPE_CHECKING:
    from .surface import Compensation


class Runtime(Stops):
    """The state of one execution and the operations behind `ctx` (see execution.Execution):
    its journal (replay.Replay), when it stops (stops.Stops), its lease and writes (here)."""

    def __init__(
        self,
        instance: WorkflowInstance,
        definition: Workflow,
        *,
        using: str,
        token: str,
        last_signal_id: int,
        lease_duration: timedelta,
        journal_entries: list[tuple[str, dict[str, Any]]] | None = None,
    ):
        if journal_entries is None:  # a first execution has none; a claim reads the others'
            journal_entries = [] if instance.runs <= 1 else store.load_journal(using, instance.id)
        super().__init__(instance, definition, using=using, journal_entries=journal_entries)
        self.token = token
        self.last_signal_id = last_signal_id
        self.lease_duration = lease_duration
        self.compensations: list[Compensation] = []  # see compensations.py
        self.custom_status = instance.custom_status  # as written; status.py sets the desired one
        self.desired_status: Any = UNSET
        self.calls = OwnerCalls(self.owner)
        self._signals: dict[tuple[str, str | None], list[Any]] = {}
        self._lease_extended: datetime | None = clock.now()  # the claim just set the lease
        # When the lease runs out, as far as this process knows (time.monotonic()): the claim,
        # a write that extends it and the worker's renewals push it on.
        self.lease_deadline = time.monotonic() + lease_duration.total_seconds()
        # The worker's claim to ride on the release (store.Ride), and what it leased: the
        # worker runs that instance next on this thread, without a claim of its own.
        self.ride: store.Ride | None = None
        self.rode: store.Claim | None = None

    # -- the lease and the database, always from the execution's own thread ----------------

    def lease_renewed(self, started: float) -> None:
        """A renewal that started at `started` (time.monotonic()) extended the lease."""
        self.lease_deadline = max(
            self.lease_deadline, started + self.lease_duration.total_seconds()
        )

    def resolve(self, workflow: Any, version: int | None) -> Workflow:
        """The registered definition of `workflow` (a name or a Workflow) at `version`, else
        its highest (registry.resolve): the one a child or a continue-as-new runs."""
        return registry.resolve(workflow, version)

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
            doc = {**self.journal[entry_name], "progress": progress}
            self.journal[entry_name] = doc
            self.pending[entry_name] = doc
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
        with self.lock:
            entries, self.pending = self.pending, {}
            status_changed = (
                self.desired_status is not UNSET and self.desired_status != self.custom_status
            )
            if status_changed:
                changes["custom_status"] = self.desired_status
            if self.warn_journal:
                changes["journal_warned"] = True
                self.warn_journal = False
        now = self.now()
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
            and self.stop_reason is None
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
            self.stop_reason = "lease-lost"
            raise LeaseLost()
        if ride is not None:
            self.ride, self.rode = None, flags.rode
        self.flags = flags
        if status_changed:
            self.custom_status = changes["custom_status"]
            self.emit("custom-status", status=self.custom_status)
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
