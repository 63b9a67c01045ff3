from django.apps import AppConfig


class BenchAppConfig(AppConfig):
    """The benchmark's workflows (its `workflows.py`)."""

    name = "benchmarks.benchapp"
    label = "benchapp"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        import os
        import sys

        # BENCH_SCHEDULE_TICKS=<path> (benchmarks/schedule_scale.py): a runworkflows process
        # notes each schedule tick's wall time, its thread's CPU time and what it handled.
        if os.environ.get("BENCH_SCHEDULE_TICKS") and "runworkflows" in sys.argv:
            from benchmarks import schedule_ticks

            schedule_ticks.install(os.environ["BENCH_SCHEDULE_TICKS"])
