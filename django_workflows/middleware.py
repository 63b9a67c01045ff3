"""Step middleware (DJANGO_WORKFLOWS["STEP_MIDDLEWARE"]): a chain of handlers, built as Django
builds its middleware, around every attempt of every step and compensation.

Each path names a factory `factory(call_next)` returning `handler(invocation)`; the first path
is the outermost. A handler may also have two optional methods, which the engine calls beside
the chain (outermost first, like the chain):

- `process_start(invocation: StartInvocation) -> Mapping[str, str] | None`: in start(), before
  the instance is written; the headers it returns (a W3C `traceparent`, say) are stored with
  the instance, in its journal entry `$headers`.
- `process_execution(invocation: ExecutionInvocation, run: Callable[[], str]) -> str`: around
  one execution of an instance; it must call `run()` and return what it returns.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from django.core.signals import setting_changed
from django.dispatch import receiver
from django.utils.module_loading import import_string

from .conf import SETTING, get_settings
from .errors import WorkflowInterrupt

if TYPE_CHECKING:
    from .models import WorkflowInstance

HEADERS_ENTRY = "$headers"  # the journal entry start() stores process_start()'s headers in
HEADERS_KIND = "headers"
COMPENSATION_PREFIX = "$compensate:"  # engine.journal's; the engine's package is not imported here
# The middleware that counts for the worker's metrics, at the chain's inner end while
# DJANGO_WORKFLOWS["METRICS"] is on (imported by its path: metrics sits above this module).
METRICS_MIDDLEWARE = "django_workflows.metrics.counters.middleware"


@dataclass(frozen=True)
class StepInvocation:
    """One attempt of a step (`kind` "step") or of a step's compensation ("compensation")."""

    instance_id: str
    workflow: str
    version: int
    step: str
    attempt: int
    kind: str
    _call: Callable[[], Any] = field(repr=False, compare=False)
    # What the step's function raised that the engine must see again: a WorkflowInterrupt.
    _interrupts: list[BaseException] = field(repr=False, compare=False, default_factory=list)


@dataclass(frozen=True)
class ExecutionInvocation:
    """One execution of an instance: its `run` (1 for the first) and the `headers` start()
    stored with it ({} when none)."""

    instance_id: str
    workflow: str
    version: int
    run: int
    headers: Mapping[str, str]


@dataclass(frozen=True)
class StartInvocation:
    """A start() about to write instance `instance_id` of `workflow` at `version`."""

    instance_id: str
    workflow: str
    version: int


@dataclass(frozen=True)
class Chain:
    """The built chain: its outermost handler (None without middleware), and the handlers with
    a process_start() or process_execution() method, outermost first."""

    handler: Callable[[StepInvocation], Any] | None
    starts: tuple[Callable[[StartInvocation], Mapping[str, str] | None], ...]
    executions: tuple[Callable[[ExecutionInvocation, Callable[[], str]], str], ...]


def _call_step(invocation: StepInvocation) -> Any:
    """The innermost handler: the step's function. An interrupt it raises is kept, so that a
    middleware that swallows it does not stop the engine's control flow."""
    try:
        return invocation._call()
    except WorkflowInterrupt as interrupt:
        invocation._interrupts.append(interrupt)
        raise


def load(paths: tuple[str, ...]) -> Chain:
    """The chain of `paths`; ImportError or TypeError naming the path that cannot be used."""
    handler: Callable[[StepInvocation], Any] = _call_step
    built = []
    for path in reversed(paths):
        try:
            factory = import_string(path)
        except ImportError as error:
            raise ImportError(f"STEP_MIDDLEWARE {path!r} does not import: {error}") from error
        if not callable(factory):
            raise TypeError(f"STEP_MIDDLEWARE {path!r} is not callable: {factory!r}.")
        handler = factory(handler)
        if not callable(handler):
            raise TypeError(
                f"STEP_MIDDLEWARE {path!r} returned {handler!r}, not a handler(invocation)."
            )
        built.append(handler)
    built.reverse()
    return Chain(
        handler=handler if paths else None,
        starts=tuple(h.process_start for h in built if hasattr(h, "process_start")),
        executions=tuple(h.process_execution for h in built if hasattr(h, "process_execution")),
    )


@functools.cache
def chain() -> Chain:
    """The chain of the STEP_MIDDLEWARE setting (and the metrics' middleware, innermost, while
    METRICS is on), built once (again when the setting changes)."""
    configured = get_settings()
    if configured.metrics:
        return load((*configured.step_middleware, METRICS_MIDDLEWARE))
    return load(configured.step_middleware)


@receiver(setting_changed)
def _reload(*, setting: str, **kwargs: Any) -> None:
    if setting == SETTING:
        chain.cache_clear()


def wrap(
    instance: WorkflowInstance,
    entry_name: str,
    step: str,
    attempt: int,
    call: Callable[[], Any],
) -> Callable[[], Any]:
    """`call`, attempt `attempt` of the step `step` of `instance` (journaled as `entry_name`, a
    compensation's with its prefix), run through the chain (as is without middleware)."""
    handler = chain().handler
    if handler is None:
        return call
    compensation = entry_name.startswith(COMPENSATION_PREFIX)
    invocation = StepInvocation(
        instance.id,
        instance.workflow,
        instance.version,
        step,
        attempt,
        "compensation" if compensation else "step",
        call,
    )

    def through_chain() -> Any:
        try:
            result = handler(invocation)
        except BaseException:
            if invocation._interrupts:
                raise invocation._interrupts[0] from None
            raise
        if invocation._interrupts:
            raise invocation._interrupts[0]
        return result

    return through_chain


def start_headers(instance_id: str, workflow: str, version: int) -> dict[str, str]:
    """The headers the chain's process_start() methods give for a start(), merged."""
    starts = chain().starts
    if not starts:
        return {}
    invocation = StartInvocation(instance_id, workflow, version)
    headers: dict[str, str] = {}
    for process_start in starts:
        given = process_start(invocation)
        if given:
            headers.update(given)
    return headers


def headers_entry(headers: dict[str, str]) -> dict[str, dict[str, Any]]:
    """The journal entries that store `headers` with a new instance (none without headers)."""
    if not headers:
        return {}
    return {HEADERS_ENTRY: {"kind": HEADERS_KIND, "status": "completed", "headers": headers}}


def run_execution(
    instance: WorkflowInstance, journal: Mapping[str, Any], run: Callable[[], str]
) -> str:
    """`run()`, one execution of `instance` (whose journal, as claimed, is `journal`), inside
    the chain's process_execution() methods."""
    executions = chain().executions
    if not executions:
        return run()
    invocation = ExecutionInvocation(
        instance.id, instance.workflow, instance.version, instance.runs, stored_headers(journal)
    )
    wrapped = run
    for process_execution in reversed(executions):
        wrapped = functools.partial(process_execution, invocation, wrapped)
    return wrapped()


def stored_headers(journal: Mapping[str, Any]) -> Mapping[str, str]:
    """The headers start() stored with an instance, from its `journal` (which the worker's
    claim reads for a first execution too while a process_execution() exists, where the
    instance `has_headers`)."""
    entry = journal.get(HEADERS_ENTRY)
    headers = entry.get("headers") if entry is not None else None
    return headers if isinstance(headers, dict) else {}
