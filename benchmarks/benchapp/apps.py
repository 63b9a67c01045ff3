from django.apps import AppConfig


class BenchAppConfig(AppConfig):
    """The benchmark's workflows (its `workflows.py`)."""

    name = "benchmarks.benchapp"
    label = "benchapp"
    default_auto_field = "django.db.models.BigAutoField"
