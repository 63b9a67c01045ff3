"""The ctx of an async def workflow: the same calls as WorkflowContext, each awaited; the work
runs on the thread driving the workflow's coroutine (coroutines.py), never on the loop. Async
step, compensation and dispatch functions run on the loop; sync ones on the engine's thread."""

from __future__ import annotations

import functools
import inspect
import threading
from collections.abc import Callable, Coroutine
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..durations import Duration
from ..errors import WorkflowDefinitionError
from .coroutines import call, drive, in_thread
from .threads import OwnerCalls

if TYPE_CHECKING:
    from ..definitions import ScheduleOccurrence, WorkflowSignal
    from ..results import WaitOutcome
    from .children import ChildHandle
    from .context import WorkflowContext
    from .stepcontext import StepContext
    from .streams import Stream
    from .waits import SignalCondition, TimerCondition
    from .webhooks import Webhook

_SAME: Any = object()  # continue_as_new(): this run's input


class AsyncChildHandle:
    """A child started by `await ctx.start_child()`: `await handle.result()`."""

    def __init__(self, handle: ChildHandle):
        self._handle = handle
        self.id = handle.id
        self.workflow = handle.workflow

    def __repr__(self) -> str:
        return f"AsyncChildHandle(id={self.id!r}, workflow={self.workflow!r})"

    def condition(self) -> Any:
        """The condition for wait_for_any(): the child's end."""
        return self._handle.condition()

    async def result(self) -> Any:
        """Wait for the child's end: its output, or ChildWorkflowFailedError."""
        return await call(self._handle.result)


class AsyncWebhook:
    """A webhook of an async workflow (`await ctx.webhook(name)`): `await hook.wait()`."""

    def __init__(self, hook: Webhook):
        self._hook = hook
        self.token = hook.token
        self.url = hook.url

    def __repr__(self) -> str:
        return repr(self._hook).replace("Webhook", "AsyncWebhook", 1)

    async def wait(self, timeout: Duration | None = None) -> Any:
        """Suspend until the URL receives a POST: its JSON body; None once `timeout` passes."""
        return await call(self._hook.wait, timeout)


class AsyncStream:
    """A stream of an async workflow (`ctx.stream(name)`): `await stream.write(value)`,
    `await stream.close()`."""

    def __init__(self, stream: Stream):
        self._stream = stream
        self.name = stream.name

    def __repr__(self) -> str:
        return f"<AsyncStream {self.name!r}>"

    async def write(self, value: Any) -> None:
        """Append `value` (JSON) to the stream, exactly once."""
        await call(self._stream.write, value)

    async def close(self) -> None:
        """End the stream."""
        await call(self._stream.close)


