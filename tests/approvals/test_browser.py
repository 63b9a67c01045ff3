"""A manager approves a refund at its breakpoint with the admin's Resume action, in a real
browser; the screenshot of the waiting instance is the one the tutorial shows (written when
missing, or replaced with UPDATE_SCREENSHOTS=1)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

import django_workflows as wf
from tests.admin.test_browser import browser, log_in  # noqa: F401 (browser is a fixture)

pytestmark = pytest.mark.django_db(transaction=True)

SCREENSHOT = Path(__file__).resolve().parents[2] / "docs" / "_static" / "admin-breakpoint.png"


def test_a_manager_resumes_a_refund_at_its_breakpoint(
    browser,  # noqa: F811
    live_server,
    workflow_clock,
    define,
    django_user_model,
    tmp_path,
):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    @define("refund-charge")
    def refund_charge(ctx, request):
        ctx.step("check-charge", lambda step: {"charge_id": request["charge_id"]})
        if request["amount"] > 10_000:
            ctx.set_status("awaiting-approval")
            ctx.breakpoint("manager-approval")
        return ctx.step("refund", lambda step: {"refund_id": "re_1"})

    wf.start("refund-charge", {"charge_id": "ch_1", "amount": 12_000}, id="refund-ch_1")
    wf.drain()
    workflow_clock.advance("2h")  # the manager comes to it two hours later
    django_user_model.objects.create_superuser("manager", "m@example.com", "manager-password")

    log_in(browser, live_server, "manager", "manager-password")
    page = f"{live_server.url}/admin/django_workflows/workflowinstance/refund-ch_1/change/"
    browser.get(page)
    assert browser.find_element(By.ID, "journal-timeline").is_displayed()
    pending = browser.find_element(By.CSS_SELECTOR, '.dw-row[data-entry="manager-approval"]')
    assert pending.is_displayed()
    assert browser.find_element(By.CSS_SELECTOR, "button.dw-action-resume").is_displayed()
    height = browser.execute_script("return document.documentElement.scrollHeight")
    browser.set_window_size(1400, min(max(height, 900), 4000))
    assert browser.save_screenshot(str(tmp_path / "admin-breakpoint.png"))
    if os.environ.get("UPDATE_SCREENSHOTS") == "1" or not SCREENSHOT.exists():
        shutil.copyfile(tmp_path / "admin-breakpoint.png", SCREENSHOT)

    browser.get(f"{live_server.url}/admin/django_workflows/workflowinstance/")
    browser.find_element(
        By.CSS_SELECTOR, 'input[name="_selected_action"][value="refund-ch_1"]'
    ).click()
    Select(browser.find_element(By.NAME, "action")).select_by_value("resume")
    browser.find_element(By.CSS_SELECTOR, "button[name=index]").click()
    message = browser.find_element(By.CSS_SELECTOR, "ul.messagelist li").text
    assert message == "Resumed 1 instance."
    wf.drain()
    status = wf.get_status("refund-ch_1")
    assert (status.status, status.output) == ("completed", {"refund_id": "re_1"})
