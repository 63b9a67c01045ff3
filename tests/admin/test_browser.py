"""The admin in a real browser: Debian's chromium and chromedriver against the live server.

CI installs them (`apt-get install chromium chromium-driver`); without them this test fails
rather than skips, so a missing browser cannot pass unnoticed. It also takes the screenshot
of an instance page that docs/reference/admin.md shows: written when it is missing, or
replaced with UPDATE_SCREENSHOTS=1, so ordinary runs leave the working tree clean.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

import django_workflows as wf
from django_workflows.models import WorkflowInstance

from .conftest import order, returned_order, staff_user

pytestmark = pytest.mark.django_db(transaction=True)

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
SCREENSHOT = Path(__file__).resolve().parents[2] / "docs" / "_static" / "admin-instance.png"
FLAGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--window-size=1400,1000",
]


@pytest.fixture
def browser(tmp_path):
    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not Path(p).exists()]
    if missing:
        pytest.fail(
            f"The browser test needs Debian's chromium and chromedriver; missing: "
            f"{', '.join(missing)}. Install them with `apt-get install chromium chromium-driver`."
        )
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        pytest.fail("The browser test needs selenium: pip install -e '.[dev]'.")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in [*FLAGS, f"--user-data-dir={tmp_path / 'chromium-profile'}"]:
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.implicitly_wait(5)
    yield driver
    driver.quit()
    shutil.rmtree(tmp_path / "chromium-profile", ignore_errors=True)


def log_in(browser, live_server, username: str, password: str) -> None:
    from selenium.webdriver.common.by import By

    browser.delete_all_cookies()
    browser.get(f"{live_server.url}/admin/login/")
    browser.find_element(By.NAME, "username").send_keys(username)
    browser.find_element(By.NAME, "password").send_keys(password)
    browser.find_element(By.CSS_SELECTOR, "input[type=submit]").click()
    assert browser.find_element(By.ID, "user-tools").is_displayed()


def test_support_finds_a_failed_instance_sees_its_journal_and_retries_it(
    browser, live_server, workflow_clock, world, django_user_model, tmp_path
):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    wf.start("flaky", {"user_id": "u_declined"}, id="order-declined")
    wf.start("flaky", {}, id="order-paid")
    wf.drain()
    order_id = returned_order(workflow_clock, world)
    django_user_model.objects.create_superuser("admin", "admin@example.com", "admin-password")

    log_in(browser, live_server, "admin", "admin-password")
    browser.get(f"{live_server.url}/admin/django_workflows/workflowinstance/")
    browser.find_element(By.CSS_SELECTOR, 'a[href="?status__exact=failed"]').click()
    rows = browser.find_elements(By.CSS_SELECTOR, "#result_list tbody tr")
    assert [r.find_element(By.CSS_SELECTOR, "th a").text for r in rows] == ["order-declined"]

    browser.find_element(By.LINK_TEXT, "order-declined").click()
    timeline = browser.find_element(By.ID, "journal-timeline")
    assert timeline.is_displayed()
    bar = browser.find_element(By.CSS_SELECTOR, '.dw-row[data-entry="call"] .dw-bar')
    assert bar.is_displayed() and bar.size["width"] >= 3
    assert (
        "NonRetryableStepError"
        in browser.find_element(By.ID, "journal-table").find_element(By.XPATH, "..").text
    )

    browser.back()
    browser.find_element(
        By.CSS_SELECTOR, 'input[name="_selected_action"][value="order-declined"]'
    ).click()
    Select(browser.find_element(By.NAME, "action")).select_by_value("retry")
    browser.find_element(By.CSS_SELECTOR, "button[name=index]").click()
    message = browser.find_element(By.CSS_SELECTOR, "ul.messagelist li").text
    assert message == "Retried 1 instance."
    assert wf.get_status("order-declined").status == "pending"

    # The picture for the docs: an order whose undo gave up, after a two-day wait.
    browser.get(f"{live_server.url}/admin/django_workflows/workflowinstance/{order_id}/change/")
    rows = browser.find_elements(By.CSS_SELECTOR, ".dw-timeline .dw-row[data-entry]")
    assert len(rows) == 4
    for bar in browser.find_elements(By.CSS_SELECTOR, ".dw-timeline .dw-bar"):
        assert bar.size["width"] >= 3  # even a two-second step on a two-day axis
    height = browser.execute_script("return document.documentElement.scrollHeight")
    browser.set_window_size(1400, min(max(height, 900), 4000))
    assert browser.save_screenshot(str(tmp_path / "admin-instance.png"))
    if os.environ.get("UPDATE_SCREENSHOTS") == "1" or not SCREENSHOT.exists():
        SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(tmp_path / "admin-instance.png", SCREENSHOT)


def test_a_staff_user_without_the_retry_permission_is_not_offered_the_action(
    browser, live_server, workflow_clock, world
):
    from selenium.webdriver.common.by import By

    wf.start("flaky", {"user_id": "u_declined"}, id="order-declined")
    wf.drain()
    staff_user("support", "cancel_workflowinstance", password="support-password")

    log_in(browser, live_server, "support", "support-password")
    browser.get(f"{live_server.url}/admin/django_workflows/workflowinstance/?status__exact=failed")
    options = browser.find_elements(By.CSS_SELECTOR, 'select[name="action"] option')
    assert [o.get_attribute("value") for o in options] == ["", "cancel"]
    browser.find_element(By.LINK_TEXT, "order-declined").click()
    assert browser.find_element(By.ID, "journal-timeline").is_displayed()
    assert not browser.find_elements(By.CSS_SELECTOR, "button.dw-action")


def navigate(browser, selector: str, by: str) -> None:
    """Click, then wait (with a deadline) until the next page has loaded in this one's place.

    The old page is marked with a window property that a new page does not have. Chromium
    answers questions about the old page's elements with errors of its own while it
    navigates ("Node with given id does not belong to the document"), so the wait asks
    about the window, and takes any driver error as "not yet".
    """
    from selenium.common.exceptions import WebDriverException
    from selenium.webdriver.support.ui import WebDriverWait

    browser.execute_script("window.dwOldPage = true;")
    browser.find_element(by, selector).click()
    WebDriverWait(browser, 10, ignored_exceptions=(WebDriverException,)).until(
        lambda driver: driver.execute_script(
            "return window.dwOldPage === undefined && document.readyState === 'complete';"
        )
    )


def test_terminate_asks_for_confirmation_in_the_browser(
    browser, live_server, workflow_clock, world, django_user_model
):
    from selenium.webdriver.common.by import By

    wf.start("order-fulfilment", order("3f9a1c"), id="order-3f9a1c")
    wf.drain()
    django_user_model.objects.create_superuser("admin", "admin@example.com", "admin-password")
    page = f"{live_server.url}/admin/django_workflows/workflowinstance/order-3f9a1c/change/"

    def click_and_wait(selector: str, by: str = By.CSS_SELECTOR) -> None:
        navigate(browser, selector, by)

    log_in(browser, live_server, "admin", "admin-password")
    browser.get(page)
    click_and_wait("button.dw-action-terminate")
    # The page's own heading: before Django 5.0 the site's name in the header is an <h1> too.
    heading = browser.find_element(By.CSS_SELECTOR, "#content h1")
    assert heading.text == "Terminate 1 selected instance?"
    click_and_wait("No, take me back", By.LINK_TEXT)
    assert browser.current_url == page
    assert not WorkflowInstance.objects.get(pk="order-3f9a1c").terminate_requested

    click_and_wait("button.dw-action-terminate")
    click_and_wait('input[type=submit][value="Yes, terminate"]')
    assert browser.current_url == page
    message = browser.find_element(By.CSS_SELECTOR, "ul.messagelist li").text
    assert message == "Terminate requested for 1 instance; a worker applies it."
    assert WorkflowInstance.objects.get(pk="order-3f9a1c").terminate_requested


def test_cancel_asks_for_confirmation_naming_its_compensations_in_the_browser(
    browser, live_server, workflow_clock, world, django_user_model
):
    from selenium.webdriver.common.by import By

    wf.start("order-fulfilment", order("3f9a1c"), id="order-3f9a1c")
    wf.drain()
    django_user_model.objects.create_superuser("admin", "admin@example.com", "admin-password")
    page = f"{live_server.url}/admin/django_workflows/workflowinstance/order-3f9a1c/change/"
    log_in(browser, live_server, "admin", "admin-password")
    browser.get(page)
    navigate(browser, "button.dw-action-cancel", By.CSS_SELECTOR)
    assert (
        browser.find_element(By.CSS_SELECTOR, "#content h1").text == "Cancel 1 selected instance?"
    )
    detail = browser.find_element(By.CSS_SELECTOR, ".dw-confirm-detail").text
    assert detail == "Runs 2 compensations: undo reserve-stock, then undo charge-payment."
    assert not WorkflowInstance.objects.get(pk="order-3f9a1c").cancel_requested
    navigate(browser, 'input[type=submit][value="Yes, cancel"]', By.CSS_SELECTOR)
    assert browser.current_url == page
    message = browser.find_element(By.CSS_SELECTOR, "ul.messagelist li").text
    assert message == "Cancel requested for 1 instance; a worker applies it."
    assert WorkflowInstance.objects.get(pk="order-3f9a1c").cancel_requested


def test_the_instance_and_worker_lists_fit_a_1400_pixel_window(
    browser, live_server, workflow_clock, world, django_user_model
):
    """No horizontal scrolling at 1,400 px with the values a deployment has: uuid ids, long
    host names, custom statuses, every column filled."""
    import uuid

    from selenium.webdriver.common.by import By

    from django_workflows.store import workers as registry

    for n in range(3):
        wf.start("order-fulfilment", order(f"o{n}"), id=str(uuid.uuid4()))
    wf.start("statuses", {}, id=f"{uuid.uuid4()}-with-a-longer-business-key")
    wf.drain()
    now = workflow_clock.now()
    for n in range(2):
        host = f"ip-10-0-{n}-17.eu-west-1.compute.internal"
        registry.register(
            "default",
            registry.Registration(
                id=f"{host}:{4242 + n}:{uuid.uuid4().hex[:8]}",
                host=host,
                pid=4242 + n,
                queues=["default", "mail", "gpu-inference"],
                workflows=[],
                concurrency=10,
                version="1.4.0",
                heartbeat=10.0,
                started_at=now,
            ),
            now=now,
        )
    django_user_model.objects.create_superuser("admin", "admin@example.com", "admin-password")
    log_in(browser, live_server, "admin", "admin-password")
    browser.set_window_size(1400, 1000)
    for page in ("workflowinstance", "workerprocess"):
        browser.get(f"{live_server.url}/admin/django_workflows/{page}/")
        assert browser.find_elements(By.CSS_SELECTOR, "#result_list tbody tr")
        results = browser.find_element(By.CSS_SELECTOR, "#changelist .results")
        scroll, client = browser.execute_script(
            "return [arguments[0].scrollWidth, arguments[0].clientWidth];", results
        )
        assert scroll <= client, f"{page}: the list is {scroll} px wide in {client} px"
        page_width = browser.execute_script(
            "return [document.documentElement.scrollWidth, window.innerWidth];"
        )
        assert page_width[0] <= page_width[1], page