class AsyncWorkflowContext:
    """`ctx` of an async def workflow: WorkflowContext's calls, awaited."""

    def __init__(self, ctx: WorkflowContext):
        self._ctx = ctx
        from .context import execution_of  # reads the models: not at this module's import

        self._x = execution_of(ctx)
        self.instance_id: str = ctx.instance_id
        self.workflow: str = ctx.workflow
        self.version: int = ctx.version
        self.run: int = ctx.run
        self.generation: int = ctx.generation
        self.worker_id: str | None = ctx.worker_id
        self.schedule: ScheduleOccurrence | None = ctx.schedule

    # -- steps ---------------------------------------------------------------------------------

    async def step(
        self,
        name: str,
        fn: Callable[[StepContext], Any],
        *,
        retry: Any = None,
        timeout: Duration | None = None,
        heartbeat_timeout: Duration | None = None,
        compensate: Callable[[Any, StepContext], Any] | None = None,
        compensate_retry: Any = None,
        atomic: bool = False,
    ) -> Any:
        """Run `fn(step)` (async or sync) once and journal its result, as ctx.step() does."""
        return await call(
            self._ctx.step,
            name,
            in_thread(self._x, fn),
            retry=retry,
            timeout=timeout,
            heartbeat_timeout=heartbeat_timeout,
            compensate=None if compensate is None else in_thread(self._x, compensate),
            compensate_retry=compensate_retry,
            atomic=atomic,
        )

    async def task(
        self,
        name: str,
        dispatch: Callable[[StepContext], Any],
        *,
        timeout: Duration | None = None,
        retry: Any = None,
    ) -> Any:
        """Run `dispatch(step)` (async or sync) once as a step, then wait for complete_task()."""
        return await call(
            self._ctx.task, name, in_thread(self._x, dispatch), timeout=timeout, retry=retry
        )

    # -- time, signals, updates, webhooks ------------------------------------------------------

    async def sleep(
        self, name: str, duration: Duration | None = None, *, until: datetime | None = None
    ) -> None:
        """Park the instance for `duration`, or until the aware datetime `until`."""
        await call(self._ctx.sleep, name, duration, until=until)

    def timer(
        self, duration: Duration | None = None, *, until: datetime | None = None
    ) -> TimerCondition:
        """A timer condition for wait_for_any() (not awaited: it only describes the wait)."""
        return self._ctx.timer(duration, until=until)

    def signal_wait(
        self,
        signal: WorkflowSignal | str,
        *,
        key: str | None = None,
        match: Callable[[Any], bool] | None = None,
    ) -> SignalCondition:
        """A signal condition for wait_for_any() (not awaited: it only describes the wait)."""
        return self._ctx.signal_wait(signal, key=key, match=match)

    def update_wait(self, name: str) -> SignalCondition:
        """A condition for wait_for_any(): update `name` (not awaited)."""
        return self._ctx.update_wait(name)

    async def wait_for_signal(
        self,
        name: str,
        signal: WorkflowSignal | str,
        *,
        key: str | None = None,
        timeout: Duration | None = None,
        match: Callable[[Any], bool] | None = None,
    ) -> Any:
        """Wait for `signal` with `key`; its payload, or None once `timeout` passes."""
        return await call(
            self._ctx.wait_for_signal, name, signal, key=key, timeout=timeout, match=match
        )

    async def wait_for_any(
        self, name: str, conditions: dict[str, Any] | None = None, /, **more: Any
    ) -> WaitOutcome:
        """Wait for whichever condition happens first; WaitOutcome(key, value)."""
        found = {
            key: value._handle if isinstance(value, AsyncChildHandle) else value
            for key, value in {**(conditions or {}), **more}.items()
        }
        return await call(self._ctx.wait_for_any, name, found)

    async def wait_for_update(self, name: str, *, timeout: Duration | None = None) -> Any:
        """Wait for update `name`: its argument, or None once `timeout` passes."""
        return await call(self._ctx.wait_for_update, name, timeout=timeout)

    async def webhook(self, name: str) -> AsyncWebhook:
        """A one-shot URL whose JSON POST `await hook.wait()` returns."""
        return AsyncWebhook(await call(self._ctx.webhook, name))

    async def breakpoint(self, name: str) -> None:
        """Suspend until django_workflows.resume() continues it."""
        await call(self._ctx.breakpoint, name)

    # -- children ------------------------------------------------------------------------------

    async def start_child(
        self, workflow: Any, input: Any = None, **options: Any
    ) -> AsyncChildHandle:
        """Start a child workflow (once), as ctx.start_child() does; its handle."""
        return AsyncChildHandle(await call(self._ctx.start_child, workflow, input, **options))

    async def execute_child(self, workflow: Any, input: Any = None, **options: Any) -> Any:
        """start_child(), then wait for the child's end: its output."""
        return await (await self.start_child(workflow, input, **options)).result()

    # -- structure -----------------------------------------------------------------------------

    async def gather(self, *branches: Coroutine[Any, Any, Any] | Callable[[], Any]) -> list[Any]:
        """Run coroutines (or async functions of no argument) concurrently, each a branch of
        the workflow awaiting its own ctx calls; their results, in argument order."""
        coroutines: list[Coroutine[Any, Any, Any]] = []
        for branch in branches:
            if inspect.iscoroutinefunction(branch):
                branch = branch()  # type: ignore[operator]
            if not inspect.iscoroutine(branch):
                for started in coroutines:
                    started.close()
                raise WorkflowDefinitionError(
                    f"gather() in an async workflow takes coroutines, not {branch!r}."
                )
            coroutines.append(branch)
        return await call(self._ctx.gather, *[functools.partial(_branch, c) for c in coroutines])

    async def commit(self, name: str) -> None:
        """The point of no return: discard the compensations registered so far."""
        await call(self._ctx.commit, name)

    async def fail(self, message: str) -> None:
        """Fail the instance: its compensations run and it ends `failed`."""
        await call(self._ctx.fail, message)

    async def continue_as_new(
        self, input: Any = _SAME, *, version: int | str | None = None
    ) -> None:
        """End this run and start the instance over with `input` (default: this run's)."""
        args = () if input is _SAME else (input,)
        await call(self._ctx.continue_as_new, *args, version=version)

    async def set_value(self, name: str, value: Any) -> None:
        """Publish `value` as the value `name`."""
        await call(self._ctx.set_value, name, value)

    def stream(self, name: str) -> AsyncStream:
        """The instance's stream `name`; its writes and close are awaited."""
        return AsyncStream(self._ctx.stream(name))

    async def set_attributes(self, **values: Any) -> None:
        """Set search attributes, journaled."""
        await call(self._ctx.set_attributes, **values)

    async def set_status(self, value: Any) -> None:
        """Set the custom status, written with the next write."""
        await call(self._ctx.set_status, value)

    async def patched(self, patch_id: str) -> bool:
        """Whether to take the new branch of the change `patch_id`."""
        return bool(await call(self._ctx.patched, patch_id))

    async def deprecate_patch(self, patch_id: str) -> None:
        """The change `patch_id` is the only branch now."""
        await call(self._ctx.deprecate_patch, patch_id)

    async def now(self) -> datetime:
        """The engine clock's time, journaled."""
        return await call(self._ctx.now)  # type: ignore[no-any-return]

    async def random(self) -> float:
        """A random float in [0, 1), journaled."""
        return await call(self._ctx.random)  # type: ignore[no-any-return]

    async def uuid(self) -> str:
        """A random UUID as a string, journaled."""
        return await call(self._ctx.uuid)  # type: ignore[no-any-return]


def _branch(coroutine: Coroutine[Any, Any, Any]) -> Any:
    """A gather branch's thread: drive its coroutine, running its ctx calls here."""
    return drive(OwnerCalls(threading.get_ident()), coroutine)


def workflow_runner(fn: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    """The sync `run(ctx, input)` the engine calls for the async workflow `fn(ctx, input)`:
    it drives the coroutine, with an AsyncWorkflowContext, from the execution's thread."""

    @functools.wraps(fn)
    def run(ctx: WorkflowContext, input: Any) -> Any:
        from .context import execution_of  # reads the models: not at this module's import

        return drive(execution_of(ctx).lease.calls, fn(AsyncWorkflowContext(ctx), input))

    run.is_async = True  # type: ignore[attr-defined]
    return run
