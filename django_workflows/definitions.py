"""What workflow code declares: the Workflow definition (with its update validators), Retry,
Concurrency, RateLimit, Schedule, WorkflowSignal (the @workflow decorator that registers a
definition lives in engine/registry.py)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from .durations import Duration, parse_duration
from .errors import WorkflowDefinitionError
from .jsonvalues import check_text, to_json
from .schedules.timing import timing

_UNSET: Any = object()
JITTERS = ("none", "full", "equal")


@dataclass(frozen=True)
class Retry:
    """How a step retries. Fields left as they are merge over the RETRY setting's."""

    attempts: int = _UNSET
    delay: Duration = _UNSET
    factor: float = _UNSET
    max_delay: Duration = _UNSET
    jitter: str = _UNSET
    backoff: Callable[[int, BaseException], Duration] | None = _UNSET
    retry_if: Callable[[BaseException, int], bool] | None = _UNSET

    def __post_init__(self) -> None:
        if self.attempts is not _UNSET and (
            not isinstance(self.attempts, int)
            or isinstance(self.attempts, bool)
            or self.attempts < 1
        ):
            raise ValueError(f"Retry attempts must be a positive integer, not {self.attempts!r}.")
        if self.delay is not _UNSET:
            parse_duration(self.delay, "Retry delay")
        if self.max_delay is not _UNSET:
            parse_duration(self.max_delay, "Retry max_delay")
        if self.factor is not _UNSET and (
            not isinstance(self.factor, int | float) or self.factor < 1
        ):
            raise ValueError(f"Retry factor must be a number of at least 1, not {self.factor!r}.")
        if self.jitter is not _UNSET and self.jitter not in JITTERS:
            raise ValueError(
                f"Retry jitter must be one of {', '.join(JITTERS)}, not {self.jitter!r}."
            )

    def __repr__(self) -> str:
        """Only the fields this Retry sets: the others merge from the RETRY setting."""
        fields = ", ".join(f"{name}={value!r}" for name, value in self.given().items())
        return f"Retry({fields})"

    def given(self) -> dict[str, Any]:
        """The fields this Retry sets."""
        return {
            name: getattr(self, name)
            for name in (
                "attempts",
                "delay",
                "factor",
                "max_delay",
                "jitter",
                "backoff",
                "retry_if",
            )
            if getattr(self, name) is not _UNSET
        }


@dataclass(frozen=True)
class Concurrency:
    """At most `limit` executions at once; per value of `key(input)` when `key` is given."""

    limit: int
    key: Callable[[Any], str] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.limit, int) or isinstance(self.limit, bool) or self.limit < 1:
            raise ValueError(f"Concurrency limit must be a positive integer, not {self.limit!r}.")


@dataclass(frozen=True)
class RateLimit:
    """At most `max` executions start per window of `duration`; per key when `key` is given."""

    max: int
    duration: Duration
    key: Callable[[Any], str] | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.max, int) or isinstance(self.max, bool) or self.max < 1:
            raise ValueError(f"RateLimit max must be a positive integer, not {self.max!r}.")
        if parse_duration(self.duration, "RateLimit duration") <= timedelta():
            raise ValueError("RateLimit duration must be longer than zero.")


PRIORITY_MAX = 2_097_151
SCHEDULE_ID = re.compile(r"[A-Za-z0-9.:_-]+")  # fullmatch: "$" would let a final newline by
SCHEDULE_ID_LENGTH = 230  # its instances' ids, <id>@<time>, add 25 characters
MISSED = ("skip", "once", "all")
QUEUE = re.compile(r"[A-Za-z0-9.:_-]+")
QUEUE_LENGTH = 100
DEFAULT_QUEUE = "default"
OVERLAP = ("skip", "allow", "cancel-previous", "buffer-one")


def check_priority(priority: Any) -> None:
    if priority is not None and (
        not isinstance(priority, int)
        or isinstance(priority, bool)
        or not 1 <= priority <= PRIORITY_MAX
    ):
        raise ValueError(f"priority must be an integer from 1 to {PRIORITY_MAX}, not {priority!r}.")


