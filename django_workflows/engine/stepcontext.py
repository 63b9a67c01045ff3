"""The step context: what a step's function (and a compensation) receives, and the ids a
step derives for the instances it starts and the signals it sends (see scope.running_step)."""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from django.db import connections

from ..models import KEY_LENGTH
from . import atomic as atomic_steps
from .journal import FORK_ENTRY, run_key
from .steplog import StepLogger
from .streams import StepStream, check_name

if TYPE_CHECKING:
    from .surface import Surface


class StepContext:
    """What a step's function (and a compensation) receives."""

    def __init__(
        self,
        execution: Surface,
        name: str,
        entry_name: str,
        attempt: int,
        progress: Any,
        reason: BaseException | None = None,
        *,
        atomic: bool = False,
        key: str | None = None,
    ):
        key_name = key
        self._execution = execution
        self._name = name
        self._entry_name = entry_name
        # A fork's steps keep the original's keys: a re-run step repeats no effect its
        # original did (a charge) where the other side honours the key.
        forked = execution.journal.entries.get(FORK_ENTRY)
        key = execution.instance.id if forked is None else forked["key"]
        # A run after ctx.continue_as_new() has keys of its own: next month's "ship" step is
        # not last month's, which the carrier has seen under the same name.
        key = run_key(key, execution.instance.generation)
        # A task's dispatch (journaled per attempt) has the task's name as its key.
        self.idempotency_key = f"{key}:{entry_name if key_name is None else key_name}"
        self.attempt = attempt
        self.progress = progress
        self.reason = reason
        self.atomic = atomic
        self.cancelled = threading.Event()
        self._timed_out = False
        self._cancel_coroutine: Callable[[], Any] | None = None
        self.last_beat = time.monotonic()
        self._places: Counter[tuple[Any, ...]] = Counter()
        self._places_lock = threading.Lock()
        self._streams: dict[str, StepStream] = {}
        # Whether the execution runs inside a transaction (a TestCase's): step.stream() then
        # writes on its connection (StepStream).
        self._in_transaction = connections[execution.using].in_atomic_block
        # Lines logged here reach the django_workflows logger and this attempt's entry.
        self.log = StepLogger(
            {
                "instance_id": execution.instance.id,
                "workflow": execution.instance.workflow,
                "step": name,
                "attempt": attempt,
            },
            execution.guards.now,
        )

    def start_id(self, workflow: str) -> str:
        """The id of this attempt's next start() of `workflow` without an id: the step's
        idempotency key, the workflow and its place among the step's starts of it, the same at
        every attempt, so a retried step finds the instances it started. A digest where that
        text would be too long for an id, or ambiguous."""
        place = self._place("start", workflow)
        text = f"{self.idempotency_key}/{workflow}#{place}"
        if len(text) <= KEY_LENGTH and "/" not in workflow and "#" not in workflow:
            return text
        return "step-start:" + _digest(self.idempotency_key, workflow, place)

    def signal_id(self, name: str, key: str | None) -> str:
        """The dedupe id of this attempt's next signal() of `name` with `key` without an id:
        from the step's idempotency key and its place among the step's signals with that name
        and key, so a retried step's signals are stored once."""
        return "step-signal:" + _digest(
            self.idempotency_key, name, key, self._place("signal", name, key)
        )

    def _place(self, *what: Any) -> int:
        with self._places_lock:
            self._places[what] += 1
            return self._places[what]

    def time_out(self) -> None:
        """The attempt ran past its timeout: set `cancelled`, and cancel the coroutine of an
        async function (CancelledError at its next await), now or as soon as it starts."""
        with self._places_lock:
            self._timed_out = True
            cancel = self._cancel_coroutine
        self.cancelled.set()
        if cancel is not None:
            cancel()

    def run_coroutine(self, cancel: Callable[[], Any]) -> None:
        """An async function's coroutine runs for this attempt: `cancel()` stops it at its
        timeout (at once when that passed already)."""
        with self._places_lock:
            self._cancel_coroutine = cancel
            late = self._timed_out
        if late:
            cancel()

    def stream(self, name: str) -> StepStream:
        """The instance's stream `name` (the one ctx.stream(name) writes too): items written
        as they happen, at least once, each with this attempt. TypeError or ValueError for a
        bad name."""
        check_name(name, "step.stream()")
        with self._places_lock:
            stream = self._streams.get(name)
            if stream is None:
                x = self._execution
                at_once: Callable[[Callable[[], Any]], Any] | None = None
                if self.atomic:
                    at_once = _here
                elif self._in_transaction:
                    at_once = x.lease.calls.run
                stream = self._streams[name] = StepStream(
                    x.using,
                    x.instance.id,
                    name,
                    attempt=self.attempt,
                    now=x.guards.now,
                    at_once=at_once,
                )
        return stream

    def end_streams(self) -> None:
        """The function returned or raised: wait for its streams' last batches, and raise the
        first error the store gave one of them (WorkflowStreamFullError)."""
        with self._places_lock:
            streams = list(self._streams.values())
        failed: BaseException | None = None
        for stream in streams:
            try:
                stream.end()
            except Exception as error:
                failed = failed or error
        if failed is not None:
            raise failed

    def heartbeat(self, progress: Any = None) -> None:
        """Journal a checkpoint (the next attempt gets it as `progress`) and renew heartbeat_timeout."""
        self.last_beat = time.monotonic()
        if progress is None:
            return
        what = f'The progress of step "{self._name}"'
        if self.atomic:
            # Kept in memory only: a checkpoint of writes that a failed attempt rolls back would
            # tell the next attempt of work that is not there (and writing it on the execution's
            # thread would wait for this transaction's locks). The next attempt gets the
            # progress the step had before this one.
            self.progress = atomic_steps.to_json(self._execution, progress, what)
            return
        progress = self._execution.lease.to_json(progress, what)
        self.progress = progress
        self._execution.lease.checkpoint(self._entry_name, progress)


def _here(fn: Callable[[], Any]) -> Any:
    return fn()


def _digest(*parts: Any) -> str:
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()
