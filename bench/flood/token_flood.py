#!/usr/bin/env python3
"""Made-up bearer tokens against a node's API, as fast as CONNECTIONS
keep-alive connections can send them, each waiting for its answer as an
HTTP/1.1 client does, from ADDRESSES source addresses (127.0.0.10 and up;
each has its own failure budget at the node), until SIGTERM (bench/run's flood
phase, docs/security.md "Failed authentications"). Half the tokens have the
issued shape (baton_ and 64 hex digits: a lookup unless the per-source limit
refuses first), half do not (refused before any hash). Prints the answers
by status once stopped: "flood: requests=N 401=A 429=B other=C". With
CA_FILE it speaks TLS and verifies the node against that CA (bench/run with
BATON_BENCH_TLS): a connection closed by the node costs the flooder a new
handshake, as it would cost an attacker.

    token_flood.py HOST PORT CONNECTIONS [ADDRESSES [CA_FILE]]

BATON_FLOOD_FRESH=1 opens a new connection for every request (over TLS, a
handshake per made-up token: what a flooder that does not wait for the
held answer's connection would do).
"""
import http.client
import os
import secrets
import signal
import ssl
import sys
import threading
from collections import Counter

host, port, connections = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
addresses = int(sys.argv[4]) if len(sys.argv) > 4 else 1
fresh = os.environ.get("BATON_FLOOD_FRESH", "") not in ("", "0")
tls = ssl.create_default_context(cafile=sys.argv[5]) if len(sys.argv) > 5 else None
stop = threading.Event()
counts = Counter()
lock = threading.Lock()


def flood(n):
    conn = None
    local = Counter()
    i = 0
    while not stop.is_set():
        try:
            if conn is None:
                source = ("127.0.0." + str(10 + n % addresses), 0) if addresses > 1 else None
                if tls is None:
                    conn = http.client.HTTPConnection(host, port, timeout=5, source_address=source)
                else:
                    conn = http.client.HTTPSConnection(host, port, timeout=5, source_address=source, context=tls)
                local["opened"] += 1
            i += 1
            token = "baton_" + secrets.token_hex(32) if i % 2 else secrets.token_urlsafe(24)
            conn.request("GET", "/api/v1/jobs", headers={"Authorization": "Bearer " + token})
            r = conn.getresponse()
            r.read()
            local[r.status] += 1
            if fresh or r.getheader("Connection", "").lower() == "close":
                conn.close()
                conn = None
        except (OSError, http.client.HTTPException):
            local["error"] += 1
            if conn is not None:
                conn.close()
            conn = None
    with lock:
        counts.update(local)


signal.signal(signal.SIGTERM, lambda *_: stop.set())
threads = [threading.Thread(target=flood, args=(n,)) for n in range(connections)]
for t in threads:
    t.start()
while not stop.is_set():
    stop.wait(0.5)
for t in threads:
    t.join()
opened = counts.pop("opened", 0)
total = sum(counts.values())
other = total - counts[401] - counts[429]
handshakes = f" {'tls_' if tls is not None else ''}connections={opened}"
print(f"flood: requests={total} 401={counts[401]} 429={counts[429]} other={other}{handshakes}", flush=True)
os._exit(0)
