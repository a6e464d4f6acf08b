#!/usr/bin/env python3
"""A webhook receiver for the process tests (cmd/tests/ctl_test.cpp).

HTTPS on a free loopback port with the certificate and key it is given;
it checks each delivery's Baton-Signature with the secret, answers 503 to
the first attempt of every event id and 200 after, and processes an event
the first time it answers 200 for its id, never again (what docs/webhooks.md
asks of a receiver). Each request is one JSON line in the log file.

usage: webhook_receiver.py PORT_FILE CERT KEY SECRET LOG
"""
import hashlib
import hmac
import http.server
import json
import os
import ssl
import sys

port_file, cert, key, secret, log_path = sys.argv[1:6]
attempts_seen = {}
processed = set()


class Receiver(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        fields = dict(p.split("=", 1) for p in self.headers.get("Baton-Signature", "").split(",") if "=" in p)
        expected = hmac.new(secret.encode(), fields.get("t", "").encode() + b"." + body, hashlib.sha256).hexdigest()
        event = self.headers.get("Baton-Event-Id", "")
        attempts_seen[event] = attempts_seen.get(event, 0) + 1
        status = 503 if attempts_seen[event] == 1 else 200
        first_time = status == 200 and event not in processed
        if first_time:
            processed.add(event)
        payload = json.loads(body)
        with open(log_path, "a") as log:
            log.write(json.dumps({
                "event": event,
                "kind": self.headers.get("Baton-Event-Kind"),
                "attempt": self.headers.get("Baton-Delivery-Attempt"),
                "signature_ok": hmac.compare_digest(expected, fields.get("v1", "")),
                "status": status,
                "processed": first_time,
                "payload_id": payload.get("id"),
                "data": payload.get("data"),
            }) + "\n")
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


server = http.server.HTTPServer(("127.0.0.1", 0), Receiver)
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(cert, key)
server.socket = context.wrap_socket(server.socket, server_side=True)
with open(port_file + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
os.rename(port_file + ".tmp", port_file)
server.serve_forever()
