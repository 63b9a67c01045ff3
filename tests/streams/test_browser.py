"""A stream in a real browser: an EventSource on a page follows sse_response() live, and
closes at its end event (Debian's chromium and chromedriver, as tests/admin/test_browser.py)."""

from __future__ import annotations

import pytest

import django_workflows as wf
from tests.admin.test_browser import browser  # noqa: F401 - the fixture

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_page_shows_each_item_as_it_is_written(browser, live_server, define):  # noqa: F811
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    @define("streams-browser")
    def run(ctx, input):
        out = ctx.stream("progress")
        out.write("paid")
        ctx.wait_for_signal("go", "go", key=ctx.instance_id)
        out.write("shipped")
        out.close()
        return 1

    wf.start("streams-browser", id="page1")
    wf.drain()
    browser.get(f"{live_server.url}/stream-page/page1/progress/")

    def lines(_):
        return [li.text for li in browser.find_elements(By.CSS_SELECTOR, "#lines li")]

    WebDriverWait(browser, 10).until(lambda b: lines(b) == ["1:paid"])
    assert browser.find_element(By.ID, "state").text == "following"

    wf.signal("go", key="page1")  # the page is open: the next line comes live
    wf.drain()
    WebDriverWait(browser, 10).until(lambda b: lines(b) == ["1:paid", "2:shipped"])
    WebDriverWait(browser, 10).until(lambda b: b.find_element(By.ID, "state").text == "ended")
