"""Waits: a sleep, a signal, a timer, or whichever of several comes first, decided once and
journaled; and the conditions ctx.wait_for_any() takes."""

from __future__ import annotations

import copy
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, ClassVar

from .. import errors
from ..definitions import WorkflowSignal
from ..durations import Duration, parse_duration
from ..results import WaitOutcome
from . import journal
from .starts import check_key

if TYPE_CHECKING:
    from .surface import Surface


@dataclass(frozen=True)
class SignalCondition:
    """A signal to wait for, in wait_for_any()."""

    signal: str
    key: str | None
    match: Callable[[Any], bool] | None

    # A signal goes to one wait; a child's end (children.ChildCondition) to every wait for it.
    exclusive: ClassVar[bool] = True

    def outcome(self, payload: Any) -> Any:
        """What wait_for_any() returns when this condition wins with `payload`: the payload."""
        return payload


@dataclass(frozen=True)
class TimerCondition:
    """A timer, in wait_for_any(): fires `duration` after the wait is first reached, or at `until`."""

    duration: timedelta | None
    until: datetime | None


class Waitable(ABC):
    """What wait_for_any() takes besides a condition (a child's handle): it gives its condition."""

    @abstractmethod
    def condition(self) -> SignalCondition:
        """The condition wait_for_any() waits for in its place."""


def timer(
    duration: Duration | None = None, *, until: datetime | None = None, what: str = "A timer"
) -> TimerCondition:
    """A timer condition; WorkflowDefinitionError unless given exactly one of `duration` and
    `until`, ValueError for an `until` that is not an aware datetime or a bad duration. `what`
    names it in the errors ('Sleep "cool-down"')."""
    if (duration is None) == (until is None):
        raise errors.WorkflowDefinitionError(
            f"{what} takes either a duration or until=, not both or neither."
        )
    if until is not None:
        if not isinstance(until, datetime) or until.tzinfo is None:
            raise ValueError(f"{what}: until must be an aware datetime, not {until!r}.")
        return TimerCondition(None, until)
    return TimerCondition(parse_duration(duration, f"{what}: duration"), None)  # type: ignore[arg-type]


def signal_condition(
    x: Surface,
    signal: WorkflowSignal | str,
    key: str | None,
    match: Callable[[Any], bool] | None,
) -> SignalCondition:
    """A signal condition; WorkflowDefinitionError for a bad signal or key, ValueError for a
    name or key that does not fit its column."""
    if key is not None and not isinstance(key, str):
        raise errors.WorkflowDefinitionError(f"A signal key must be a string, not {key!r}.")
    name = signal.name if isinstance(signal, WorkflowSignal) else signal
    if not isinstance(name, str) or not name:
        raise errors.WorkflowDefinitionError(
            f"Expected a WorkflowSignal or a signal name, got {signal!r}."
        )
    check_key("The signal name", name, x.using)
    check_key("The signal key", key, x.using)
    return SignalCondition(name, key, match)


def _deadline(timer: TimerCondition, now: datetime) -> datetime:
    if timer.until is not None:
        return timer.until
    assert timer.duration is not None
    return now + timer.duration


def sleep(x: Surface, name: str, timer: TimerCondition) -> None:
    """The sleep `name`: done once its timer fired, else Suspend until it does."""
    position, entry = x.journal.enter(name, "sleep")
    if entry is not None and entry["status"] == journal.COMPLETED:
        return None
    x.stops.check_interrupts(name, entry)
    if entry is None:
        wake_at = _deadline(timer, x.guards.now())
        entry = x.journal.record(
            name,
            position,
            kind="sleep",
            status=journal.PENDING,
            started_at=journal.timestamp(x.guards.now()),
            wake_at=journal.timestamp(wake_at),
        )
    due = journal.parse_timestamp(entry["wake_at"])
    assert due is not None
    if x.guards.now() >= due:
        x.journal.record(
            name,
            position,
            **{
                **entry,
                "status": journal.COMPLETED,
                "finished_at": journal.timestamp(x.guards.now()),
            },
        )
        x.guards.emit("sleep-completed", sleep=name, since=_since(entry), wake_at=due)
        return None
    x.stops.suspend(wake_at=due)


def _since(entry: dict[str, Any]) -> datetime | None:
    """When the sleep or wait of `entry` began (the execution that first met it)."""
    return journal.parse_timestamp(entry.get("started_at"))


def wait_for_any(x: Surface, name: str, conditions: dict[str, Any]) -> WaitOutcome:
    """The wait `name` for whichever of `conditions` (conditions or Waitables) comes first;
    WorkflowDefinitionError for none, or for another kind of object."""
    if not conditions:
        raise errors.WorkflowDefinitionError(
            f'wait_for_any("{name}") needs at least one condition.'
        )
    for key, condition in conditions.items():
        if isinstance(condition, Waitable):
            conditions[key] = condition.condition()
        elif not isinstance(condition, SignalCondition | TimerCondition):
            raise errors.WorkflowDefinitionError(
                f'wait_for_any("{name}"): condition {key!r} must be ctx.signal_wait(), '
                f"ctx.timer() or a child's handle, not {condition!r}."
            )
    won = wait(x, name, conditions)
    winner = conditions[won.key]
    if isinstance(winner, SignalCondition):
        return WaitOutcome(won.key, winner.outcome(won.value))
    return won


