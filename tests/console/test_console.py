"""The web console in a real headless browser (issues 14 and 35).

Chromium (Debian's package) driven by selenium through the system chromedriver, against a
server with authentication on: load the console (its icon, the key hint), connect with the
account key to an account without tables (the empty state), browse a table page by page, run
a filter and see its query class, a bad filter's error by the query box with the stale
results gone, edit an entity, see the 412 of a stale edit, delete it, create and delete a
table, and the layout at 420 px wide. Screenshots go to $TABLESTORE_CONSOLE_ARTIFACTS;
`insight-console.png` among them is docs/insight-console.png (docs/insight.md says how to
refresh it). Setup and checks use the REST API directly.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import shutil
import tempfile
import urllib.error
import urllib.request
from email.utils import formatdate

import pytest

os.environ.setdefault("SE_OFFLINE", "true")  # never let selenium fetch drivers

from selenium import webdriver  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support import expected_conditions as EC  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

ENDPOINT = os.environ.get("TABLESTORE_ENDPOINT", "http://127.0.0.1:10002").rstrip("/")
ARTIFACTS = os.environ.get("TABLESTORE_CONSOLE_ARTIFACTS", "target/console-artifacts")
ACCOUNT = "devstoreaccount1"
KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
TABLE = "people"


def rest(method: str, path: str, body=None, headers=None):
    """A signed Table API call (Shared Key Lite); returns (status, headers, parsed body)."""
    date = formatdate(usegmt=True)
    url = ENDPOINT + path
    raw_path = urllib.request.urlparse(url).path
    sig = base64.b64encode(
        hmac.new(base64.b64decode(KEY), f"{date}\n/{ACCOUNT}{raw_path}".encode(), hashlib.sha256).digest()
    ).decode()
    h = {
        "x-ms-date": date,
        "x-ms-version": "2019-02-02",
        "Authorization": f"SharedKeyLite {ACCOUNT}:{sig}",
        "Accept": "application/json;odata=minimalmetadata",
        **(headers or {}),
    }
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        h["Content-Type"] = "application/json"
    req = urllib.request.Request(url, data=data, headers=h, method=method)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            text = r.read().decode()
            return r.status, r.headers, json.loads(text) if text else None
    except urllib.error.HTTPError as e:
        return e.code, e.headers, None


def entity_path(pk: str, rk: str) -> str:
    return f"/{ACCOUNT}/{TABLE}(PartitionKey='{pk}',RowKey='{rk}')"


def seed_people() -> None:
    """The `people` table: 3 partitions of 10 entities."""
    assert rest("POST", f"/{ACCOUNT}/Tables", {"TableName": TABLE})[0] == 201
    for p in range(3):
        for r in range(10):
            status, _, _ = rest(
                "POST",
                f"/{ACCOUNT}/{TABLE}",
                {"PartitionKey": f"p{p}", "RowKey": f"r{r:02}", "Name": f"n{p}{r}", "Age": 10 * r + p},
            )
            assert status == 201


@pytest.fixture(scope="module")
def browser():
    os.makedirs(ARTIFACTS, exist_ok=True)
    profile = tempfile.mkdtemp(prefix="tablestore-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    for flag in (
        "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        f"--user-data-dir={profile}", "--window-size=1200,860",
    ):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})  # failed loads, script errors
    driver = webdriver.Chrome(service=Service(shutil.which("chromedriver") or "/usr/bin/chromedriver"), options=options)
    driver.set_page_load_timeout(30)
    yield driver
    driver.quit()
    shutil.rmtree(profile, ignore_errors=True)


def wait(driver, condition, seconds: float = 15):
    return WebDriverWait(driver, seconds).until(condition)


def shot(driver, name: str) -> None:
    path = os.path.join(ARTIFACTS, name)
    driver.save_screenshot(path)
    print(f"screenshot: {path}")


def rows(driver):
    return driver.find_elements(By.CSS_SELECTOR, "#entities tbody tr")


def status_text(driver) -> str:
    return driver.find_element(By.ID, "status").text


def problems_logged(driver) -> list:
    """What the browser logged as failed loads or script errors since the last call."""
    return [e["message"] for e in driver.get_log("browser") if e["level"] in ("SEVERE", "WARNING")]


def test_load_shows_the_key_hint_and_the_empty_state(browser):
    status, _, tables = rest("GET", f"/{ACCOUNT}/Tables")
    assert status == 200 and tables["value"] == [], "the console tests need a server without tables"
    browser.get(ENDPOINT + "/_tablestore/console/")
    assert browser.title == "tablestore console"
    key = wait(browser, EC.visibility_of_element_located((By.ID, "key")))
    # The key box says which key it wants and where tablestore printed it.
    hint = browser.find_element(By.ID, "key-hint")
    assert hint.is_displayed() and key.get_attribute("aria-describedby") == "key-hint"
    for words in ("account key", "AccountKey=", "Connection string:", "--accounts"):
        assert words in hint.text, hint.text
    # The development account's published key is filled in (it asked for it before).
    assert key.get_attribute("value") == KEY
    assert browser.find_element(By.ID, "key-published").is_displayed()
    shot(browser, "00-key-hint.png")
    browser.find_element(By.ID, "use-key").click()
    # No tables: the page says what to do instead of staying blank.
    empty = wait(browser, EC.visibility_of_element_located((By.ID, "empty-state")))
    assert "No tables yet" in empty.text and "Create" in empty.text and "--seed" in empty.text, empty.text
    assert not browser.find_element(By.ID, "table-view").is_displayed()
    assert not browser.find_element(By.ID, "key-hint").is_displayed()
    # The key is not left in the page nor put in the URL.
    assert KEY not in browser.current_url and browser.find_element(By.ID, "key").get_attribute("value") == ""
    assert not browser.find_element(By.ID, "key-published").is_displayed()
    shot(browser, "01-empty.png")


def test_the_icon_loads_and_nothing_fails(browser):
    icon = browser.find_element(By.CSS_SELECTOR, "link[rel=icon]").get_attribute("href")
    assert icon == ENDPOINT + "/_tablestore/console/favicon.svg"
    for url in (icon, ENDPOINT + "/favicon.ico"):
        with urllib.request.urlopen(url, timeout=10) as r:
            assert r.status == 200 and r.headers["Content-Type"] == "image/svg+xml", url
            assert r.read().startswith(b"<svg")
    # Chromium logged no failed load (the icon answered 403 before) and no script error.
    assert problems_logged(browser) == []


def test_connect_to_tables(browser):
    seed_people()
    browser.refresh()  # the key is in this tab's sessionStorage: it connects by itself
    wait(browser, EC.presence_of_element_located((By.CSS_SELECTOR, f"#tables a[data-table='{TABLE}']")))
    assert not browser.find_element(By.ID, "empty-state").is_displayed()
    shot(browser, "01-connected.png")


def test_browse_a_table_page_by_page(browser):
    browser.find_element(By.CSS_SELECTOR, f"#tables a[data-table='{TABLE}']").click()
    wait(browser, lambda d: len(rows(d)) == 20)
    first = rows(browser)[0].find_elements(By.TAG_NAME, "td")
    assert [first[0].text, first[1].text] == ["p0", "r00"]
    assert "table scan" in browser.find_element(By.ID, "verdict").text
    next_page = browser.find_element(By.ID, "next-page")
    assert next_page.is_displayed()
    next_page.click()
    wait(browser, lambda d: len(rows(d)) == 10 and rows(d)[0].find_elements(By.TAG_NAME, "td")[0].text == "p2")
    assert not browser.find_element(By.ID, "next-page").is_displayed()
    shot(browser, "02-browse.png")


def run_filter(browser, text: str):
    box = browser.find_element(By.ID, "filter")
    box.clear()
    box.send_keys(text)
    browser.find_element(By.CSS_SELECTOR, "#query button[type=submit]").click()


def test_filter_shows_its_query_class_and_partition_heat(browser):
    run_filter(browser, "Age gt 75")
    wait(browser, lambda d: d.find_element(By.ID, "verdict").get_attribute("data-class") == "table scan"
         and len(rows(d)) == 6)
    run_filter(browser, "PartitionKey eq 'p1' and RowKey ge 'r05'")
    wait(browser, lambda d: d.find_element(By.ID, "verdict").get_attribute("data-class") == "range query"
         and len(rows(d)) == 5)
    run_filter(browser, "PartitionKey eq 'p1' and RowKey eq 'r03'")
    wait(browser, lambda d: d.find_element(By.ID, "verdict").get_attribute("data-class") == "point query"
         and len(rows(d)) == 1)
    verdict = browser.find_element(By.ID, "verdict").text
    assert "examined 1, returned 1" in verdict
    # Partition heat: one bar per partition the table served, drawn as SVG.
    wait(browser, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#heat svg rect")) == 3)
    assert browser.find_elements(By.CSS_SELECTOR, "#advice li")
    # The store's size from the insight endpoint: the 30 entities of the fixture, in memory.
    size = browser.find_element(By.ID, "store-size")
    wait(browser, lambda d: size.get_attribute("data-entities") == "30")
    assert int(size.get_attribute("data-logical-bytes")) > 30 * 20
    assert "30 entities" in size.text and "in memory" in size.text, size.text
    shot(browser, "03-query.png")
    # The documentation's picture (docs/insight-console.png): this page after a point query.
    shot(browser, "insight-console.png")


def run_point_query(browser):
    run_filter(browser, "PartitionKey eq 'p1' and RowKey eq 'r03'")
    wait(browser, lambda d: d.find_element(By.ID, "verdict").get_attribute("data-class") == "point query"
         and len(rows(d)) == 1)


def test_a_bad_filter_shows_its_error_by_the_query_box_and_clears_stale_results(browser):
    run_filter(browser, "Age gt 75")
    wait(browser, lambda d: len(rows(d)) == 6)
    run_filter(browser, "Age gt")  # no value: 400 InvalidInput
    error = wait(browser, EC.visibility_of_element_located((By.ID, "query-error")))
    assert "400" in error.text and "InvalidInput" in error.text, error.text
    # Nothing of the previous query stays on screen looking current.
    assert rows(browser) == []
    assert browser.find_element(By.ID, "verdict").text == ""
    assert browser.find_element(By.ID, "verdict").get_attribute("data-class") is None
    assert not browser.find_element(By.ID, "next-page").is_displayed()
    # The error sits between the query box and where the results go.
    query_box = browser.find_element(By.ID, "query").rect
    results = browser.find_element(By.ID, "entities").rect
    assert query_box["y"] + query_box["height"] <= error.rect["y"] < results["y"] + 1
    shot(browser, "06-bad-filter.png")
    # A good query clears the error again.
    run_point_query(browser)
    assert not browser.find_element(By.ID, "query-error").is_displayed()


def test_edit_an_entity(browser):
    rows(browser)[0].click()
    wait(browser, lambda d: d.find_element(By.ID, "pk").get_attribute("value") == "p1"
         and "W/" in d.find_element(By.ID, "etag").text)
    props = {
        p.find_element(By.CLASS_NAME, "prop-name").get_attribute("value"): p
        for p in browser.find_elements(By.CSS_SELECTOR, "#props .prop")
    }
    assert props["Age"].find_element(By.CLASS_NAME, "prop-type").get_attribute("value") == "Edm.Int32"
    value = props["Name"].find_element(By.CLASS_NAME, "prop-value")
    value.clear()
    value.send_keys("edited in the console")
    browser.find_element(By.ID, "save").click()
    wait(browser, lambda d: status_text(d) == "Saved.")
    status, _, entity = rest("GET", entity_path("p1", "r03"))
    assert status == 200
    assert entity["Name"] == "edited in the console"
    assert entity["Age"] == 31 and "Age@odata.type" not in entity  # still an Int32
    shot(browser, "04-edited.png")


def test_a_stale_edit_shows_412(browser):
    # The console holds the ETag from its save; someone else now replaces the entity.
    status, _, _ = rest("PUT", entity_path("p1", "r03"),
                        {"PartitionKey": "p1", "RowKey": "r03", "Name": "changed elsewhere", "Age": 31})
    assert status == 204
    value = next(
        p.find_element(By.CLASS_NAME, "prop-value")
        for p in browser.find_elements(By.CSS_SELECTOR, "#props .prop")
        if p.find_element(By.CLASS_NAME, "prop-name").get_attribute("value") == "Name"
    )
    value.clear()
    value.send_keys("stale write")
    browser.find_element(By.ID, "save").click()
    wait(browser, lambda d: "412" in status_text(d))
    assert "UpdateConditionNotSatisfied" in status_text(browser)
    assert rest("GET", entity_path("p1", "r03"))[2]["Name"] == "changed elsewhere"
    shot(browser, "05-stale-412.png")


def test_delete_an_entity(browser):
    rows(browser)[0].click()  # reload: fresh ETag
    wait(browser, lambda d: status_text(d).startswith("Loaded"))
    browser.find_element(By.ID, "delete-entity").click()
    wait(browser, EC.alert_is_present()).accept()
    wait(browser, lambda d: status_text(d) == "Deleted." and len(rows(d)) == 0)
    assert rest("GET", entity_path("p1", "r03"))[0] == 404


def test_create_insert_typed_and_delete_a_table(browser):
    browser.find_element(By.ID, "new-table").send_keys("consolemade")
    browser.find_element(By.CSS_SELECTOR, "#create-table button").click()
    wait(browser, lambda d: d.find_element(By.ID, "table-name").text == "consolemade")
    browser.find_element(By.ID, "pk").send_keys("a")
    browser.find_element(By.ID, "rk").send_keys("1")
    browser.find_element(By.ID, "add-prop").click()
    prop = browser.find_elements(By.CSS_SELECTOR, "#props .prop")[-1]
    prop.find_element(By.CLASS_NAME, "prop-name").send_keys("Big")
    prop.find_element(By.CSS_SELECTOR, ".prop-type option[value='Edm.Int64']").click()
    prop.find_element(By.CLASS_NAME, "prop-value").send_keys("9007199254740993")
    browser.find_element(By.ID, "insert").click()
    wait(browser, lambda d: status_text(d) == "Inserted." and len(rows(d)) == 1)
    _, _, entity = rest("GET", f"/{ACCOUNT}/consolemade(PartitionKey='a',RowKey='1')")
    assert entity["Big"] == "9007199254740993" and entity["Big@odata.type"] == "Edm.Int64"
    browser.find_element(By.ID, "delete-table").click()
    wait(browser, EC.alert_is_present()).accept()
    wait(browser, lambda d: not d.find_elements(By.CSS_SELECTOR, "#tables a[data-table='consolemade']"))
    assert rest("GET", f"/{ACCOUNT}/Tables('consolemade')")[0] == 404


def test_the_layout_reflows_at_420_px(browser):
    browser.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride", {"width": 420, "height": 860, "deviceScaleFactor": 1, "mobile": False}
    )
    try:
        browser.refresh()
        wait(browser, EC.presence_of_element_located((By.CSS_SELECTOR, f"#tables a[data-table='{TABLE}']")))
        browser.find_element(By.CSS_SELECTOR, f"#tables a[data-table='{TABLE}']").click()
        wait(browser, lambda d: len(rows(d)) == 20)
        width = browser.execute_script("return window.innerWidth")
        assert width == 420
        # Nothing is wider than the screen: no sideways scrolling of the page.
        assert browser.execute_script("return document.documentElement.scrollWidth") <= width
        for element_id in ("key", "use-key", "filter", "table-view", "heat", "editor"):
            rect = browser.find_element(By.ID, element_id).rect
            assert rect["x"] >= 0 and rect["x"] + rect["width"] <= width + 0.5, (element_id, rect)
        # One column: the table list above the table, the editor above the heat and advice.
        nav = browser.find_element(By.TAG_NAME, "nav").rect
        assert nav["y"] + nav["height"] <= browser.find_element(By.ID, "table-view").rect["y"]
        editor = browser.find_element(By.ID, "editor").rect
        assert editor["y"] + editor["height"] <= browser.find_element(By.ID, "heat").rect["y"]
        shot(browser, "07-narrow-420.png")
    finally:
        browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


def test_console_pages_refuse_framing_and_foreign_scripts():
    with urllib.request.urlopen(ENDPOINT + "/_tablestore/console/", timeout=10) as r:
        assert r.headers["X-Frame-Options"] == "DENY"
        csp = r.headers["Content-Security-Policy"]
        assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp
        assert "Access-Control-Allow-Origin" not in r.headers


def test_the_reset_button_empties_the_account(browser):
    """The Reset account… button (issue 42): asks first, then brings the account back to
    its start-up state (this server started empty) and says what it did."""
    browser.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})
    problems_logged(browser)  # the earlier tests' expected 400 and 412
    assert rest("POST", f"/{ACCOUNT}/Tables", {"TableName": "resetme"})[0] == 201
    browser.get(ENDPOINT + "/_tablestore/console/")
    wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#tables a[data-table='resetme']"))
    browser.find_element(By.ID, "reset-account").click()
    wait(browser, EC.alert_is_present()).accept()
    said = lambda d: d.find_element(By.ID, "reset-status").text  # noqa: E731
    wait(browser, lambda d: said(d))
    assert said(browser).startswith(f"Reset {ACCOUNT}: 2 table(s) removed"), said(browser)  # people, resetme
    assert not browser.find_elements(By.CSS_SELECTOR, "#tables a")
    _, _, listed = rest("GET", f"/{ACCOUNT}/Tables")
    assert listed["value"] == []
    assert not problems_logged(browser)
