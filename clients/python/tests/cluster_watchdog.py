"""Cleans up a test cluster whose test process died without stopping it
(killed by a timeout, say): the fixtures' finalizers cover everything else.

    cluster_watchdog.py PARENT_PID PARENT_START STATE_DIR PG_DIR REPO

Detaches itself (double fork: a tree kill of the test process does not take
it along), then once a second: while STATE_DIR/watchdog exists and the
parent (the same process: same start time) lives, nothing. If the file is
gone, the cluster was stopped normally: exit. If the parent is gone, kill
the process groups listed in STATE_DIR/pids (each only if its leader is
still the process recorded: same start time), stop the PostgreSQL in
PG_DIR with scripts/pg-private and remove STATE_DIR.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time


def start_time(pid: int):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def main() -> None:
    parent, parent_start, state_dir, pg_dir, repo = (int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4],
                                                     sys.argv[5])
    if os.fork():
        os._exit(0)
    os.setsid()
    flag = os.path.join(state_dir, "watchdog")
    while True:
        if not os.path.exists(flag):
            return
        if start_time(parent) != parent_start:
            break
        time.sleep(1)
    try:
        with open(os.path.join(state_dir, "pids")) as f:
            for line in f:
                pid, started = line.split()
                if start_time(int(pid)) == started:
                    try:
                        os.killpg(int(pid), signal.SIGKILL)
                    except ProcessLookupError:
                        pass
    except OSError:
        pass
    subprocess.run([os.path.join(repo, "scripts", "pg-private"), "stop", pg_dir], stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    shutil.rmtree(state_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
