from django.apps import AppConfig


class ProcappConfig(AppConfig):
    name = "tests.procapp"
    label = "procapp"
    default_auto_field = "django.db.models.BigAutoField"
