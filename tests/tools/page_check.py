#!/usr/bin/python3
"""page_check.py: drives Debian's headless Chromium (chromedriver, python3-selenium)
against a running idkeeper's status page, as a person would look at it.

  page_check.py --url http://127.0.0.1:PORT --servers ID1,ID2,ID3 --self ID1
                [--token TOKEN] [--zk-pid PID] [--js53] --screenshot FILE.png
                [--wide-url http://127.0.0.1:PORT2]

Checks, in order (each failure exits 1 with a line that says which):
  1. the page loads and its script refreshes it, with no console error;
  2. the worker table lists every server named in --servers, and marks --self; the
     store checks table shows /v1/status's hazard verdicts (check, value, verdict);
  3. a tag created (POST /v1/tags) after load appears at a later refresh;
  4. the decode box decodes an ID the server just issued (worker, sequence, time);
  5. Number.isSafeInteger holds for every ID of /v1/snowflake?ids=number (--js53),
     or that route answers 400 ids_too_large (a layout above 53 bits);
  6. the worker range grid: one cell a worker of /v1/status's worker_range, this
     server's cell "self" at its worker, each other server's "other" with the holder
     named in its title (what a hover shows), the rest free or stale; legible (cells
     at least 20 px wide with their numbers, the grid no wider than the window);
  7. the lease panel: the safe window, the last proof (seconds ago) and the time
     record against the clock, as /v1/status has them;
  8. the rates: after this script issues snowflake, segment and sequence IDs on the
     server, the charts of snowflake (all), segment (all), sequence (all) and of its
     two tags show them (a non-zero rate, a 600-point line);
  9. the events: "slot N taken" for this server's slot, and a sequence gap this
     script makes (a range above 2^53 asked as numbers: committed, refused) with its
     tag, count and why;
 10. with --wide-url (a server whose range is 1,024 slots): its grid has 1,024 cells
     in 32 rows, each at least 8 px by 10 px, no wider than the window (a second
     screenshot, FILE-1024.png);
 11. with --semaphore PATH (a semaphore the server shows, one lease of it held): the
     semaphores table, refreshed from /v1/semaphores, shows PATH with 1 held and a
     row of the lease (its fence);
 12. with --zk-pid: while ZooKeeper is stopped (SIGSTOP), the page shows the lease
     as not ready, this server's cell as in doubt and a "lease in doubt" event; once
     it runs again (SIGCONT), ready again.
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


def full_shot(d, path):
    """A screenshot of the whole page: the window as tall as the page for the moment."""
    h = d.execute_script("return document.documentElement.scrollHeight;")
    d.set_window_size(1280, min(h + 120, 4000))
    d.execute_script("window.scrollTo(0, 0);")
    time.sleep(0.3)  # a frame to lay out at the new size; the shot checks nothing
    d.save_screenshot(path)
    d.set_window_size(1280, 1000)


def status_of(url, token):
    st, body = http(url + "/v1/status", token)
    if st != 200:
        fail("/v1/status answered %d: %s" % (st, body))
    return json.loads(body)


def cells(d):
    """The range grid's cells as [worker, state, title, text, width, height, top]."""
    return d.execute_script(
        "return Array.from(document.querySelectorAll('#range-grid .cell')).map(c => {"
        " var r = c.getBoundingClientRect();"
        " return [Number(c.getAttribute('data-worker')), c.getAttribute('data-state'), c.title,"
        " c.innerText.trim(), r.width, r.height, Math.round(r.top + window.scrollY)]; });")


def no_overflow(d, what):
    over = d.execute_script(
        "var g = document.getElementById('range-grid'); return [g.getBoundingClientRect().right,"
        " document.documentElement.clientWidth, document.documentElement.scrollWidth];")
    if over[0] > over[1] or over[2] > over[1]:
        fail("%s: the grid (right edge %s) is wider than the window (%s, page %s)"
             % (what, over[0], over[1], over[2]))


