"""Workflow definitions by name and version, and @workflow, which fills the registry as
workflows.py modules load."""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable, Sequence
from typing import Any

from ..attributes import check_tags
from ..definitions import (
    DEFAULT_QUEUE,
    Concurrency,
    RateLimit,
    Schedule,
    Workflow,
    check_debounce,
    check_queue,
)
from ..durations import Duration, parse_duration
from ..errors import WorkflowDefinitionError, WorkflowNotFoundError
from .asynccontext import workflow_runner
from .signatures import call_problem


def _origin(definition: Workflow) -> str:
    target = definition.target
    return f"{getattr(target, '__module__', '?')}.{getattr(target, '__qualname__', repr(target))}"


class Registry:
    """Every registered workflow definition; several versions of one name live side by side."""

    def __init__(self) -> None:
        self._definitions: dict[tuple[str, int], Workflow] = {}
        self._lock = threading.Lock()

    def register(self, definition: Workflow) -> None:
        """Add a definition; raise WorkflowDefinitionError for a second one of the same name and version."""
        key = (definition.name, definition.version)
        with self._lock:
            existing = self._definitions.get(key)
            # The same function imported again (a reloaded module) replaces itself.
            if existing is not None and _origin(existing) != _origin(definition):
                raise WorkflowDefinitionError(
                    f"Workflow {definition.name!r} version {definition.version} is defined twice: "
                    f"by {_origin(existing)} and by {_origin(definition)}. Give the new one another "
                    f"version, or another name."
                )
            self._definitions[key] = definition

    def unregister(self, definition: Workflow) -> None:
        with self._lock:
            self._definitions.pop((definition.name, definition.version), None)

    def get(self, name: str, version: int) -> Workflow | None:
        return self._definitions.get((name, version))

    def latest(self, name: str) -> Workflow | None:
        versions = [d for (n, _), d in self._definitions.items() if n == name]
        return max(versions, key=lambda d: d.version) if versions else None

    def resolve(self, workflow: Any, version: int | None = None) -> Workflow:
        """The definition for a Workflow object or a name: `version`, or the highest registered."""
        name = workflow.name if isinstance(workflow, Workflow) else workflow
        if not isinstance(name, str):
            raise TypeError(f"Expected a workflow or a workflow name, got {workflow!r}.")
        definition = self.latest(name) if version is None else self.get(name, version)
        if definition is None:
            known = ", ".join(sorted({n for n, _ in self._definitions})) or "none"
            which = f"{name!r}" if version is None else f"{name!r} version {version}"
            raise WorkflowNotFoundError(
                f"No workflow {which} is registered in this application (registered: {known}). "
                f"Define it with @workflow in a workflows.py module of an installed app."
            )
        return definition

    def all(self) -> list[Workflow]:
        return sorted(self._definitions.values(), key=lambda d: (d.name, d.version))

    def pairs(self, names: list[str] | None = None) -> list[tuple[str, int]]:
        """(name, version) of every definition, or of those whose name is in `names`."""
        return [key for key in sorted(self._definitions) if names is None or key[0] in names]


registry = Registry()


def _as_tuple(value: Any, kind: type) -> tuple[Any, ...]:
    if value is None:
        return ()
    values = tuple(value) if isinstance(value, list | tuple) else (value,)
    for item in values:
        if not isinstance(item, kind):
            raise ValueError(f"Expected {kind.__name__} objects, got {item!r}.")
    if len([v for v in values if v.key is None]) > 1 or len([v for v in values if v.key]) > 1:
        raise ValueError(f"Give at most one {kind.__name__} without a key and one with a key.")
    return values


def signature_problem(definition: Workflow) -> str | None:
    """Why the definition's function (or its class's run method) cannot be called as
    `(ctx, input)`, the way the engine calls it, or None when it can. Extra parameters with
    defaults (keyword-only ones too) are fine: the engine never passes them."""
    # An async workflow's runner wraps the function: the signature read is the function's.
    problem = call_problem(definition.run, 2)
    if problem is None:
        return None
    target = definition.target if definition.target is not None else definition.run
    if isinstance(target, type):
        run = getattr(target, "run", None)
        given = f"{_origin(definition)}.run{inspect.signature(run) if run else '()'}"
        expected = "def run(self, ctx, input)"
    else:
        given = f"{_origin(definition)}{inspect.signature(target)}"
        expected = f"def {getattr(target, '__name__', 'name')}(ctx, input)"
    return (
        f"@workflow({definition.name!r}) decorates {given}, but the engine calls it with "
        f"(ctx, input) and it {problem}. Define it as {expected}."
    )


