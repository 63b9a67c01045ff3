"""What an execution does for each ctx call: replay or run steps, waits, values and gathers.

The execution holds the lease; every write goes through `write()`, fenced by the lease token.
Writes are buffered: a step's result and the next step's start share one transaction.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from .. import clock, errors
from ..conf import get_settings
from ..definitions import Workflow
from ..errors import WorkflowInterrupt, WorkflowPayloadError
from ..events import emit
from ..jsonvalues import check_text, size
from ..models import JOURNAL_NAME_LENGTH, WorkflowInstance
from ..store import instances as store
from ..store.signals import signals_for
from ..store.values import to_json
from . import journal
from .context import StepContext, TimerCondition
from .faults import call_store
from .interrupts import (
    Cancel,
    HandBack,
    JournalFull,
    LeaseLost,
    ReplayEnd,
    RunTimeout,
    StoreFailed,
    Suspend,
    Unreadable,
)

logger = logging.getLogger("django_workflows")
_UNSET: Any = object()


@dataclass
class Compensation:
    position: tuple[int, ...]
    step: str
    fn: Callable[[Any, StepContext], Any]
    retry: Any
    result: Any


@dataclass
class Suspension:
    pending: bool = False
    wake_at: datetime | None = None
    waits: list[tuple[str, str | None]] = field(default_factory=list)


def _sibling(recorded: list[int] | None, position: tuple[int, ...]) -> bool:
    """Whether an entry recorded at `recorded` lies in another branch of a gather that
    `position` is in: its order relative to `position` is not fixed."""
    if not recorded:
        return False
    for index, (a, b) in enumerate(zip(recorded, position, strict=False)):
        if a != b:
            return index % 2 == 1  # odd places of a position are gather branch numbers
    return False


class Runtime:
    """The state of one execution and the operations behind `ctx` (see execution.Execution)."""

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
        self.instance = instance
        self.definition = definition
        self.using = using
        self.token = token
        self.last_signal_id = last_signal_id
        self.lease_duration = lease_duration
        self.flags = store.LeaseFlags(
            instance.cancel_requested, instance.terminate_requested, instance.cancel_reason
        )
        if journal_entries is None:  # a first execution has none; a claim reads the others'
            journal_entries = [] if instance.runs <= 1 else store.load_journal(using, instance.id)
        self.journal: dict[str, dict[str, Any]] = dict(journal_entries)
        self.pending: dict[str, dict[str, Any]] = {}
        self.reached: set[str] = set()
        self.consumed: set[int] = {
            doc["result"]["signal_id"]
            for doc in self.journal.values()
            if doc.get("kind") in ("wait", "child")
            and isinstance(doc.get("result"), dict)
            and doc["result"].get("signal_id") is not None
        }
        self.compensations: list[Compensation] = []
        self.suspension = Suspension()
        self.definition_error: errors.WorkflowDefinitionError | None = None
        self.replay_only = False
        # "shutdown" or "lease-lost", set by the worker; "store-failed" by faults.call_store.
        self.stop_reason: str | None = None
        # A BaseException that is not an Exception (SystemExit...) raised by a step: the attempt
        # failed; drain() raises it again once the instance is released.
        self.escaped: BaseException | None = None
        self.running_steps: set[StepContext] = set()
        self.custom_status = instance.custom_status
        self._desired_status: Any = _UNSET
        # Each entry's size as JSON, kept so a rewritten entry costs one measurement, not two.
        self._sizes = {name: size(doc) for name, doc in self.journal.items()}
        self._journal_bytes = sum(self._sizes.values())
        self._warn_journal = False
        self._lock = threading.RLock()
        self._local = threading.local()
        # Threads running workflow code (not parked at a step's start, inside a step, waiting
        # for gather branches, or ended): a new step starts only once this is 0 (start_gate).
        self._active = 1
        self._quiet = threading.Condition()
        self._counters: dict[tuple[int, ...], int] = {}
        self._children: dict[str, int] = {}  # children started in this run, per workflow
        self._owner = threading.get_ident()
        self._requests: queue.Queue[Any] = queue.Queue()
        self._signals: dict[tuple[str, str | None], list[Any]] = {}
        self._lease_extended: datetime | None = clock.now()  # the claim just set the lease
        # When the lease runs out, as far as this process knows (time.monotonic()): the claim,
        # a write that extends it and the worker's renewals push it on.
        self.lease_deadline = time.monotonic() + lease_duration.total_seconds()

    # -- small helpers ---------------------------------------------------------------------------

    def now(self) -> datetime:
        return clock.now()

    def _emit(self, type: str, **data: Any) -> None:
        emit(
            type,
            id=self.instance.id,
            workflow=self.instance.workflow,
            version=self.instance.version,
            at=self.now(),
            **data,
        )

    def _path(self) -> tuple[int, ...]:
        return getattr(self._local, "path", ())

    def _next_position(self) -> tuple[int, ...]:
        with self._lock:
            path = self._path()
            count = self._counters.get(path, 0)
            self._counters[path] = count + 1
            return (*path, count)

    def next_child_number(self, workflow: str) -> int:
        """1 for the first child of `workflow` this run starts, 2 for the next..."""
        with self._lock:
            self._children[workflow] = self._children.get(workflow, 0) + 1
            return self._children[workflow]

    def _define_error(
        self, error: errors.WorkflowDefinitionError
    ) -> errors.WorkflowDefinitionError:
        with self._lock:
            if self.definition_error is None:
                self.definition_error = error
            return self.definition_error

    def _guard_step(self, what: str) -> None:
        if getattr(self._local, "in_step", False):
            raise self._define_error(
                errors.WorkflowDefinitionError(
                    f"{what} was called inside a step's function in instance {self.instance.id!r}. "
                    f"A step's function runs once and replays only see its result: call ctx only "
                    f"from the workflow, and raise NonRetryableStepError from a step instead of ctx.fail()."
                )
            )
        if threading.get_ident() != self._owner and not getattr(self._local, "branch", False):
            raise self._define_error(
                errors.WorkflowDefinitionError(
                    f"{what} was called from a thread that the workflow's code started itself, "
                    f"in instance {self.instance.id!r}. Call ctx only from the workflow's own "
                    f"thread; to run things at once, use ctx.gather()."
                )
            )
        if self.definition_error is not None:
            raise self.definition_error

    # -- what ctx calls ----------------------------------------------------------------------------

    def enter(self, name: str, kind: str) -> tuple[tuple[int, ...], dict[str, Any] | None]:
        """Reach the operation `name`: its position, and its journal entry if it has one."""
        self._guard_step(f'ctx ({kind} "{name}")')
        if len(name) > JOURNAL_NAME_LENGTH:
            raise ValueError(
                f'The {kind} name "{name[:40]}..." is {len(name)} characters long; the most it '
                f"can be is {JOURNAL_NAME_LENGTH}."
            )
        check_text(f"The {kind} name {name[:40]!r}", name)
        with self._lock:
            if name in self.reached:
                raise self._define_error(
                    errors.WorkflowDefinitionError(
                        f'The name "{name}" is used twice in one run of workflow '
                        f'"{self.instance.workflow}@{self.instance.version}" (instance '
                        f"{self.instance.id!r}). Step, sleep and wait names must be unique within a "
                        f"run: in a loop, add the index to the name."
                    )
                )
            self.reached.add(name)
            position = self._next_position()
            entry = self.journal.get(name)
        if entry is not None and entry.get("kind") != kind:
            raise self._define_error(
                errors.WorkflowNonDeterminismError(
                    f'Instance "{self.instance.id}" of workflow "{self.instance.workflow}@'
                    f'{self.instance.version}" does not match its journal: "{name}" was recorded as a '
                    f"{entry.get('kind')} and is now reached as a {kind}."
                )
            )
        return position, entry

    def check_interrupts(self, name: str | None, entry: dict[str, Any] | None) -> None:
        """Before an operation that is not a replay: stop for a cancel, a timeout, a shutdown."""
        if self.replay_only:
            raise ReplayEnd()
        if self.definition_error is not None:
            raise self.definition_error
        swallowed = self.swallowed()
        if swallowed is not None:
            raise swallowed
        if self.stop_reason in ("lease-lost", "store-failed"):
            raise self.interrupted(self.stop_interrupt())
        flags = self.flags
        deadline = self.instance.deadline
        stop: BaseException | None = None
        if flags.terminate_requested or flags.cancel_requested:
            stop = Cancel(flags.terminate_requested)
        elif deadline is not None and self.now() >= deadline:
            stop = RunTimeout()
        elif self.stop_reason == "shutdown":
            raise self.interrupted(HandBack())
        if stop is None:
            return
        if (
            name is not None
            and entry is not None
            and entry["status"] in (journal.PENDING, journal.RUNNING)
        ):
            self.record(
                name,
                None,
                **{
                    **entry,
                    "status": journal.CANCELLED,
                    "finished_at": journal.timestamp(self.now()),
                },
            )
        raise self.interrupted(stop)

    def stop_interrupt(self) -> BaseException:
        """What stops this execution now that `stop_reason` is set."""
        if self.stop_reason == "lease-lost":
            return LeaseLost()
        if self.stop_reason == "store-failed":
            return StoreFailed()
        return HandBack()

    def lease_renewed(self, started: float) -> None:
        """A renewal that started at `started` (time.monotonic()) extended the lease."""
        self.lease_deadline = max(
            self.lease_deadline, started + self.lease_duration.total_seconds()
        )

    def interrupted(self, interrupt: BaseException) -> BaseException:
        """Note `interrupt`, about to be raised at a ctx call of this thread, and return it.
        Workflow code that swallows it gets it again at its next ctx call and at its end
        (swallowed()): the engine's control flow does not depend on the code re-raising it."""
        if getattr(self._local, "interrupt", None) is None:
            self._local.interrupt = interrupt
        return interrupt

    def swallowed(self) -> BaseException | None:
        """The interrupt raised at a ctx call of this thread, which its code has not let out."""
        return getattr(self._local, "interrupt", None)

    def _noted(self, error: BaseException) -> BaseException:
        """A gather branch's error, raised again in the thread that called gather()."""
        return self.interrupted(error) if isinstance(error, WorkflowInterrupt) else error

    def forget_interrupt(self) -> None:
        """run() (or the thread's gather branch) ended: its interrupt was dealt with."""
        self._local.interrupt = None

    def check_replay(self, name: str, position: tuple[int, ...]) -> None:
        """Before a new step runs: the code must have reached every entry of the journal."""
        with self._lock:
            unreached = [
                recorded
                for recorded, doc in self.journal.items()
                if recorded not in self.reached
                and doc.get("kind") not in journal.ENGINE_KINDS
                and not _sibling(doc.get("pos"), position)
            ]
        if unreached:
            names = ", ".join(f'"{n}"' for n in unreached)
            raise self._define_error(
                errors.WorkflowNonDeterminismError(
                    f'Instance "{self.instance.id}" of workflow "{self.instance.workflow}@'
                    f'{self.instance.version}" does not match its journal: {names} '
                    f"{'was' if len(unreached) == 1 else 'were'} recorded by an earlier run but not "
                    f'reached before the new step "{name}". A deployed change renamed, removed or '
                    f"reordered steps. Ship such changes as a new version (@workflow(name, "
                    f"version=...)) and keep the old definition registered until its instances finish."
                )
            )

    def record(self, name: str, position: tuple[int, ...] | None, **doc: Any) -> dict[str, Any]:
        """Buffer a journal entry; it is written with the next write."""
        if position is not None:
            doc["pos"] = list(position)
        with self._lock:
            if name not in self.journal:
                self._check_journal_limits(doc.get("kind"))
            self.keep(name, doc)
            self.pending[name] = doc
        return doc

    def keep(self, name: str, doc: dict[str, Any]) -> None:
        """Hold `doc` as the entry `name` (the caller holds the lock), counting its bytes."""
        new = size(doc)
        self._journal_bytes += new - self._sizes.get(name, 0)
        self._sizes[name] = new
        self.journal[name] = doc

    def _check_journal_limits(self, kind: str | None) -> None:
        limits = get_settings().journal
        entries, used = len(self.journal), self._journal_bytes
        if kind != "compensation" and (entries >= limits.max_entries or used >= limits.max_bytes):
            raise self.interrupted(JournalFull())
        if not self.instance.journal_warned and (
            entries + 1 >= limits.warn_entries or used >= limits.warn_bytes
        ):
            self.instance.journal_warned = True
            self._warn_journal = True
            self._emit("journal-large", entries=entries + 1, bytes=used)

    def suspend(
        self, *, wake_at: datetime | None = None, waits: list[tuple[str, str | None]] | None = None
    ) -> None:
        with self._lock:
            self.suspension.pending = True
            if wake_at is not None and (
                self.suspension.wake_at is None or wake_at < self.suspension.wake_at
            ):
                self.suspension.wake_at = wake_at
            self.suspension.waits.extend(waits or [])
        raise self.interrupted(Suspend())

    def timer_deadline(self, timer: TimerCondition, now: datetime | None = None) -> datetime:
        if timer.until is not None:
            return timer.until
        assert timer.duration is not None
        return (now or self.now()) + timer.duration

    def set_custom_status(self, value: Any) -> None:
        self._guard_step("ctx.set_status()")
        with self._lock:
            self._desired_status = value

    def discard_compensations(self) -> None:
        with self._lock:
            self.compensations.clear()

    def value(self, kind: str, make: Callable[[], Any]) -> Any:
        """A journaled value (`now`, `random`, `uuid`): made once, replayed after."""
        self._guard_step(f"ctx.{kind}()")
        position = self._next_position()
        name = f"${kind}:{'.'.join(map(str, position))}"
        with self._lock:
            self.reached.add(name)
            entry = self.journal.get(name)
        if entry is not None:
            return entry["result"]
        if self.replay_only:
            raise ReplayEnd()
        result = make()
        self.record(
            name,
            position,
            kind="value",
            status=journal.COMPLETED,
            result=result,
            finished_at=journal.timestamp(self.now()),
        )
        return result

    def checkpoint(self, entry_name: str, progress: Any) -> None:
        with self._lock:
            doc = {**self.journal[entry_name], "progress": progress}
            self.journal[entry_name] = doc
            self.pending[entry_name] = doc
        self.write()

    def note_cancel(self, *, terminate: bool, reason: str | None) -> None:
        """A cancel or terminate was accepted: stop at the next ctx call, and tell running steps."""
        with self._lock:
            flags = self.flags
            first = terminate or not flags.cancel_requested
            self.flags = store.LeaseFlags(
                True, flags.terminate_requested or terminate, reason if first else flags.reason
            )
            steps = list(self.running_steps)
        for step in steps:
            step.cancelled.set()

    # -- database access, always from the execution's own thread ----------------------------------

    def store_call(self, fn: Callable[[], Any], what: str) -> Any:
        """A store call on the execution's thread, run again after a database fault
        (faults.call_store): never the workflow's error."""
        return self._on_owner(lambda: call_store(self, fn, what))

    def to_json(self, value: Any, what: str) -> Any:
        """`value` in its JSON form, checked to be storable here (store.values.to_json); the
        size check's read of the server's limits is a store call like any other."""
        return self.store_call(lambda: to_json(value, what, using=self.using), "a size check")

    def _on_owner(self, fn: Callable[[], Any]) -> Any:
        """Run `fn` on the execution's thread, whose connection the execution uses: gather
        branches and timed steps run in threads of their own."""
        if threading.get_ident() == self._owner:
            return fn()
        future: Future[Any] = Future()
        self._requests.put((fn, future))
        return future.result()

    def _serve(self, timeout: float) -> None:
        """On the execution's thread: run what other threads asked for, up to `timeout` seconds."""
        if threading.get_ident() != self._owner:
            time.sleep(min(timeout, 0.05))
            return
        try:
            item = self._requests.get(timeout=timeout)
        except queue.Empty:
            return
        while item is not None:
            fn, future = item
            if fn is not None:
                try:
                    future.set_result(fn())
                except BaseException as error:  # handed to the thread that asked
                    future.set_exception(error)
            try:
                item = self._requests.get_nowait()
            except queue.Empty:
                item = None

    def _wake_owner(self) -> None:
        self._requests.put((None, None))

    def write(
        self,
        *,
        changes: dict[str, Any] | None = None,
        release: store.Release | None = None,
        guarded: dict[str, dict[str, Any]] | None = None,
        signal: dict[str, Any] | None = None,
    ) -> store.LeaseFlags:
        return self._on_owner(lambda: self._write(changes or {}, release, guarded or {}, signal))

    def _write(
        self,
        changes: dict[str, Any],
        release: store.Release | None,
        guarded: dict[str, dict[str, Any]],
        signal: dict[str, Any] | None = None,
    ) -> store.LeaseFlags:
        with self._lock:
            entries, self.pending = self.pending, {}
            status_changed = (
                self._desired_status is not _UNSET and self._desired_status != self.custom_status
            )
            if status_changed:
                changes["custom_status"] = self._desired_status
            if self._warn_journal:
                changes["journal_warned"] = True
                self._warn_journal = False
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
        )
        started = time.monotonic()
        flags = call_store(
            self, lambda: store.write(self.using, self.instance.id, self.token, write), "a write"
        )
        if flags is not None and extend:
            self.lease_renewed(started)
        if flags is None:
            self.stop_reason = "lease-lost"
            raise LeaseLost()
        self.flags = flags
        if status_changed:
            self.custom_status = changes["custom_status"]
            self._emit("custom-status", status=self.custom_status)
        return flags

    def signals(self, name: str, key: str | None) -> list[Any]:
        with self._lock:
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
            with self._lock:
                self._signals[(name, key)] = cached
        return cached

    # -- when steps start ------------------------------------------------------------------------

    def start_gate(self) -> None:
        """Before a step attempt starts: wait until no other thread of this execution runs
        workflow code (each is at a step's start, inside a step, or ended), then raise Suspend
        if one of them parked the instance. So a step in the same gather as a sleep or a wait
        starts after it, at every execution alike, whichever branch's thread runs first; and
        steps that reach their start together all start. Pair with step_ended()."""
        with self._quiet:
            self._active -= 1
            self._quiet.notify_all()
            self._quiet.wait_for(lambda: self._active <= 0)
            if self.suspension.pending:
                self._active += 1
                raise self.interrupted(Suspend())

    def step_ended(self) -> None:
        """The thread that passed start_gate() runs workflow code again."""
        with self._quiet:
            self._active += 1

    def _quiet_change(self, delta: int) -> None:
        with self._quiet:
            self._active += delta
            self._quiet.notify_all()
