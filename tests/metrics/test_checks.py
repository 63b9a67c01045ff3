"""The metrics' settings and their system check: E015 for METRICS on without prometheus_client;
E001 for a METRICS or METRICS_TOKEN of the wrong type."""

from __future__ import annotations

import sys

import pytest

from django_workflows.checks import check_settings


def ids(problems):
    return [problem.id for problem in problems]


def test_metrics_without_the_extra_says_what_is_missing(settings, monkeypatch):
    settings.DJANGO_WORKFLOWS = {"METRICS": True}
    monkeypatch.setitem(sys.modules, "prometheus_client", None)  # as if not installed
    [problem] = check_settings()
    assert problem.id == "django_workflows.E015"
    assert "prometheus_client" in problem.msg
    assert 'pip install "django-durable-workflows[prometheus]"' in problem.hint


def test_metrics_with_the_extra_passes(settings):
    settings.DJANGO_WORKFLOWS = {"METRICS": True, "METRICS_TOKEN": "a-token-for-prometheus"}
    assert check_settings() == []


def test_metrics_off_needs_no_extra(settings, monkeypatch):
    settings.DJANGO_WORKFLOWS = {"METRICS": False}
    monkeypatch.setitem(sys.modules, "prometheus_client", None)
    assert check_settings() == []


@pytest.mark.parametrize(
    "setting, value, message",
    [
        ("METRICS", "yes", "DJANGO_WORKFLOWS['METRICS'] must be True or False, not 'yes'."),
        ("METRICS_TOKEN", 42, "DJANGO_WORKFLOWS['METRICS_TOKEN'] must be a string (or None)"),
    ],
)
def test_a_bad_setting_is_named(settings, setting, value, message):
    settings.DJANGO_WORKFLOWS = {setting: value}
    [problem] = check_settings()
    assert problem.id == "django_workflows.E001"
    assert message in problem.msg
