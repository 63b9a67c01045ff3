"""A failed step's traceback and log lines in a real browser (Debian's chromium, as
tests/admin/test_browser.py): collapsed until clicked, then read. It takes the screenshot that
docs/reference/admin.md shows: written when it is missing, or replaced with
UPDATE_SCREENSHOTS=1."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

import django_workflows as wf
from django_workflows import Retry
from tests.admin.test_browser import browser, log_in  # noqa: F401 - the fixture

pytestmark = pytest.mark.django_db(transaction=True)

SCREENSHOT = Path(__file__).resolve().parents[2] / "docs" / "_static" / "admin-step-traceback.png"


def vat_rate(country):
    rates = {"FR": 20, "DE": 19}
    return rates[country]


def render_receipt(step, order):
    step.log.info("rendering the receipt of order %s", order["id"])
    step.log.warning("no VAT rate cached for %s; reading the table", order["country"])
    return {"vat": vat_rate(order["country"]), "total": order["total"]}


def test_support_opens_a_failed_steps_traceback_and_reads_its_log(
    browser,  # noqa: F811
    live_server,
    workflow_clock,
    define,
    django_user_model,
    tmp_path,
):
    from selenium.webdriver.common.by import By

    @define("order-receipt")
    def run(ctx, order):
        ctx.step("load-order", lambda step: step.log.info("order %s loaded", order["id"]))
        return ctx.step(
            "render-receipt",
            lambda step: render_receipt(step, order),
            retry=Retry(attempts=2, delay="0s"),
        )

    wf.start("order-receipt", {"id": "7c21", "country": "BE", "total": 2499}, id="receipt-7c21")
    wf.drain()
    assert wf.get_status("receipt-7c21").status == "failed"
    django_user_model.objects.create_superuser("admin", "admin@example.com", "admin-password")

    log_in(browser, live_server, "admin", "admin-password")
    browser.get(f"{live_server.url}/admin/django_workflows/workflowinstance/receipt-7c21/change/")
    row = browser.find_element(By.CSS_SELECTOR, '.dw-timeline .dw-row[data-entry="render-receipt"]')
    traceback = row.find_element(By.CSS_SELECTOR, "details.dw-traceback")
    code = traceback.find_element(By.TAG_NAME, "pre")
    assert not code.is_displayed()  # collapsed
    traceback.find_element(By.TAG_NAME, "summary").click()
    assert code.is_displayed()
    assert "in vat_rate" in code.text and code.text.endswith("KeyError: 'BE'")
    assert "django_workflows/engine" not in code.text  # the step's frames, not the engine's
    log = row.find_element(By.CSS_SELECTOR, "details.dw-logs")
    assert log.is_displayed()
    assert "no VAT rate cached for BE; reading the table" in log.text

    browser.set_window_size(1200, 2400)  # the whole timeline in the viewport
    timeline = browser.find_element(By.CSS_SELECTOR, ".dw-timeline-module")
    browser.execute_script("arguments[0].scrollIntoView();", timeline)
    assert timeline.screenshot(str(tmp_path / "shot.png"))
    if os.environ.get("UPDATE_SCREENSHOTS") == "1" or not SCREENSHOT.exists():
        shutil.copyfile(tmp_path / "shot.png", SCREENSHOT)
