"""E012: a STEP_MIDDLEWARE path that does not import, is not callable, or gives no handler;
E001 for a setting that is not a list of paths."""

from __future__ import annotations

import pytest

from django_workflows.checks import check_settings


def errors_of(settings, value):
    settings.DJANGO_WORKFLOWS = {
        **(getattr(settings, "DJANGO_WORKFLOWS", None) or {}),
        "STEP_MIDDLEWARE": value,
    }
    return [(error.id, error.msg) for error in check_settings()]


def test_a_path_that_does_not_import_is_an_error_naming_it(settings):
    [(id, message)] = errors_of(settings, ["tests.middleware.handlers.outer", "shop.nowhere.mw"])
    assert id == "django_workflows.E012"
    assert "'shop.nowhere.mw' does not import" in message


def test_a_path_to_something_not_callable_is_an_error_naming_it(settings):
    [(id, message)] = errors_of(settings, ["tests.middleware.handlers.not_callable"])
    assert id == "django_workflows.E012"
    assert "'tests.middleware.handlers.not_callable' is not callable" in message


def test_a_factory_that_gives_no_handler_is_an_error_naming_it(settings):
    [(id, message)] = errors_of(settings, ["tests.middleware.handlers.gives_none"])
    assert id == "django_workflows.E012"
    assert "'tests.middleware.handlers.gives_none' returned None" in message


@pytest.mark.parametrize("value", ["tests.middleware.handlers.outer", [""], [42]])
def test_a_setting_that_is_not_a_list_of_paths_is_e001(settings, value):
    [(id, message)] = errors_of(settings, value)
    assert id == "django_workflows.E001"
    assert "STEP_MIDDLEWARE'] must be a list of dotted paths" in message


def test_importable_middleware_passes_the_checks(settings):
    assert errors_of(settings, ["tests.middleware.handlers.outer"]) == []
