"""async def workflows: their coroutines run on one event loop per process, in a thread of its
own beside the worker's thread pool; the ctx calls they await run on the thread that drives
them (the execution's own, or a gather branch's), where the engine and the store run as they
do for a sync workflow, never on the loop (Django's ORM refuses a running event loop)."""

from __future__ import annotations

import asyncio
import functools
import inspect
import os
import threading
from collections.abc import Callable, Coroutine
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from ..errors import WorkflowDefinitionError
from .threads import OwnerCalls

if TYPE_CHECKING:
    from .surface import Surface

_driven: ContextVar[tuple[OwnerCalls, asyncio.Task[Any] | None] | None] = ContextVar(
    "django_workflows_driven", default=None
)
"""The relay of the thread driving this coroutine, and the asyncio Task it drives: a task the
workflow creates copies the context, so a ctx call checks that it runs in that Task itself."""
_loop: tuple[int, asyncio.AbstractEventLoop] | None = None
_loop_lock = threading.Lock()


def event_loop() -> asyncio.AbstractEventLoop:
    """The process's loop for async workflows and steps, started in a daemon thread on first
    use (and again in a forked child, whose copy of the thread does not run)."""
    global _loop
    with _loop_lock:
        if _loop is None or _loop[0] != os.getpid() or _loop[1].is_closed():
            loop = asyncio.new_event_loop()
            threading.Thread(
                target=loop.run_forever, name="django_workflows async loop", daemon=True
            ).start()
            _loop = (os.getpid(), loop)
        return _loop[1]


def drive(relay: OwnerCalls, coroutine: Coroutine[Any, Any, Any]) -> Any:
    """On the thread that owns `relay`: run `coroutine` on the loop and run the ctx calls it
    hands over (and, on the execution's thread, the store calls of other threads) until it
    ends; its result, or what it raised."""
    future = asyncio.run_coroutine_threadsafe(_driven_by(relay, coroutine), event_loop())
    future.add_done_callback(lambda _: relay.wake())
    while not future.done():
        relay.serve(1.0)
    return future.result()


async def _driven_by(relay: OwnerCalls, coroutine: Coroutine[Any, Any, Any]) -> Any:
    _driven.set((relay, asyncio.current_task()))  # in this Task's own copy of the context
    return await coroutine


async def call(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Await `fn(*args, **kwargs)` run on the thread driving this coroutine. Raises
    WorkflowDefinitionError when no workflow coroutine drives it, or when it runs in an
    asyncio task the workflow created: its calls would reach the engine in whatever order
    the loop runs them, which a replay need not repeat."""
    driven = _driven.get()
    if driven is None:
        raise WorkflowDefinitionError(
            f"An async ctx call ({_name(fn)}) was awaited outside its workflow's coroutine (in "
            "a loop callback, or after the workflow ended): await ctx calls in the workflow "
            "itself, or pass coroutines to ctx.gather()."
        )
    relay, task = driven
    if asyncio.current_task() is not task:
        raise WorkflowDefinitionError(
            f"An async ctx call ({_name(fn)}) was awaited in an asyncio task the workflow "
            "created (asyncio.create_task(), asyncio.gather() of ctx calls): such tasks reach "
            "the engine in whatever order the loop runs them, which a replay need not repeat. "
            "Await ctx calls in the workflow itself, or run branches with ctx.gather(), which "
            "gives each its place."
        )
    return await asyncio.wrap_future(relay.submit(functools.partial(fn, *args, **kwargs)))


def _name(fn: Callable[..., Any]) -> str:
    return f"{getattr(fn, '__name__', 'a ctx call')}()"


def run_async_fn(x: Surface, fn: Callable[..., Any], *args: Any) -> Any:
    """Run the async step function `fn(*args)` on the loop from the thread the engine runs the
    step on, and wait for it; on the execution's thread, serving the store calls meanwhile.
    The step's timeout cancels the coroutine (StepContext.time_out())."""
    from .stepcontext import StepContext  # reads the models: not at this module's import

    future = asyncio.run_coroutine_threadsafe(fn(*args), event_loop())
    for arg in args:  # the attempt's StepContext: its timeout cancels the coroutine
        if isinstance(arg, StepContext):
            arg.run_coroutine(future.cancel)
    if threading.get_ident() != x.lease.calls.owner:
        return future.result()
    future.add_done_callback(lambda _: x.lease.calls.wake())
    while not future.done():
        x.lease.calls.serve(1.0)
    return future.result()


def in_thread(x: Surface, fn: Callable[..., Any]) -> Callable[..., Any]:
    """A step, compensation or dispatch function for the engine: `fn` itself when sync (the
    engine runs it on its thread, off the loop), or a sync function that runs the async `fn`
    on the loop and returns its result. Its signature is `fn`'s, for the engine's checks."""
    if not inspect.iscoroutinefunction(fn):
        return fn

    @functools.wraps(fn)
    def run(*args: Any) -> Any:
        return run_async_fn(x, fn, *args)

    return run


def refuse_async_fn(x: Surface, fn: Any, what: str) -> None:
    """WorkflowDefinitionError for an async function given to a sync workflow's ctx."""
    if inspect.iscoroutinefunction(fn):
        raise x.guards.define_error(
            WorkflowDefinitionError(
                f"{what} is an async def function, in the sync workflow "
                f"{x.instance.workflow!r}: make the workflow async def (and await its ctx "
                "calls), or the function sync."
            )
        )


def refuse_coroutine(x: Surface, result: Any, what: str) -> None:
    """WorkflowDefinitionError for a sync function that returned a coroutine (never awaited)."""
    if inspect.iscoroutine(result):
        result.close()
        raise x.guards.define_error(
            WorkflowDefinitionError(
                f"{what} returned a coroutine that nothing awaits: make it async def (in an "
                "async def workflow), or return its result."
            )
        )
