"""DJANGO_WORKFLOWS["WEBHOOK"]: validated, a bad value a system check error naming the key."""

from __future__ import annotations

import pytest

from django_workflows.checks import check_settings
from django_workflows.conf import get_settings


def test_the_defaults(settings):
    settings.DJANGO_WORKFLOWS = {}
    webhook = get_settings().webhook
    assert webhook.base_url == ""
    assert webhook.max_bytes == 1_000_000


def test_a_trailing_slash_is_dropped(settings):
    settings.DJANGO_WORKFLOWS = {
        "WEBHOOK": {"BASE_URL": "https://shop.example.com/shop/", "MAX_BYTES": 5000}
    }
    assert get_settings().webhook.base_url == "https://shop.example.com/shop"
    assert get_settings().webhook.max_bytes == 5000


@pytest.mark.parametrize(
    ("webhook", "says"),
    [
        ({"BASE_URL": "shop.example.com"}, "BASE_URL"),
        ({"BASE_URL": "ftp://shop.example.com"}, "BASE_URL"),
        ({"BASE_URL": "https://"}, "BASE_URL"),
        ({"BASE_URL": "https://shop.example.com/?a=1"}, "no query or fragment"),
        ({"BASE_URL": "https://shop.example.com/#top"}, "no query or fragment"),
        ({"BASE_URL": 5}, "BASE_URL"),
        ({"MAX_BYTES": 0}, "MAX_BYTES"),
        ({"MAX_BYTES": "1MB"}, "MAX_BYTES"),
        ({"MAX_BYTES": True}, "MAX_BYTES"),
        ({"MAX_SIZE": 10}, "unknown keys: MAX_SIZE"),
        ("https://shop.example.com", "must be a dict"),
    ],
)
def test_a_bad_value_is_a_system_check_error(settings, webhook, says):
    settings.DJANGO_WORKFLOWS = {"WEBHOOK": webhook}
    with pytest.raises((ValueError, TypeError), match=says):
        get_settings()
    errors = check_settings()
    assert [e.id for e in errors] == ["django_workflows.E001"]
    assert says in errors[0].msg
