"""The memory browser in a real headless Chromium (Debian's ``chromium`` and ``chromium-driver``,
which .ci/run installs): the dashboard renders, a search finds a memory, the memory opens, and a
delete with its confirmation removes it from the real store; a planted script never runs."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.support.browser import saved_memories, served_browser

CHROMIUM = Path("/usr/bin/chromium")
DRIVER = Path("/usr/bin/chromedriver")
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1280,900",
)

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists() or not (DRIVER.exists() or shutil.which("chromedriver")),
    reason="Debian's chromium and chromium-driver are not installed (.ci/run installs them)",
)


@pytest.fixture
def chromium(tmp_path):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in (*FLAGS, f"--user-data-dir={tmp_path / 'chromium-profile'}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(
        service=Service(str(DRIVER if DRIVER.exists() else shutil.which("chromedriver"))), options=options
    )
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()


def test_search_open_and_delete_in_a_real_browser(project, chromium):
    from selenium.common.exceptions import NoAlertPresentException
    from selenium.webdriver.common.by import By

    from contextware.errors import NotFoundError
    from contextware.memory import records

    ids = saved_memories(project)
    with served_browser(project) as served:
        chromium.get(served.url)
        assert chromium.current_url == served.base  # the token moved to the cookie
        assert chromium.title.startswith("Dashboard")
        assert len(chromium.get_screenshot_as_png()) > 10_000  # something was drawn
        assert chromium.find_element(By.CSS_SELECTOR, "header strong").value_of_css_property("font-weight") in (
            "700",
            "bold",
        )

        box = chromium.find_element(By.CSS_SELECTOR, "header input[name=q]")
        box.send_keys("how do we run the tests")
        box.submit()
        chromium.find_element(By.CSS_SELECTOR, "table.results")
        chromium.find_element(By.LINK_TEXT, ids["tests"]).click()
        assert chromium.title.startswith(ids["tests"])
        assert "pytest -n 2" in chromium.find_element(By.TAG_NAME, "main").text

        chromium.find_element(By.LINK_TEXT, "Delete…").click()
        chromium.find_element(By.CSS_SELECTOR, "input[name=confirm]").click()
        chromium.find_element(By.CSS_SELECTOR, "button.danger").click()
        assert f"Deleted {ids['tests']} from facts." in chromium.find_element(By.CSS_SELECTOR, "[role=status]").text
        with pytest.raises(NotFoundError):
            records.get(project, ids["tests"])

        chromium.get(f"{served.base}memory/{ids['planted']}")
        assert '<script>alert("owned")</script>' in chromium.find_element(By.TAG_NAME, "main").text
        with pytest.raises(NoAlertPresentException):
            chromium.switch_to.alert.text  # noqa: B018 - the planted script did not run

        chromium.get(f"{served.base}explain?q=how+do+deploys+work")
        assert "candidates" in chromium.find_element(By.TAG_NAME, "main").text
        assert len(chromium.get_screenshot_as_png()) > 10_000
