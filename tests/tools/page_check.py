#!/usr/bin/python3
"""page_check.py: drives Debian's headless Chromium (chromedriver, python3-selenium)
against a running idkeeper's status page, as a person would look at it.

  page_check.py --url http://127.0.0.1:PORT --servers ID1,ID2,ID3 --self ID1
                [--token TOKEN] [--zk-pid PID] [--js53] --screenshot FILE.png

Checks, in order (each failure exits 1 with a line that says which):
  1. the page loads and its script refreshes it, with no console error;
  2. the worker table lists every server named in --servers, and marks --self; the
     store checks table shows /v1/status's hazard verdicts (check, value, verdict);
  3. a tag created (POST /v1/tags) after load appears at a later refresh;
  4. the decode box decodes an ID the server just issued (worker, sequence, time);
  5. Number.isSafeInteger holds for every ID of /v1/snowflake?ids=number (--js53),
     or that route answers 400 ids_too_large (a layout above 53 bits);
  6. with --zk-pid: while ZooKeeper is stopped (SIGSTOP), the page shows the lease
     as not ready; once it runs again (SIGCONT), ready again.
With --token, every request of the browser carries 'Authorization: Bearer TOKEN'
(DevTools' extra headers), and the page without it answers 401.
"""
import argparse
import json
import os
import shutil
import signal
import sys
import tempfile
import time
import urllib.error
import urllib.request

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By


def fail(msg):
    print("page_check: FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def log(msg):
    print("page_check: " + msg, file=sys.stderr)


def until(what, fn, timeout=20.0, period=0.2):
    """Calls fn until it returns a true value (returned), or fails after timeout."""
    end = time.monotonic() + timeout
    last = None
    while time.monotonic() < end:
        try:
            v = fn()
            if v:
                return v
        except Exception as e:  # the page may be mid-refresh
            last = e
        time.sleep(period)
    fail("timed out waiting for %s%s" % (what, " (%s)" % last if last else ""))


def http(url, token=None, data=None):
    req = urllib.request.Request(url, data=data)
    if token:
        req.add_header("Authorization", "Bearer " + token)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def browser(profile):
    o = webdriver.ChromeOptions()
    o.binary_location = "/usr/bin/chromium"
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic",
              "--no-first-run", "--disable-background-networking", "--disable-component-update",
              "--disable-sync", "--disable-dev-shm-usage", "--window-size=1280,1000",
              "--user-data-dir=" + profile):
        o.add_argument(a)
    o.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=o)


def console_errors(d):
    return [e for e in d.get_log("browser") if e.get("level") == "SEVERE"]


