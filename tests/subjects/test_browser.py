"""An order's admin page with its workflow instances (WorkflowInstanceInline), in a real
browser; its screenshot is the one docs/reference/admin.md shows (written when missing, or
replaced with UPDATE_SCREENSHOTS=1)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

import django_workflows as wf
from tests.admin.conftest import order
from tests.admin.test_browser import browser, log_in  # noqa: F401 (browser is a fixture)
from tests.testapp.models import Order

pytestmark = pytest.mark.django_db(transaction=True)

SCREENSHOT = Path(__file__).resolve().parents[2] / "docs" / "_static" / "admin-subject.png"


def test_an_orders_page_lists_its_instances_and_links_to_each(
    browser,  # noqa: F811
    live_server,
    workflow_clock,
    world,
    review,
    django_user_model,
    tmp_path,
):
    from selenium.webdriver.common.by import By

    subject = Order.objects.create(id="3f9a1c")
    wf.start("flaky", {"user_id": "u_declined"}, id="order-3f9a1c-first-charge", subject=subject)
    wf.drain()
    workflow_clock.advance("10m")
    wf.start("order-fulfilment", order("3f9a1c"), id="order-3f9a1c", subject=subject)
    wf.drain()
    workflow_clock.advance("2h")
    wf.start(review, {"id": "3f9a1c"}, id="order-3f9a1c-review", subject=subject)
    wf.drain()
    django_user_model.objects.create_superuser("admin", "admin@example.com", "admin-password")

    log_in(browser, live_server, "admin", "admin-password")
    browser.get(f"{live_server.url}/admin/testapp/order/3f9a1c/change/")
    inline = browser.find_element(By.CSS_SELECTOR, "fieldset.dw-instances")
    assert inline.is_displayed()
    links = inline.find_elements(By.CSS_SELECTOR, "td.field-instance_link a")
    assert [a.text for a in links] == [
        "order-3f9a1c-review",
        "order-3f9a1c",
        "order-3f9a1c-first-charge",
    ]
    badges = inline.find_elements(By.CSS_SELECTOR, ".dw-badge")
    assert [b.text for b in badges] == ["suspended", "suspended", "failed"]
    assert all(b.value_of_css_property("color") == "rgba(255, 255, 255, 1)" for b in badges)
    offered = inline.find_elements(By.CSS_SELECTOR, ".add-row a, .inline-deletelink")
    assert not [link for link in offered if link.is_displayed()]
    # The instance's name is not repeated beside its link.
    assert not [p for p in inline.find_elements(By.CSS_SELECTOR, "td.original p") if p.text]

    height = browser.execute_script("return document.documentElement.scrollHeight")
    browser.set_window_size(1400, min(max(height, 700), 4000))
    assert browser.save_screenshot(str(tmp_path / "admin-subject.png"))
    if os.environ.get("UPDATE_SCREENSHOTS") == "1" or not SCREENSHOT.exists():
        shutil.copyfile(tmp_path / "admin-subject.png", SCREENSHOT)

    links[1].click()
    subject_link = browser.find_element(By.CSS_SELECTOR, ".field-subject_link a")
    assert subject_link.text == "Order 3f9a1c"
    subject_link.click()
    assert browser.current_url == f"{live_server.url}/admin/testapp/order/3f9a1c/change/"