def wait(x: Surface, name: str, conditions: dict[str, Any], *, kind: str = "wait") -> WaitOutcome:
    """Wait `name` for whichever of `conditions` comes first, decided once and journaled:
    its key and value, or Suspend until one can."""
    position, entry = x.journal.enter(name, kind)
    if entry is not None and entry["status"] == journal.COMPLETED:
        return WaitOutcome(entry["result"]["key"], copy.deepcopy(entry["result"]["value"]))
    x.stops.check_interrupts(name, entry)
    now = x.guards.now()
    signal_conditions = {k: c for k, c in conditions.items() if isinstance(c, SignalCondition)}
    if entry is None:
        recorded = {
            key: journal.timestamp(_deadline(condition, now))
            for key, condition in conditions.items()
            if isinstance(condition, TimerCondition)
        }
        entry = x.journal.record(
            name,
            position,
            kind=kind,
            status=journal.PENDING,
            started_at=journal.timestamp(now),
            deadlines=recorded,
            waits=[[c.signal, c.key] for c in signal_conditions.values()],
        )
    deadlines: dict[str, datetime | None] = {
        k: journal.parse_timestamp(v) for k, v in entry["deadlines"].items()
    }
    first_deadline = min((d for d in deadlines.values() if d is not None), default=None)
    # Read outside the lock: the read runs on the execution's thread, which may be waiting
    # for this lock to write another branch's step.
    received = {key: x.lease.signals(c.signal, c.key) for key, c in signal_conditions.items()}
    winner = _take(x, signal_conditions, received, first_deadline)
    if (
        winner is None
        and signal_conditions
        and first_deadline is not None
        and now >= first_deadline
    ):
        # The timer is about to win. A signal recorded before the deadline wins instead, even
        # one newer than this execution's claim: its sender was told it was delivered.
        late = x.lease.signals_recorded_before(
            [(c.signal, c.key) for c in signal_conditions.values()], first_deadline
        )
        received = {
            key: [s for s in late if s.name == c.signal and s.key == c.key]
            for key, c in signal_conditions.items()
        }
        winner = _take(x, signal_conditions, received, first_deadline)
    if winner is not None:
        key, signal = winner
        x.journal.record(
            name,
            position,
            **{
                **entry,
                "status": journal.COMPLETED,
                "result": {"key": key, "value": signal.payload, "signal_id": signal.id},
                "finished_at": journal.timestamp(now),
            },
        )
        x.guards.emit(
            "signal-received",
            wait=name,
            signal=signal.name,
            signal_id=signal.id,
            since=_since(entry),
        )
        return WaitOutcome(key, copy.deepcopy(signal.payload))
    if first_deadline is not None and now >= first_deadline:
        key = next(k for k, d in deadlines.items() if d == first_deadline)
        x.journal.record(
            name,
            position,
            **{
                **entry,
                "status": journal.COMPLETED,
                "result": {"key": key, "value": None, "signal_id": None},
                "finished_at": journal.timestamp(now),
            },
        )
        x.guards.emit(
            "signal-timed-out",
            wait=name,
            signal=[c.signal for c in signal_conditions.values()],
            since=_since(entry),
        )
        return WaitOutcome(key, None)
    x.stops.suspend(
        wake_at=first_deadline, waits=[(c.signal, c.key) for c in signal_conditions.values()]
    )
    raise AssertionError("unreachable")


def _take(
    x: Surface,
    conditions: dict[str, SignalCondition],
    received: dict[str, list[Any]],
    deadline: datetime | None,
) -> tuple[str, Any] | None:
    """The condition's key and the signal that wins among `received` (each condition's, by
    id): the lowest id a condition matches, recorded by `deadline`; taken (consumed) here."""
    with x.lock:
        winner = None
        for key, condition in conditions.items():
            for signal in received[key]:
                # A signal goes to one wait; a child's end is a fact every wait for it sees.
                if signal.id in x.journal.consumed and condition.exclusive:
                    continue
                if deadline is not None and signal.created_at > deadline:
                    break  # recorded after the deadline: the timer wins
                if condition.match is not None and not condition.match(
                    copy.deepcopy(signal.payload)
                ):
                    continue
                if winner is None or signal.id < winner[1].id:
                    winner = (key, signal)
                break
        if winner is not None:
            x.journal.consumed.add(winner[1].id)
        return winner


def wait_for_signal(
    x: Surface,
    name: str,
    signal: WorkflowSignal | str,
    *,
    key: str | None,
    timeout: Duration | None,
    match: Callable[[Any], bool] | None,
) -> Any:
    """The wait `name` for `signal` with `key`: its payload, or None once `timeout` passes."""
    conditions: dict[str, Any] = {"signal": signal_condition(x, signal, key, match)}
    if timeout is not None:
        conditions["timeout"] = timer(timeout)
    return wait(x, name, conditions).value