def check_range(d, url, token, held):
    """6. one cell a worker; self, others with their holder in the title; legible."""
    st = status_of(url, token)
    r = st["worker_range"]
    want = r["max"] - r["min"] + 1

    def grid():
        cs = cells(d)
        return cs if len(cs) == want and any(c[1] == "self" for c in cs) else None
    cs = until("the range grid with %d cells" % want, grid)
    by = {c[0]: c for c in cs}
    if sorted(by) != list(range(r["min"], r["max"] + 1)):
        fail("the grid's cells are not the workers %d-%d" % (r["min"], r["max"]))
    me = by[st["worker"]]
    if me[1] != "self" or "this server" not in me[2]:
        fail("this server's cell (worker %d) is %r" % (st["worker"], me))
    for holder, v in held.items():
        c = by[int(v[0])]
        if not v[1] and (c[1] != "other" or ("held by " + holder) not in c[2]):
            fail("the cell of %s (worker %s) is %r, not other with its holder named" % (holder, v[0], c))
    held_workers = {int(v[0]) for v in held.values()}
    for w, c in by.items():
        if w not in held_workers and c[1] not in ("free", "stale"):
            fail("cell %d is %r, but no server holds it" % (w, c))
    small = [c for c in cs if c[4] < 20 or c[5] < 14 or c[3] != str(c[0])]
    if small:
        fail("cells of a %d-slot range are not legible (under 20x14 px or no number): %r" % (want, small[:3]))
    no_overflow(d, "%d slots" % want)
    use = d.find_element(By.ID, "range-use").text
    if ("%d of %d held" % (len(held), want)) not in use:
        fail("the range's use says %r, not %d of %d held" % (use, len(held), want))
    log("range grid: %d cells, self at %d, others at %s; %s" % (want, st["worker"],
        sorted(int(v[0]) for v in held.values() if not v[1]), use))


def check_lease(d, url, token):
    """7. the safe window, the last proof, the time record against the clock."""
    def panel():
        r = {c[0]: c[1] for c in d.execute_script(
            "return Array.from(document.querySelectorAll('#lease-rows td')).map("
            "td => [td.getAttribute('data-k'), td.innerText.trim()]);")}
        return r if r.get("proof", "-") != "-" else None
    p = until("the lease panel with a last proof", panel)
    st = status_of(url, token)
    if st["lease"]["valid_for_ms"] < 0:
        if not p["window"].startswith("no end"):
            fail("the safe window of a lease without end reads %r" % p["window"])
    elif not p["window"].endswith(" s left"):
        fail("the safe window reads %r" % p["window"])
    if not p["proof"].endswith(" s ago)"):
        fail("the last proof reads %r" % p["proof"])
    if "ms from the clock)" not in p["record"]:
        fail("the time record reads %r" % p["record"])
    log("lease panel: %s" % p)


def check_rates(d, url, token):
    """8. the charts show IDs this script issued."""
    tag_seg, tag_seq = "rseg-%d" % os.getpid(), "rseq-%d" % os.getpid()
    for tag, kind in ((tag_seg, "segment"), (tag_seq, "sequence")):
        st, body = http(url + "/v1/tags", token, json.dumps({"tag": tag, "kind": kind}).encode())
        if st != 201:
            fail("POST /v1/tags %s: %d %s" % (tag, st, body))
    for _ in range(5):
        for path in ("/v1/snowflake?count=200", "/v1/segment/%s?count=20" % tag_seg,
                     "/v1/sequence/%s?count=5" % tag_seq):
            st, body = http(url + path, token)
            if st != 200:
                fail("GET %s: %d %s" % (path, st, body))
        time.sleep(0.2)
    want = ["snowflake/", "segment/", "sequence/", "segment/" + tag_seg, "sequence/" + tag_seq]

    def charts():
        got = {c[0]: c for c in d.execute_script(
            "return Array.from(document.querySelectorAll('#rates-charts .chart')).map(c => ["
            " c.getAttribute('data-series'), c.querySelector('.title span:last-child').innerText,"
            " c.querySelector('polyline').getAttribute('points').split(' ').length]);")}
        if not all(w in got for w in want):
            return None
        return got if all(not got[w][1].endswith("peak 0/s") for w in want) else None
    got = until("a chart with IDs for each kind and tag issued", charts, timeout=30)
    for w in want:
        if got[w][2] != 600:
            fail("chart %s has %d points, not 600 (10 minutes a second)" % (w, got[w][2]))
    log("rates: %s" % {w: got[w][1] for w in want})


