"""A webhook receiver for end-to-end tests: every POST's JSON body is appended, one line each,
to DIR/notified-PATH.jsonl (PATH without its slashes: `pager`, `tickets`, `slack`). Binds
127.0.0.1:PORT.

Usage: webhook_sink.py DIR PORT
"""
import json
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer

work, port = sys.argv[1], int(sys.argv[2])


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        with open(f"{work}/notified-{self.path.strip('/')}.jsonl", "a") as f:
            f.write(json.dumps(json.loads(body)) + "\n")
        self.send_response(200)
        self.end_headers()


HTTPServer(("127.0.0.1", port), Handler).serve_forever()
