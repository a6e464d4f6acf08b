#!/usr/bin/env python3
"""GET /readyz without a token from one source address, as fast as
PROCESSES x THREADS keep-alive connections can ask, each waiting for its
answer, until SIGTERM (bench/run's readyz phase; docs/security.md,
"/readyz"). Processes, not threads alone: one Python process tops out
below the rate the phase asks for. Prints, once stopped:
"readyz_flood: requests=N seconds=S rate=R 200=A 429=B 503=C other=D".

    readyz_flood.py HOST PORT PROCESSES THREADS
"""
import http.client
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections import Counter

host, port, processes, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])


def one_process(out):
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    counts = Counter()
    lock = threading.Lock()

    def ask():
        local = Counter()
        conn = None
        while not stop.is_set():
            try:
                if conn is None:
                    conn = http.client.HTTPConnection(host, port, timeout=5)
                conn.request("GET", "/readyz")
                r = conn.getresponse()
                r.read()
                local[r.status] += 1
                if r.getheader("Connection", "").lower() == "close":
                    conn.close()
                    conn = None
            except (OSError, http.client.HTTPException):
                local["error"] += 1
                if conn is not None:
                    conn.close()
                conn = None
        with lock:
            counts.update(local)

    workers = [threading.Thread(target=ask) for _ in range(threads)]
    for t in workers:
        t.start()
    for t in workers:
        t.join()
    out.put(dict(counts))


if __name__ == "__main__":
    queue = multiprocessing.Queue()
    procs = [multiprocessing.Process(target=one_process, args=(queue,)) for _ in range(processes)]
    began = time.monotonic()
    for p in procs:
        p.start()
    stopped = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopped.set())
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
    n = sum(total.values())
    other = n - total[200] - total[429] - total[503]
    print(f"readyz_flood: requests={n} seconds={seconds:.1f} rate={n / seconds:.0f} 200={total[200]} "
          f"429={total[429]} 503={total[503]} other={other}", flush=True)
