from django.apps import AppConfig


class ProcappConfig(AppConfig):
    name = "tests.procapp"
    label = "procapp"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from . import pause

        pause.install()  # only where DW_PAUSE_BEFORE_COMMIT is set (a crash test's worker)
