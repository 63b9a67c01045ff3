"""OpenTelemetry traces of the workflows, from the API alone (the extra `otel`): switched on by
putting "django_workflows.contrib.opentelemetry.middleware" in STEP_MIDDLEWARE.

- start() stores the caller's trace context (the configured propagator's headers: W3C
  `traceparent`, `tracestate`) with the instance.
- Each execution is a span, `workflow <name>` (kind CONSUMER), linked to the span that called
  start(); its events that no span stands for (a suspension, a compensation beginning, a
  failure...) are span events on it.
- A sleep and a wait are child spans of the execution that went past them, from when they began
  (maybe days before, in an earlier execution) to when they ended; a child's start is a child
  span too.
- Each step attempt and compensation attempt is a child span, `step <name>` or `compensate
  <name>`; a failed one records its exception and has status ERROR.

Four spans per three-step workflow are most of what tracing costs a worker, and each attribute
adds to a span's cost: a span carries what its name and status do not already say.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from django.dispatch import receiver
from opentelemetry import context, propagate, trace
from opentelemetry.trace import Link, SpanKind, Status, StatusCode

from ..errors import WorkflowInterrupt
from ..events import PAYLOAD_DATA, WorkflowEvent, workflow_event
from ..middleware import ExecutionInvocation, StartInvocation, StepInvocation

TRACER_NAME = "django_workflows"

# What an execution returns when the instance did not end well: its span's status is ERROR.
FAILED_OUTCOMES = frozenset({"failed", "compensation_failed", "error", "store-failed"})
# Events a span stands for already: an execution's start and its completion (its
# `workflow.outcome`; the output is not an attribute), a step or compensation attempt's end, and
# the ends of sleeps, waits and child starts (their child spans, below, carry their data).
_NOT_SPAN_EVENTS = frozenset(
    {
        "workflow-started",
        "workflow-resumed",
        "workflow-completed",
        "step-completed",
        "step-failed",
        "step-compensated",
        "sleep-completed",
        "signal-received",
        "signal-timed-out",
        "child-started",
    }
)

# The events that end a sleep, a wait or a child's start, each a child span of the execution:
# its name and the data key that names it.
_CHILD_SPANS = {
    "sleep-completed": ("sleep", "sleep"),
    "signal-received": ("wait", "wait"),
    "signal-timed-out": ("wait", "wait"),
    "child-started": ("start child", "child_workflow"),
}

# The execution span of each instance executing in this process, by instance id: a step
# attempt's span is its child whichever thread runs it (a gather branch, a step's timeout).
_executions: dict[str, tuple[trace.Span, context.Context]] = {}


class TracingMiddleware:
    """The step middleware that traces executions, step attempts and compensations."""

    def __init__(self, call_next: Callable[[StepInvocation], Any]):
        self.call_next = call_next
        self.tracer = trace.get_tracer(TRACER_NAME)

    def __call__(self, invocation: StepInvocation) -> Any:
        execution = _executions.get(invocation.instance_id)
        parent = execution[1] if execution is not None else None
        # The kind is in the span's name; a completed attempt is a span without `error.type`.
        span = self.tracer.start_span(
            f"{'step' if invocation.kind == 'step' else 'compensate'} {invocation.step}",
            context=parent,
            attributes={
                "workflow.step.name": invocation.step,
                "workflow.step.attempt": invocation.attempt,
            },
        )
        token = context.attach(trace.set_span_in_context(span, parent))
        try:
            result = self.call_next(invocation)
        except BaseException as error:
            _failed(span, error, "workflow.step.outcome")
            raise
        finally:
            context.detach(token)
        span.end()
        return result

    def process_start(self, invocation: StartInvocation) -> Mapping[str, str] | None:
        """The caller's trace context, stored with the instance (none outside a span)."""
        carrier: dict[str, str] = {}
        propagate.inject(carrier)
        return carrier

    def process_execution(self, invocation: ExecutionInvocation, run: Callable[[], str]) -> str:
        """Run one execution inside its span."""
        links = None
        if invocation.headers:
            caller = trace.get_current_span(propagate.extract(invocation.headers))
            if caller.get_span_context().is_valid:
                links = [Link(caller.get_span_context())]
        span = self.tracer.start_span(
            f"workflow {invocation.workflow}",
            kind=SpanKind.CONSUMER,
            links=links,
            attributes={
                "workflow.name": invocation.workflow,
                "workflow.version": invocation.version,
                "workflow.instance.id": invocation.instance_id,
                "workflow.run": invocation.run,
            },
        )
        current = trace.set_span_in_context(span)
        _executions[invocation.instance_id] = (span, current)
        token = context.attach(current)
        try:
            outcome = run()
        except BaseException as error:
            _failed(span, error, "workflow.outcome")
            raise
        finally:
            context.detach(token)
            _executions.pop(invocation.instance_id, None)
        span.set_attribute("workflow.outcome", outcome)
        if outcome in FAILED_OUTCOMES:
            span.set_status(Status(StatusCode.ERROR, f"The execution ended {outcome}."))
        span.end()
        return outcome


def middleware(call_next: Callable[[StepInvocation], Any]) -> TracingMiddleware:
    """The factory STEP_MIDDLEWARE names: "django_workflows.contrib.opentelemetry.middleware"."""
    return TracingMiddleware(call_next)


def _failed(span: trace.Span, error: BaseException, outcome_key: str) -> None:
    """End `span` for `error`: an interrupt (a suspension, a cancel) is the engine's control
    flow, not a failure; anything else is recorded, with status ERROR."""
    if isinstance(error, WorkflowInterrupt):
        span.set_attribute(outcome_key, "interrupted")
    else:
        span.set_attributes({outcome_key: "failed", "error.type": type(error).__qualname__})
        span.record_exception(error, escaped=True)
        span.set_status(Status(StatusCode.ERROR, f"{type(error).__name__}: {error}"))
    span.end()


@receiver(workflow_event, dispatch_uid="django_workflows.contrib.opentelemetry")
def _add_span_event(sender: Any, event: WorkflowEvent, **kwargs: Any) -> None:
    """An event of an executing instance as a span event on its execution's span (a
    suspension, a compensation beginning...), or as a child span of it (the end of a sleep, a
    wait or a child's start), unless its span stands for it already."""
    child = _CHILD_SPANS.get(event.type)
    if child is None and event.type in _NOT_SPAN_EVENTS:
        return
    execution = _executions.get(event.id)
    if execution is None:
        return
    payloads = PAYLOAD_DATA.get(event.type, frozenset())
    attributes = {
        f"workflow.{key}": _attribute(value)
        for key, value in event.data.items()
        if key not in payloads and value is not None
    }
    span, parent = execution
    if child is None:
        span.add_event(event.type, attributes=attributes)
        return
    name, data_key = child
    since = event.data.get("since") or event.at
    trace.get_tracer(TRACER_NAME).start_span(
        f"{name} {event.data[data_key]}",
        context=parent,
        start_time=_nanoseconds(since),
        attributes={**attributes, "workflow.outcome": event.type},
    ).end(end_time=_nanoseconds(event.at))


def _nanoseconds(moment: Any) -> int:
    return int(moment.timestamp() * 1_000_000_000)


def _attribute(value: Any) -> str | bool | int | float:
    if isinstance(value, str | bool | int | float):
        return value
    if hasattr(value, "isoformat"):
        return str(value.isoformat())
    return json.dumps(value, default=str, sort_keys=True)
