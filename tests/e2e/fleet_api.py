"""A reputation API for end-to-end tests, serving a fleet described by a JSON state file that
the test edits while it runs (read again on every request):

  {"assets": 200,                       # IP addresses 10.0.0.0 onwards
   "listings": [{"asset": "10.0.0.1", "blacklist": "SpamCop",
                 "listed": 1700000000, "delisted": null}],   # Unix times
   "flaky": false}                      # answer every other request 503 (retries get past)

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


def listed_on(s, asset):
    return [l for l in s["listings"] if l["asset"] == asset and l.get("delisted") is None]


def change(value):
    return {"last_check": value}


def list_item(s, i):
    count = len(listed_on(s, name(i)))
    return {
        "ip": name(i), "hosts": [f"mta{i}.example.com"],
        "senderscore": 85, "senderscore_prev": 85, "senderscore_change": change(0),
        "blacklisted": count, "blacklisted_change": change(0),
        "snds_blocked": None, "snds_blocked_change": change(None),
        "snds_reputation": None, "snds_reputation_change": change(None),
    }


def report(s, asset):
    now = time.time()
    events = []
    for l in s["listings"]:
        if l["asset"] != asset:
            continue
        events.append({"date": api_date(l["listed"]), "status": "Listed", "blacklist": l["blacklist"]})
        if l.get("delisted") is not None:
            events.append({"date": api_date(l["delisted"]), "status": "Delisted", "blacklist": l["blacklist"]})
    count = len(listed_on(s, asset))
    return {
        "value": asset, "tags": ["team-transactional"], "hostname": [],
        "senderscore": 85, "senderscore_prev": 85, "senderscore_change": change(0),
        "senderscore_history": [{"value": "85", "date": api_date(now - 3600)}],
        "blacklisted": count, "blacklisted_prev": count, "blacklisted_change": change(0),
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
        if s.get("flaky") and odd:
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