def workflow(
    name: str,
    *,
    version: int = 1,
    timeout: Duration | None = None,
    concurrency: Concurrency | Sequence[Concurrency] | None = None,
    rate_limit: RateLimit | Sequence[RateLimit] | None = None,
    schedules: Sequence[Schedule] = (),
    tags: Sequence[str] | None = None,
    queue: str = DEFAULT_QUEUE,
    debounce: Duration | None = None,
    debounce_timeout: Duration | None = None,
    fair_key: Callable[[Any], str | None] | None = None,
) -> Callable[[Any], Workflow]:
    """Register a function `(ctx, input)`, or a class with `run(self, ctx, input)`, as a workflow.

    `tags`: static tags every instance of this version gets, with those its start gives
    (TypeError or ValueError for tags that are not strings, empty, too long or too many).
    `queue`: the queue its instances go to unless start() names another; workers started with
    `--queue` claim only theirs (TypeError or ValueError for a name that is not a short word).
    `debounce` and `debounce_timeout`: the debounce of every start with an id that gives none
    (see start(); ValueError for a duration that is not positive). `fair_key`: a function of
    the input that returns the key its instance shares the workers with (a tenant's id, say),
    or None for no key; claims take the keys in turn (TypeError for one that is not callable).
    """
    if callable(name):
        raise TypeError(
            f'@workflow needs the workflow\'s name: use @workflow("name") above '
            f"def {getattr(name, '__name__', 'name')}(ctx, input), not a bare @workflow."
        )
    if not isinstance(name, str) or not name:
        raise ValueError("A workflow needs a non-empty name.")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise ValueError(f"Workflow {name!r}: version must be a positive integer, not {version!r}.")
    run_timeout = None if timeout is None else parse_duration(timeout, f"Workflow {name!r} timeout")
    limits = _as_tuple(concurrency, Concurrency)
    rates = _as_tuple(rate_limit, RateLimit)
    check_queue(queue, f"Workflow {name!r}: queue")
    debounced = check_debounce(debounce, debounce_timeout, f"Workflow {name!r}: ")
    static_tags = tuple(check_tags(tags, f"Workflow {name!r}: tags")) if tags is not None else ()
    if fair_key is not None and not callable(fair_key):
        raise TypeError(
            f"Workflow {name!r}: fair_key must be a function of the input that returns the "
            f"key, not {fair_key!r}. For one key for every instance, write "
            f"fair_key=lambda input: {fair_key!r}."
        )
    for schedule in schedules:
        if not isinstance(schedule, Schedule):
            raise ValueError(
                f"Workflow {name!r}: schedules takes Schedule objects, got {schedule!r}."
            )

    def decorate(target: Any) -> Workflow:
        if isinstance(target, type):
            runner = target()
            if not callable(getattr(runner, "run", None)):
                raise ValueError(
                    f"Workflow {name!r}: the class {target.__name__} needs a run(ctx, input) method."
                )
            run = runner.run
        elif callable(target):
            run = target
        else:
            raise ValueError(
                f"@workflow({name!r}) decorates a function or a class, not {target!r}."
            )
        problem = signature_problem(Workflow(name=name, version=version, run=run, target=target))
        if problem is not None:
            raise TypeError(problem)
        if inspect.iscoroutinefunction(run):  # an async def workflow (or `async def run`)
            run = workflow_runner(run)
        definition = Workflow(
            name=name,
            version=version,
            run=run,
            timeout=run_timeout,
            concurrency=limits,
            rate_limit=rates,
            schedules=tuple(schedules),
            tags=static_tags,
            queue=queue,
            debounce=debounced[0],
            debounce_timeout=debounced[1],
            fair_key=fair_key,
            target=target,
        )
        registry.register(definition)
        return definition

    return decorate
