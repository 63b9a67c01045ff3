"""The worker's counters and histograms (DJANGO_WORKFLOWS["METRICS"] = True, with the extra
`prometheus`), in a registry of this process's own that `runworkflows --metrics-port` serves:

- `django_workflows_step_attempts_total{workflow,step,outcome}`: each attempt of a step (and
  of a compensation, whose `step` is "$compensate:<name>"), "completed" or "failed";
- `django_workflows_step_seconds{workflow,step}`: how long each of those attempts took;
- `django_workflows_executions_total{workflow,outcome}`: each execution, by the outcome the
  engine gives it ("completed", "suspended", "failed"...);
- `django_workflows_claim_seconds`: how long each of the worker's claims took.

middleware.chain() puts this module's middleware at the inner end of the step middleware while
METRICS is on; the worker times its claims itself. An attempt that an interrupt ends (a
cancellation, the worker's shutdown) is the engine's control flow: it is not counted.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable
from types import ModuleType
from typing import Any

from django.core.exceptions import ImproperlyConfigured

from ..errors import WorkflowInterrupt
from ..middleware import COMPENSATION_PREFIX, ExecutionInvocation, StepInvocation

INSTALL = 'pip install "django-durable-workflows[prometheus]"'
MISSING = (
    "DJANGO_WORKFLOWS['METRICS'] needs the prometheus_client package, which is not installed: "
    f"install the extra `prometheus` ({INSTALL}), or set METRICS to False."
)
# Step attempts last from milliseconds to minutes; claims take a few milliseconds.
STEP_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300)
CLAIM_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5)


def client() -> ModuleType:
    """prometheus_client; ImproperlyConfigured saying how to install it when it is missing."""
    try:
        import prometheus_client
    except ImportError as error:
        raise ImproperlyConfigured(MISSING) from error
    return prometheus_client


def installed() -> bool:
    """Whether prometheus_client can be imported."""
    try:
        client()
    except ImproperlyConfigured:
        return False
    return True


class Metrics:
    """This process's counters and histograms, in `registry` (not prometheus_client's global
    one). Each (workflow, step) keeps its labelled children, so an attempt costs two
    dictionary look-ups besides the counting itself."""

    def __init__(self) -> None:
        prometheus = client()
        self.registry = prometheus.CollectorRegistry(auto_describe=True)
        self.step_attempts = prometheus.Counter(
            "django_workflows_step_attempts",
            "Step and compensation attempts, by outcome (completed or failed).",
            ["workflow", "step", "outcome"],
            registry=self.registry,
        )
        self.step_seconds = prometheus.Histogram(
            "django_workflows_step_seconds",
            "How long step and compensation attempts took, in seconds.",
            ["workflow", "step"],
            buckets=STEP_BUCKETS,
            registry=self.registry,
        )
        self.executions = prometheus.Counter(
            "django_workflows_executions",
            "Executions of instances, by outcome (completed, suspended, failed...).",
            ["workflow", "outcome"],
            registry=self.registry,
        )
        self.claim_seconds = prometheus.Histogram(
            "django_workflows_claim_seconds",
            "How long the worker's claims of due instances took, in seconds.",
            buckets=CLAIM_BUCKETS,
            registry=self.registry,
        )
        self._lock = threading.Lock()
        self._steps: dict[tuple[str, str], tuple[Any, Any, Any]] = {}

    def _children(self, workflow: str, step: str) -> tuple[Any, Any, Any]:
        """The (completed, failed, seconds) children of one step of one workflow."""
        children = self._steps.get((workflow, step))
        if children is None:
            with self._lock:
                children = (
                    self.step_attempts.labels(workflow, step, "completed"),
                    self.step_attempts.labels(workflow, step, "failed"),
                    self.step_seconds.labels(workflow, step),
                )
                self._steps[(workflow, step)] = children
        return children

    def attempt(self, workflow: str, step: str, completed: bool, seconds: float) -> None:
        """Count one attempt of `step` of `workflow` that took `seconds`."""
        done, failed, timing = self._children(workflow, step)
        (done if completed else failed).inc()
        timing.observe(seconds)

    def execution(self, workflow: str, outcome: str) -> None:
        """Count one execution of an instance of `workflow` that ended `outcome`."""
        self.executions.labels(workflow, outcome).inc()

    def claim(self, seconds: float) -> None:
        """Observe one claim that took `seconds`."""
        self.claim_seconds.observe(seconds)


@functools.cache
def metrics() -> Metrics:
    """This process's metrics, made at first use; ImproperlyConfigured without the extra."""
    return Metrics()


class MetricsMiddleware:
    """The step middleware that counts and times step attempts and counts executions."""

    def __init__(self, call_next: Callable[[StepInvocation], Any]):
        self.call_next = call_next
        self.metrics = metrics()

    def __call__(self, invocation: StepInvocation) -> Any:
        step = invocation.step
        if invocation.kind != "step":
            step = COMPENSATION_PREFIX + step
        started = time.perf_counter()
        try:
            result = self.call_next(invocation)
        except WorkflowInterrupt:
            raise
        except BaseException:
            self.metrics.attempt(invocation.workflow, step, False, time.perf_counter() - started)
            raise
        self.metrics.attempt(invocation.workflow, step, True, time.perf_counter() - started)
        return result

    def process_execution(self, invocation: ExecutionInvocation, run: Callable[[], str]) -> str:
        """Run one execution and count it by its outcome ("error" if it raised)."""
        outcome = "error"
        try:
            outcome = run()
        except KeyboardInterrupt:
            outcome = "interrupted"
            raise
        finally:
            self.metrics.execution(invocation.workflow, outcome)
        return outcome


def middleware(call_next: Callable[[StepInvocation], Any]) -> MetricsMiddleware:
    """The factory middleware.chain() adds while METRICS is on."""
    return MetricsMiddleware(call_next)
