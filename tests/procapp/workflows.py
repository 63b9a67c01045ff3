"""Workflows run by real `runworkflows` processes in the tests."""

from __future__ import annotations

import os
import time
from typing import Any

from django.db.models import F
from django.db.models.signals import post_save

from django_workflows import start_on, workflow

from .models import Charge, Signup, StepRun


def recorded(instance_id: str, name: str, seconds: float, *, stoppable: bool = True):
    def run(step: Any) -> Any:
        attempt = StepRun.objects.create(
            instance_id=instance_id, step=name, pid=os.getpid(), started=time.time()
        )
        if not stoppable:
            time.sleep(seconds)  # a step that never looks at step.cancelled
        elif step.cancelled.wait(seconds):
            raise RuntimeError(f"{name} stopped: the worker is shutting down")
        if name == "charge":
            charge, created = Charge.objects.get_or_create(
                key=step.idempotency_key, defaults={"order_id": instance_id}
            )
            if not created:
                Charge.objects.filter(pk=charge.pk).update(requests=F("requests") + 1)
        StepRun.objects.filter(pk=attempt.pk).update(finished=time.time())
        return {"step": name, "pid": os.getpid()}

    return run


@workflow("process-order")
def process_order(ctx: Any, input: dict[str, Any]) -> dict[str, Any]:
    seconds = input.get("seconds", 0.05)
    stoppable = input.get("stoppable", True)
    charge = ctx.step("charge", recorded(ctx.instance_id, "charge", seconds, stoppable=stoppable))
    ctx.step("reserve", recorded(ctx.instance_id, "reserve", seconds))
    ctx.step("ship", recorded(ctx.instance_id, "ship", seconds))
    return {"charged_by": charge["pid"]}


def noted(path: str, instance_id: str, what: str, seconds: float):
    """A step (or compensation) that touches no database: it notes each run of its body in the
    file `path`, a line `<instance> <what> <time.time()>` appended whole."""

    def run(*args: Any) -> Any:
        with open(path, "a") as notes:
            notes.write(f"{instance_id} {what} {time.time()!r}\n")
        time.sleep(seconds)
        return what

    return run


@workflow("storm-order")
def storm_order(ctx: Any, input: dict[str, Any]) -> str:
    """Three steps that cannot fail, each with a compensation that must never run."""
    path, seconds = input["notes"], input.get("seconds", 0.05)
    for name in ("charge", "reserve", "ship"):
        ctx.step(
            name,
            noted(path, ctx.instance_id, name, seconds),
            compensate=noted(path, ctx.instance_id, f"undo-{name}", 0),
        )
    return "done"


@start_on(
    post_save,
    sender=Signup,
    id=lambda instance, **kw: f"welcome-{instance.pk}",
    input=lambda instance, **kw: {"email": instance.email},
    when=lambda created, **kw: created,
)
@workflow("welcome")
def welcome(ctx: Any, input: dict[str, Any]) -> str:
    """Started by a Signup's post_save, in whichever process saves it (a web process too)."""
    return f"welcome {input['email']}"


def charge_once(instance_id: str):
    """An atomic step's function: a StepRun row for its attempt, and the order's Charge."""

    def run(step: Any) -> Any:
        StepRun.objects.create(
            instance_id=instance_id, step="charge", pid=os.getpid(), started=time.time()
        )
        charge, created = Charge.objects.get_or_create(
            key=step.idempotency_key, defaults={"order_id": instance_id}
        )
        if not created:
            Charge.objects.filter(pk=charge.pk).update(requests=F("requests") + 1)
        return {"charge": charge.pk, "pid": os.getpid()}

    return run


@workflow("atomic-order")
def atomic_order(ctx: Any, input: dict[str, Any]) -> dict[str, Any]:
    """One atomic step that writes the order's charge, then one that is not."""
    charge = ctx.step("charge", charge_once(ctx.instance_id), atomic=True)
    ctx.step("ship", lambda step: "shipped")
    return charge


@workflow("wake-on-signal")
def wake_on_signal(ctx: Any, input: dict[str, Any]) -> str:
    """Suspends until signal "go" (keyed by its id), then notes a step that ran after it."""
    ctx.wait_for_signal("go", "go", key=ctx.instance_id)
    ctx.step("after", recorded(ctx.instance_id, "after", 0))
    return "woken"


@workflow("wake-on-update")
def wake_on_update(ctx: Any, input: dict[str, Any]) -> str:
    """Suspends until update "go", then notes a step that ran after it."""
    ctx.wait_for_update("go")
    ctx.step("after", recorded(ctx.instance_id, "after", 0))
    return "woken"
