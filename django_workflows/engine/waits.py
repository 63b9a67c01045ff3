"""Waits: a signal, a timer, or whichever of several comes first, decided once and journaled."""

from __future__ import annotations

import copy
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..results import WaitOutcome
from . import journal
from .context import ChildCondition, SignalCondition, TimerCondition

if TYPE_CHECKING:
    from .runtime import Runtime


def wait(x: Runtime, name: str, conditions: dict[str, Any], *, kind: str = "wait") -> WaitOutcome:
    position, entry = x.enter(name, kind)
    if entry is not None and entry["status"] == journal.COMPLETED:
        return WaitOutcome(entry["result"]["key"], copy.deepcopy(entry["result"]["value"]))
    x.check_interrupts(name, entry)
    now = x.now()
    signal_conditions = {k: c for k, c in conditions.items() if isinstance(c, SignalCondition)}
    if entry is None:
        recorded = {
            key: journal.timestamp(x.timer_deadline(condition, now))
            for key, condition in conditions.items()
            if isinstance(condition, TimerCondition)
        }
        entry = x.record(
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
    received = {key: x.signals(c.signal, c.key) for key, c in signal_conditions.items()}
    with x._lock:
        winner = None
        for key, condition in signal_conditions.items():
            for signal in received[key]:
                # A signal goes to one wait; a child's end is a fact every wait for it sees.
                if signal.id in x.consumed and not isinstance(condition, ChildCondition):
                    continue
                if first_deadline is not None and signal.created_at > first_deadline:
                    break  # recorded after the deadline: the timer wins
                if condition.match is not None and not condition.match(
                    copy.deepcopy(signal.payload)
                ):
                    continue
                if winner is None or signal.id < winner[1].id:
                    winner = (key, signal)
                break
        if winner is not None:
            x.consumed.add(winner[1].id)
    if winner is not None:
        key, signal = winner
        x.record(
            name,
            position,
            **{
                **entry,
                "status": journal.COMPLETED,
                "result": {"key": key, "value": signal.payload, "signal_id": signal.id},
                "finished_at": journal.timestamp(now),
            },
        )
        x._emit("signal-received", wait=name, signal=signal.name, signal_id=signal.id)
        return WaitOutcome(key, copy.deepcopy(signal.payload))
    if first_deadline is not None and now >= first_deadline:
        key = next(k for k, d in deadlines.items() if d == first_deadline)
        x.record(
            name,
            position,
            **{
                **entry,
                "status": journal.COMPLETED,
                "result": {"key": key, "value": None, "signal_id": None},
                "finished_at": journal.timestamp(now),
            },
        )
        x._emit(
            "signal-timed-out", wait=name, signal=[c.signal for c in signal_conditions.values()]
        )
        return WaitOutcome(key, None)
    x.suspend(wake_at=first_deadline, waits=[(c.signal, c.key) for c in signal_conditions.values()])
    raise AssertionError("unreachable")