def check_debounce(
    debounce: Duration | None, timeout: Duration | None, prefix: str = ""
) -> tuple[timedelta | None, timedelta | None]:
    """`debounce` and `debounce_timeout` as timedeltas (None where not given); ValueError, its
    message after `prefix`, for one that is not a positive duration, or for a timeout without
    a debounce."""
    if debounce is None:
        if timeout is not None:
            raise ValueError(
                f"{prefix}debounce_timeout needs a debounce: give debounce too, the quiet time "
                f"after the last start, or leave both out."
            )
        return None, None
    quiet = parse_duration(debounce, f"{prefix}debounce")
    if not quiet:
        raise ValueError(f"{prefix}debounce must be longer than 0, not {debounce!r}.")
    if timeout is None:
        return quiet, None
    longest = parse_duration(timeout, f"{prefix}debounce_timeout")
    if not longest:
        raise ValueError(f"{prefix}debounce_timeout must be longer than 0, not {timeout!r}.")
    return quiet, longest


def check_queue(queue: Any, what: str = "queue") -> None:
    """Raise TypeError or ValueError for a queue name that is not a short word: letters,
    digits, '.', ':', '_' and '-' (it goes on command lines and into the admin's filter)."""
    if not isinstance(queue, str):
        raise TypeError(f"{what} must be a string, not {type(queue).__name__}.")
    if not QUEUE.fullmatch(queue) or len(queue) > QUEUE_LENGTH:
        raise ValueError(
            f"{what} {queue[:40]!r} must be 1 to {QUEUE_LENGTH} letters, digits, '.', ':', '_' "
            f"and '-'."
        )


def check_schedule_id(id: Any) -> None:
    if not isinstance(id, str) or not SCHEDULE_ID.fullmatch(id):
        raise ValueError(
            f"Schedule id {id!r} must be letters, digits, '.', ':', '_' and '-' (and not empty)."
        )
    if len(id) > SCHEDULE_ID_LENGTH:
        raise ValueError(
            f"Schedule id {id[:40]!r}... is longer than {SCHEDULE_ID_LENGTH} characters."
        )


def check_schedule_options(
    id: str, *, missed: Any, overlap: Any, limit: Any, priority: Any
) -> None:
    """Raise ValueError naming the first bad option of a schedule."""
    check_schedule_id(id)
    if missed not in MISSED:
        raise ValueError(
            f"Schedule {id!r}: missed must be one of {', '.join(MISSED)}, not {missed!r}."
        )
    if overlap not in OVERLAP:
        raise ValueError(
            f"Schedule {id!r}: overlap must be one of {', '.join(OVERLAP)}, not {overlap!r}."
        )
    if missed == "all" and overlap != "allow":
        raise ValueError(f"Schedule {id!r}: missed='all' needs overlap='allow'.")
    if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 1):
        raise ValueError(f"Schedule {id!r}: limit must be a positive integer, not {limit!r}.")
    check_priority(priority)


@dataclass(frozen=True)
class Schedule:
    """A schedule declared on a workflow: `cron`, `every` or `rrule`, and how it runs.

    `input` is a JSON value or a function of the ScheduleOccurrence that returns one.
    """

    id: str
    cron: str | None = None
    every: Duration | None = None
    rrule: str | None = None
    tz: str = "UTC"
    start_at: datetime | None = None
    end_at: datetime | None = None
    limit: int | None = None
    missed: str = "skip"
    overlap: str = "skip"
    priority: int | None = None
    input: Any = None

    def __post_init__(self) -> None:
        check_schedule_options(
            self.id,
            missed=self.missed,
            overlap=self.overlap,
            limit=self.limit,
            priority=self.priority,
        )
        try:
            timing(
                cron=self.cron,
                every=self.every,
                rrule=self.rrule,
                tz=self.tz,
                start_at=self.start_at,
                end_at=self.end_at,
            )
        except ValueError as error:
            raise ValueError(f"Schedule {self.id!r}: {error}") from None
        if not callable(self.input):
            to_json(self.input, f"The input of schedule {self.id!r}")