def rows(d, tbody):
    """The rows of tbody as (class, data-tag, [cell texts]), read in one script run: the page
    replaces its tables on every refresh, and reading cell by cell over WebDriver
    can straddle one (a stale element) as often as not on a loaded machine."""
    return d.execute_script(
        "return Array.from(document.querySelectorAll('#' + arguments[0] + ' tr'))"
        ".map(r => [r.className, r.getAttribute('data-tag'), Array.from(r.querySelectorAll('td'))"
        ".map(td => td.innerText.trim())]);", tbody)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--servers", required=True)
    ap.add_argument("--self", required=True)
    ap.add_argument("--token")
    ap.add_argument("--zk-pid", type=int)
    ap.add_argument("--js53", action="store_true")
    ap.add_argument("--screenshot", required=True)
    a = ap.parse_args()
    url = a.url.rstrip("/")

    if a.token:
        st, _ = http(url + "/")
        if st != 401:
            fail("the page without the token answered %d, not 401" % st)

    # a profile of its own: two runs at once must not share Chromium's profile lock
    profile = tempfile.mkdtemp(prefix="ik-chromium-")
    d = browser(profile)
    try:
        if a.token:
            d.execute_cdp_cmd("Network.enable", {})
            d.execute_cdp_cmd("Network.setExtraHTTPHeaders",
                              {"headers": {"Authorization": "Bearer " + a.token}})
        # 1. load, and a refresh by the script
        d.get(url + "/")
        if d.title != "idkeeper":
            fail("page title is %r" % d.title)
        until("the script's first refresh",
              lambda: d.find_element(By.ID, "updated").text.startswith("updated "))
        errs = console_errors(d)
        if errs:
            fail("console errors at load: %s" % errs)
        log("loaded, refreshed, no console error")

        # 2. the worker table: every server, this one marked
        want = set(a.servers.split(","))

        def workers():
            held = {}
            for cls, _, c in rows(d, "workers-rows"):
                if c[1] != "(free)":
                    held[c[1]] = (c[0], "self" in (cls or ""), c[4])
            return held if want <= set(held) else None
        held = until("every server in the worker table", workers)
        marked = [h for h, v in held.items() if v[1]]
        if marked != [a.self]:
            fail("the row marked as this server is %r, not %r" % (marked, a.self))
        if held[a.self][2] != "this server":
            fail("this server's row says %r" % held[a.self][2])
        _, status = http(url + "/v1/status", a.token)
        if held[a.self][0] != str(json.loads(status)["worker"]):
            fail("the marked row's worker %s is not /v1/status's" % held[a.self][0])
        log("worker table: %s; this server marked" % sorted(held))
        _, status = http(url + "/v1/status", a.token)
        want_hz = [[h["check"], h["value"], h["verdict"]]
                   for h in json.loads(status)["store"]["hazards"]]
        if not want_hz:
            fail("/v1/status lists no store checks")
        until("the store checks table to show /v1/status's verdicts",
              lambda: [c[:3] for _, _, c in rows(d, "store-rows")] == want_hz)
        log("store checks: %s" % want_hz)

        # 3. a tag created after load shows up at a later refresh
        tag = "page-%d" % os.getpid()
        st, body = http(url + "/v1/tags", a.token,
                        json.dumps({"tag": tag, "kind": "sequence", "start": 7}).encode())
        if st != 201:
            fail("POST /v1/tags answered %d: %s" % (st, body))

        def tag_row():
            for _, data_tag, c in rows(d, "tags-rows"):
                if data_tag == tag:
                    return c
        c = until("the new tag in the tags table", tag_row, timeout=15)
        if c[1] != "sequence" or c[2] != "7":
            fail("the new tag's row is %r" % c)
        log("new tag %s appeared: %r" % (tag, c))

        # 4. the decode box
        st, idtext = http(url + "/api/snowflake/get/page", a.token)
        if st != 200:
            fail("GET /api/snowflake/get answered %d: %s" % (st, idtext))
        _, dec = http(url + "/v1/decode/" + idtext, a.token)
        dec = json.loads(dec)
        box = d.find_element(By.ID, "decode-id")
        box.clear()
        box.send_keys(idtext)
        d.find_element(By.CSS_SELECTOR, "#decode-form button").click()
        out = until("the decoded ID", lambda: d.find_element(By.ID, "decode-out").text.strip()
                    if idtext in d.find_element(By.ID, "decode-out").text else None)
        for key in ("worker", "sequence", "time"):
            line = [l for l in out.splitlines() if l.startswith(key + " ")]
            if not line or line[0].split()[-1] != str(dec[key]):
                fail("decode box shows %r for %s, /v1/decode says %r" % (out, key, dec[key]))
        log("decode box: %s" % out.replace("\n", "; "))

        # 5. IDs as JavaScript numbers
        res = d.execute_async_script("""
            var done = arguments[arguments.length - 1];
            fetch('/v1/snowflake?count=1000&ids=number').then(function (r) {
              return r.json().then(function (b) { done({status: r.status, body: b}); });
            }).catch(function (e) { done({status: 0, body: String(e)}); });""")
        if a.js53:
            ids = res["body"].get("ids", []) if res["status"] == 200 else []
            if len(ids) != 1000:
                fail("?ids=number on js53 answered %r" % res)
            safe = d.execute_script(
                "return arguments[0].every(function (x) { return Number.isSafeInteger(x); });", ids)
            if not safe:
                fail("an ID of ?ids=number is not a safe JavaScript integer")
            if len(set(ids)) != 1000:
                fail("?ids=number answered duplicate IDs")
            log("js53: 1000 IDs as numbers, all Number.isSafeInteger")
        elif res["status"] != 400 or res["body"].get("error") != "ids_too_large":
            fail("?ids=number on a 63-bit layout answered %r, not 400 ids_too_large" % res)

        d.save_screenshot(a.screenshot)
        log("screenshot: " + a.screenshot)

        # 6. ZooKeeper stopped: the page says not ready; running again: ready
        if a.zk_pid:
            def ready_cell():
                return d.find_element(By.CSS_SELECTOR, '#server-rows td[data-k="ready"]')
            os.kill(a.zk_pid, signal.SIGSTOP)
            try:
                until("the page to show the lease as not ready",
                      lambda: ready_cell().text.startswith("not ready"), timeout=30)
                d.save_screenshot(a.screenshot.replace(".png", "-zk-stopped.png"))
                log("ZooKeeper stopped: %s" % ready_cell().text)
            finally:
                os.kill(a.zk_pid, signal.SIGCONT)
            until("the page to show ready again", lambda: ready_cell().text == "ready",
                  timeout=40)
            log("ZooKeeper running again: ready")
    finally:
        d.quit()
        shutil.rmtree(profile, ignore_errors=True)
    print("page_check: PASS")


if __name__ == "__main__":
    main()
