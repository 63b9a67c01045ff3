"""W004: atomic steps in a workflow whose DATABASE is not "default"."""

from __future__ import annotations

from django.test import override_settings

from django_workflows.checks import check_definitions


def ids(problems):
    return [problem.id for problem in problems]


def test_atomic_steps_on_another_alias_than_default_are_warned_about(define):
    @define("atomic-elsewhere")
    def elsewhere(ctx, input):
        return ctx.step("charge", lambda step: 1, atomic=True)

    with override_settings(DJANGO_WORKFLOWS={"DATABASE": "workflows"}):
        problems = [
            p
            for p in check_definitions()
            if p.id == "django_workflows.W004" and "'atomic-elsewhere'" in p.msg
        ]
    assert len(problems) == 1
    assert "'workflows'" in problems[0].msg


def test_no_warning_on_the_default_alias_or_without_atomic_steps(define):
    @define("atomic-here")
    def here(ctx, input):
        return ctx.step("charge", lambda step: 1, atomic=True)

    @define("plain-elsewhere")
    def plain(ctx, input):
        return ctx.step("charge", lambda step: 1)

    assert "django_workflows.W004" not in ids(check_definitions())
    with override_settings(DJANGO_WORKFLOWS={"DATABASE": "workflows"}):
        warned = [p.msg for p in check_definitions() if p.id == "django_workflows.W004"]
    assert not any("plain-elsewhere" in message for message in warned)
    assert any("atomic-here" in message for message in warned)