@dataclass(frozen=True)
class ScheduleOccurrence:
    """The schedule and time that started an instance (`ctx.schedule`)."""

    id: str
    at: datetime


UPDATE_NAME_LENGTH = 247  # with "$update:" before it, the 255 characters of a signal's name


def check_update_name(name: Any) -> str:
    """`name`, an update's name; TypeError when it is not a string, ValueError when it is empty,
    longer than UPDATE_NAME_LENGTH, or has a NUL or a lone surrogate in it."""
    if not isinstance(name, str):
        raise TypeError(f"An update name must be a string, not {type(name).__name__}.")
    if not name:
        raise ValueError("An update name must not be empty.")
    if len(name) > UPDATE_NAME_LENGTH:
        raise ValueError(
            f"The update name {name[:40]!r}... is {len(name)} characters long; the most it can "
            f"be is {UPDATE_NAME_LENGTH}."
        )
    check_text("The update name", name)
    return name


@dataclass(frozen=True)
class WorkflowSignal:
    """A signal's name, shared by the sender (`signal()`) and the workflow that waits for it."""

    name: str

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError("A WorkflowSignal needs a non-empty name.")


@dataclass(frozen=True, eq=False)
class Workflow:
    """A registered workflow definition: what `@workflow` returns."""

    name: str
    version: int
    run: Callable[[Any, Any], Any]
    timeout: timedelta | None = None
    concurrency: tuple[Concurrency, ...] = ()
    rate_limit: tuple[RateLimit, ...] = ()
    schedules: tuple[Schedule, ...] = ()
    # Static tags (@workflow(tags=...)), merged with each start's; checked and sorted.
    tags: tuple[str, ...] = ()
    # The queue its instances go to unless start() names another (runworkflows --queue).
    queue: str = DEFAULT_QUEUE
    # The debounce of its starts with an id, unless start() gives one (@workflow(debounce=...)).
    debounce: timedelta | None = None
    debounce_timeout: timedelta | None = None
    # The fair key of an instance, from its input (@workflow(fair_key=...)): None for none.
    fair_key: Callable[[Any], str | None] | None = None
    target: Any = field(default=None, repr=False)
    # Update name -> validator `(status, arg)`, filled by @<workflow>.validator(name).
    validators: dict[str, Callable[[Any, Any], Any]] = field(default_factory=dict, repr=False)

    def validator(
        self, name: str
    ) -> Callable[[Callable[[Any, Any], Any]], Callable[[Any, Any], Any]]:
        """Register the decorated `fn(status, arg)` as this version's validator of update
        `name`: update() calls it before storing anything; it accepts by returning None and
        refuses by raising ValidationError or returning a reason. Returns `fn` unchanged.

        Raises TypeError for a name that is not a string or a validator that is not callable,
        ValueError for a bad name, WorkflowDefinitionError for a second validator of `name`.
        """
        check_update_name(name)

        def register(fn: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
            if not callable(fn):
                raise TypeError(
                    f"The validator of update {name!r} of workflow {self.name!r} must be a "
                    f"function (status, arg), not {fn!r}."
                )
            if name in self.validators:
                raise WorkflowDefinitionError(
                    f"Workflow {self.name!r} version {self.version} has a validator of update "
                    f"{name!r} already: give each update name one validator."
                )
            self.validators[name] = fn
            return fn

        return register

    def __call__(self, ctx: Any, input: Any) -> Any:
        return self.run(ctx, input)

    @property
    def key_limits(self) -> bool:
        """Whether a concurrency limit has a key."""
        return any(limit.key is not None for limit in self.concurrency)

    @property
    def key_rate_limits(self) -> bool:
        """Whether a rate limit has a key."""
        return any(limit.key is not None for limit in self.rate_limit)
