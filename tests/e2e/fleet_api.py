"""A reputation API for end-to-end tests, serving a fleet described by a JSON state file that
the test edits while it runs (read again on every request):

  {"assets": 200,                       # IP addresses 10.0.0.0 onwards
   "listings": [{"asset": "10.0.0.1", "blacklist": "SpamCop",
                 "listed": 1700000000, "delisted": null}],   # Unix times
   "check_seconds": 60,                 # the change at the last check: over this many seconds
   "flaky": false,                      # answer every other request 503 (retries get past)
   "down": false}                       # answer every request 503 (an outage)

Usage: fleet_api.py STATE_FILE PORT_FILE  (binds 127.0.0.1:0, writes its port to PORT_FILE)
"""
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

state_file, port_file = sys.argv[1], sys.argv[2]
counter = {"requests": 0}
lock = threading.Lock()


def state():
    with open(state_file) as f:
        return json.load(f)


def name(i):
    return f"10.0.{i // 256}.{i % 256}"


def api_date(unix):
    t = time.gmtime(unix)
    day = t.tm_mday
    suffix = "th" if 11 <= day <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")
    hour = t.tm_hour % 12 or 12
    return f"{day}{suffix} {time.strftime('%b %Y', t)} {hour:02d}:{t.tm_min:02d}{'am' if t.tm_hour < 12 else 'pm'}"


def listed_on(s, asset, at=None):
    """The listings of `asset` standing at time `at` (now by default)."""
    at = time.time() if at is None else at
    return [l for l in s["listings"] if l["asset"] == asset and l["listed"] <= at
            and (l.get("delisted") is None or l["delisted"] > at)]


def count_and_change(s, asset):
    """`blacklisted` and `blacklisted_change.last_check`: the count now and its change since
    the API's previous check, `check_seconds` ago."""
    now = time.time()
    count = len(listed_on(s, asset, now))
    return count, count - len(listed_on(s, asset, now - s.get("check_seconds", 60)))


def change(value):
    return {"last_check": value}


def list_item(s, i):
    count, changed = count_and_change(s, name(i))
    return {
        "ip": name(i), "hosts": [f"mta{i}.example.com"],
        "senderscore": 85, "senderscore_prev": 85, "senderscore_change": change(0),
        "blacklisted": count, "blacklisted_change": change(changed),
        "snds_blocked": None, "snds_blocked_change": change(None),
        "snds_reputation": None, "snds_reputation_change": change(None),
    }


def report(s, asset):
    now = time.time()
    # Newest first, as the API's other histories are; an event's date has only minutes, so a
    # delisting in the same minute as its listing is told apart by coming first.
    timed = []
    for l in s["listings"]:
        if l["asset"] != asset:
            continue
        timed.append((l["listed"], "Listed", l["blacklist"]))
        if l.get("delisted") is not None:
            timed.append((l["delisted"], "Delisted", l["blacklist"]))
    timed.sort(key=lambda e: e[0], reverse=True)
    events = [{"date": api_date(at), "status": status, "blacklist": b} for at, status, b in timed]
    count, changed = count_and_change(s, asset)
    return {
        "value": asset, "tags": ["team-transactional"], "hostname": [],
        "senderscore": 85, "senderscore_prev": 85, "senderscore_change": change(0),
        "senderscore_history": [{"value": "85", "date": api_date(now - 3600)}],
        "blacklisted": count, "blacklisted_prev": count - changed, "blacklisted_change": change(changed),
        "blacklisted_history": [{"value": count, "date": api_date(now - 3600)}],
        "blacklist_history": events,
        "snds_blocked": None, "snds_blocked_change": change(None),
        "snds_reputation": None, "snds_reputation_change": change(None),
        "snds_data": [], "hostname_history": [], "administrative_notes": [],
    }


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def answer(self, status, body=None):
        data = json.dumps(body).encode() if body is not None else b""
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if status == 503:
            self.send_header("Retry-After", "0")
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        s = state()
        if self.headers.get("Authorization") != "Bearer e2e-token":
            return self.answer(401, {"message": "unauthorized"})
        with lock:
            counter["requests"] += 1
            odd = counter["requests"] % 2 == 1
        if s.get("down") or (s.get("flaky") and odd):
            return self.answer(503, {"message": "try again"})
        path = self.path.split("?")[0]
        if path == "/api/v1/user":
            return self.answer(200, {"id": 1, "name": "e2e", "email": "e2e@example.com", "project_id": 1})
        if path == "/api/v1/system-check":
            return self.answer(200, {"status": "ok", "message": "ok"})
        if path == "/api/v1/ip-list":
            return self.answer(200, [list_item(s, i) for i in range(s["assets"])])
        if path == "/api/v1/domain-list":
            return self.answer(200, [])
        if path.startswith("/api/v1/asset/"):
            asset = path[len("/api/v1/asset/"):]
            if asset not in {name(i) for i in range(s["assets"])}:
                return self.answer(404, {"message": "not found"})
            return self.answer(200, report(s, asset))
        return self.answer(404, {"message": "not found"})


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
with open(port_file + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
import os
os.rename(port_file + ".tmp", port_file)
server.serve_forever()
