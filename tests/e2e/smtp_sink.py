"""An SMTP server for end-to-end tests: every message it receives is written, as received, to
DIR/N.eml (N counting from 1). Binds 127.0.0.1 on a free port and writes the port to PORT_FILE.

Usage: smtp_sink.py DIR PORT_FILE
Needs aiosmtpd (Debian: python3-aiosmtpd).
"""
import os
import socket
import sys
import threading

from aiosmtpd.controller import Controller

directory, port_file = sys.argv[1], sys.argv[2]
os.makedirs(directory, exist_ok=True)
lock = threading.Lock()
count = {"messages": 0}


class Handler:
    async def handle_DATA(self, server, session, envelope):
        with lock:
            count["messages"] += 1
            path = os.path.join(directory, f"{count['messages']}.eml")
        with open(path + ".part", "wb") as f:
            f.write(envelope.original_content or envelope.content)
        os.rename(path + ".part", path)
        return "250 Message accepted"


probe = socket.socket()
probe.bind(("127.0.0.1", 0))
port = probe.getsockname()[1]
probe.close()
controller = Controller(Handler(), hostname="127.0.0.1", port=port)
controller.start()
with open(port_file + ".part", "w") as f:
    f.write(str(port))
os.rename(port_file + ".part", port_file)
threading.Event().wait()
