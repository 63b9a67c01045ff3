from django.apps import AppConfig


class TestAppConfig(AppConfig):
    """An application for the tests' own models and workflows (its `workflows.py`)."""

    name = "tests.testapp"
    label = "testapp"
    default_auto_field = "django.db.models.BigAutoField"
