"""Step middleware for the tests, named by dotted path in STEP_MIDDLEWARE."""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

from django_workflows import WorkflowInterrupt

seen: list[tuple[str, Any]] = []  # what the recording middleware saw, in order


def outer(call_next):
    def handler(invocation):
        seen.append(("outer", invocation))
        result = call_next(invocation)
        seen.append(("outer-after", result))
        return result

    return handler


def inner(call_next):
    def handler(invocation):
        seen.append(("inner", invocation))
        result = call_next(invocation)
        seen.append(("inner-after", result))
        return result

    return handler


def doubling(call_next):
    def handler(invocation):
        result = call_next(invocation)
        return result * 2 if isinstance(result, int) else result

    return handler


def refusing_first_attempts(call_next):
    def handler(invocation):
        if invocation.attempt < 3:
            raise RuntimeError(f"refused attempt {invocation.attempt}")
        return call_next(invocation)

    return handler


def swallowing(call_next):
    def handler(invocation):
        try:
            return call_next(invocation)
        except WorkflowInterrupt:  # what the rule is about: the engine interrupts anyway
            return "swallowed"

    return handler


def gives_none(call_next):
    return None


not_callable = 42


current_tenant: ContextVar[str | None] = ContextVar("current_tenant", default=None)


def tenant_context(call_next):
    """The how-to's tenant middleware: the tenant is the instance id's prefix."""

    def handler(invocation):
        tenant, _, _ = invocation.instance_id.partition(":")
        token = current_tenant.set(tenant)
        try:
            return call_next(invocation)
        finally:
            current_tenant.reset(token)

    return handler
