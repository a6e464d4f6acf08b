#!/usr/bin/env python3
"""GET /readyz without a token from one source address, as fast as
PROCESSES x CONNECTIONS keep-alive connections can ask, each sending DEPTH
requests at a time (HTTP/1.1 pipelining: one Python client waiting for
each answer tops out near a thousand a second, far below what the phase
asks for), until SIGTERM (bench/run's readyz phase; docs/security.md,
"/readyz"). Prints, once stopped:
"readyz_flood: requests=N seconds=S rate=R 200=A 429=B 503=C other=D reconnects=E".

    readyz_flood.py HOST PORT PROCESSES CONNECTIONS [DEPTH]
"""
import multiprocessing
import os
import re
import signal
import socket
import sys
import threading
import time
from collections import Counter

host, port = sys.argv[1], int(sys.argv[2])
processes, connections = int(sys.argv[3]), int(sys.argv[4])
depth = int(sys.argv[5]) if len(sys.argv) > 5 else 32
request = b"GET /readyz HTTP/1.1\r\nHost: " + host.encode() + b"\r\n\r\n"
status_line = re.compile(rb"HTTP/1\.1 (\d{3}) ")


def one_process(out):
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    counts = Counter()
    lock = threading.Lock()

    def ask():
        local = Counter()
        sock = None
        while not stop.is_set():
            try:
                if sock is None:
                    sock = socket.create_connection((host, port), timeout=5)
                sock.sendall(request * depth)
                answered, pending = 0, b""
                while answered < depth:
                    chunk = sock.recv(65536)
                    if not chunk:
                        raise ConnectionError("closed")
                    pending += chunk
                    found = status_line.findall(pending)
                    for code in found:
                        local[int(code)] += 1
                    answered += len(found)
                    # Keep only what could still hold the start of a status line.
                    last = pending.rfind(b"HTTP/1.1 ")
                    pending = pending[last + 9:] if last >= 0 else pending[-16:]
            except (OSError, ConnectionError):
                local["reconnects"] += 1
                if sock is not None:
                    sock.close()
                sock = None
        with lock:
            counts.update(local)

    workers = [threading.Thread(target=ask) for _ in range(connections)]
    for t in workers:
        t.start()
    for t in workers:
        t.join()
    out.put(dict(counts))


if __name__ == "__main__":
    queue = multiprocessing.Queue()
    procs = [multiprocessing.Process(target=one_process, args=(queue,)) for _ in range(processes)]
    stopped = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopped.set())
    began = time.monotonic()
    for p in procs:
        p.start()
    while not stopped.is_set():
        stopped.wait(0.2)
    for p in procs:
        os.kill(p.pid, signal.SIGTERM)
    total = Counter()
    for _ in procs:
        total.update(queue.get())
    for p in procs:
        p.join()
    seconds = time.monotonic() - began
    reconnects = total.pop("reconnects", 0)
    n = sum(total.values())
    other = n - total[200] - total[429] - total[503]
    print(f"readyz_flood: requests={n} seconds={seconds:.1f} rate={n / seconds:.0f} 200={total[200]} "
          f"429={total[429]} 503={total[503]} other={other} reconnects={reconnects}", flush=True)