def check_events(d, url, token):
    """9. the slot taken, and a sequence gap made here."""
    st = status_of(url, token)
    tag = "gap-%d" % os.getpid()
    code, body = http(url + "/v1/tags", token,
                      json.dumps({"tag": tag, "kind": "sequence", "start": "9007199254740993"}).encode())
    if code != 201:
        fail("POST /v1/tags %s: %d %s" % (tag, code, body))
    code, body = http(url + "/v1/sequence/%s?count=3&ids=number" % tag, token)
    if code != 400:
        fail("a sequence range above 2^53 as numbers answered %d, not 400" % code)

    def events():
        evs = rows(d, "events-rows")
        gap = [c for _, _, c in evs if c[1] == "gap" and tag in c[2]]
        slot = [c for _, _, c in evs if c[1] == "slot" and c[2].startswith("slot %d taken" % st["worker"])]
        return (gap, slot) if gap and slot else None
    gap, slot = until("the gap and the slot taken in the events", events, timeout=20)
    g = gap[0][2]
    if "3 IDs from 9007199254740993" not in g or "ids_too_large" not in g:
        fail("the gap event reads %r" % g)
    log("events: %r; %r" % (slot[0][2], g))


def check_wide(d, wide, shot):
    """10. a 1,024-slot range: 1,024 cells in 32 rows, legible, within the window."""
    d.get(wide + "/")
    until("the wide page's refresh", lambda: d.find_element(By.ID, "updated").text.startswith("updated "))
    cs = until("1024 cells", lambda: (lambda c: c if len(c) == 1024 else None)(cells(d)))
    tops = sorted({c[6] for c in cs})
    labels = d.execute_script("return document.querySelectorAll('#range-grid .rowlabel').length;")
    if len(tops) != 32 or labels != 32:
        fail("a 1024-slot grid has %d rows, %d row labels, not 32" % (len(tops), labels))
    small = [c for c in cs if c[4] < 8 or c[5] < 10]
    if small:
        fail("cells of a 1024-slot range are under 8x10 px: %r" % small[:3])
    no_overflow(d, "1024 slots")
    if not any(c[1] == "self" and "this server" in c[2] for c in cs):
        fail("the wide server's own cell is not marked")
    full_shot(d, shot)
    log("1024-slot grid: 32 rows of 32, cells %.0fx%.0f px; screenshot %s" % (cs[0][4], cs[0][5], shot))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--servers", required=True)
    ap.add_argument("--self", required=True)
    ap.add_argument("--token")
    ap.add_argument("--zk-pid", type=int)
    ap.add_argument("--js53", action="store_true")
    ap.add_argument("--screenshot", required=True)
    ap.add_argument("--wide-url")
    ap.add_argument("--semaphore")
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

        # 11. the semaphores table, after a refresh (the script's rows, the same as the
        # snapshot's: a row of the semaphore, then one of its lease)
        if a.semaphore:
            def sema_rows():
                rs = rows(d, "semaphores-rows")
                for i, (cls, _, c) in enumerate(rs):
                    if cls == "sema" and c and c[0] == a.semaphore and len(c) > 2 and \
                            c[2] == "1 held" and i + 1 < len(rs) and rs[i + 1][2][2].isdigit():
                        return rs[i + 1][2]
            before = d.find_element(By.ID, "updated").text
            until("a refresh", lambda: d.find_element(By.ID, "updated").text != before)
            lease = until("the semaphore %s with its lease" % a.semaphore, sema_rows, timeout=15)
            log("semaphore %s: 1 held, fence %s" % (a.semaphore, lease[2]))

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

        check_range(d, url, a.token, held)
        check_lease(d, url, a.token)
        check_rates(d, url, a.token)
        check_events(d, url, a.token)

        full_shot(d, a.screenshot)
        log("screenshot: " + a.screenshot)
        if a.wide_url:
            check_wide(d, a.wide_url.rstrip("/"), a.screenshot.replace(".png", "-1024.png"))
            d.get(url + "/")
            until("the page again after the wide one",
                  lambda: d.find_element(By.ID, "updated").text.startswith("updated "))

        # 6. ZooKeeper stopped: the page says not ready; running again: ready
        if a.zk_pid:
            def ready_cell():
                return d.find_element(By.CSS_SELECTOR, '#server-rows td[data-k="ready"]')
            os.kill(a.zk_pid, signal.SIGSTOP)
            try:
                until("the page to show the lease as not ready",
                      lambda: ready_cell().text.startswith("not ready"), timeout=30)
                until("this server's cell in doubt", lambda: d.execute_script(
                    "var c = document.querySelector('#range-grid .cell[data-worker=\"' +"
                    " arguments[0] + '\"]'); return c && c.getAttribute('data-state');",
                    held[a.self][0]) == "doubt")
                until("a 'lease in doubt' event", lambda: any(
                    c[1] == "lease" and c[2].startswith("lease in doubt")
                    for _, _, c in rows(d, "events-rows")))
                full_shot(d, a.screenshot.replace(".png", "-zk-stopped.png"))
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
