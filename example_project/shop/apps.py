from __future__ import annotations

from django.apps import AppConfig


class ShopConfig(AppConfig):
    """The cat-food shop of the tutorial: orders and the stand-ins for outside services."""

    name = "shop"
    default_auto_field = "django.db.models.BigAutoField"
