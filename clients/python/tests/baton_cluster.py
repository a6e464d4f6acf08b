"""A live Baton cluster on loopback for the Python client's tests.

What scripts/demo does, smaller and faster: a private PostgreSQL
(scripts/pg-private, owned by a role that migrates; the nodes connect as
baton_node with row rights only), `baton migrate --grant-to baton_node`, a
throwaway CA (scripts/throwaway-ca), three nodes with a short lease, job
files loaded with `baton ctl apply`, and workers. Every process runs in its
own process group, which `stop()` kills; the database is removed with
`scripts/pg-private stop`.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]


def free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def _postgres_can_traverse(path: Path) -> bool:
    if os.geteuid() != 0:
        return True
    return subprocess.run(["runuser", "-u", "postgres", "--", "test", "-x", str(path)]).returncode == 0


def _start_time(pid: int) -> str:
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[19]


def _exited(p: subprocess.Popen) -> bool:
    """Whether p has exited, without reaping it."""
    try:
        return os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def _signal_group(p: subprocess.Popen, sig: int) -> None:
    if p.returncode is not None:
        return
    try:
        os.killpg(p.pid, sig)
    except ProcessLookupError:
        pass


class LiveCluster:
    """Nodes n1..nN and workers w1..wM; addresses are "127.0.0.1:PORT"."""

    def __init__(self, binary: str, jobs_files: list[str], nodes: int = 3, workers: int = 1,
                 lease: str = "3s") -> None:
        self.binary = binary
        self.jobs_files = jobs_files
        self.node_names = [f"n{i}" for i in range(1, nodes + 1)]
        self.worker_names = [f"w{i}" for i in range(1, workers + 1)]
        self.lease = lease
        # Under /tmp: postgres (run as its own user when we are root) must be
        # able to traverse the path of its data directory (scripts/demo).
        self.dir = Path(tempfile.mkdtemp(prefix="baton-pyclient-", dir="/tmp"))
        os.chmod(self.dir, 0o755)
        self.pg_dir = self.dir / "pg"
        self.ports = {n: free_port() for n in self.node_names}
        self.procs: dict[str, subprocess.Popen] = {}  # the current process of each name
        self.spawned: list[subprocess.Popen] = []  # every process started, for stop()
        self.pg_started = False
        self.url = ""

    # --- addresses and files ----------------------------------------------
    def addr(self, node: str) -> str:
        return f"127.0.0.1:{self.ports[node]}"

    @property
    def addresses(self) -> list[str]:
        return [self.addr(n) for n in self.node_names]

    @property
    def ca_file(self) -> str:
        return str(self.dir / "tls" / "ca.crt")

    @property
    def token_file(self) -> str:
        return str(self.dir / "admin.token")

    @property
    def token(self) -> str:
        return (self.dir / "admin.token").read_text().strip()

    def ssl_context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=self.ca_file)

    # --- life cycle -----------------------------------------------------------
    def start(self) -> "LiveCluster":
        if not _postgres_can_traverse(self.dir):
            raise RuntimeError(f"postgres cannot traverse {self.dir}")
        # Should this process die without stop() (a timeout's kill), the
        # watchdog stops what is listed in dir/pids and the database.
        (self.dir / "watchdog").touch()
        (self.dir / "pids").touch()
        subprocess.run([sys.executable, str(Path(__file__).with_name("cluster_watchdog.py")), str(os.getpid()),
                        _start_time(os.getpid()), str(self.dir), str(self.pg_dir), str(REPO)],
                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        env = dict(os.environ, BATON_PG_OWNER_ROLE="1")
        self.url = subprocess.run([str(REPO / "scripts/pg-private"), "start", str(self.pg_dir), "baton"],
                                  env=env, check=True, capture_output=True, text=True).stdout.strip()
        self.pg_started = True
        node_url = self.url.replace("baton@", "baton_node@", 1)
        subprocess.run([self.binary, "migrate", "--database-url", self.url, "--grant-to", "baton_node"],
                       check=True, capture_output=True, text=True)
        subprocess.run([str(REPO / "scripts/throwaway-ca"), str(self.dir / "tls")], check=True,
                       capture_output=True)
        for name in ("worker.token", "admin.token"):
            (self.dir / name).write_text(os.urandom(24).hex())
            os.chmod(self.dir / name, 0o600)
        for n in self.node_names:
            (self.dir / f"{n}.yaml").write_text(
                f"node_id: {n}\n"
                f"listen: {self.addr(n)}\n"
                f"worker_token_file: {self.dir}/worker.token\n"
                f"admin_token_file: {self.dir}/admin.token\n"
                f"incident_journal_dir: {self.dir}/journal-{n}\n"
                f"database:\n  url: {node_url}\n"
                f"election:\n  lease: {self.lease}\n  renew_every: 500ms\n  safety_margin: 1s\n"
                f"  poll_every: 300ms\n"
                f"runtime:\n  continuation_timeout: 20s\n  continuation_margin: 5s\n"
                f"tls:\n  cert_file: {self.dir}/tls/node.crt\n  key_file: {self.dir}/tls/node.key\n")
        for n in self.node_names:
            self.start_node(n)
        self.wait_for(lambda: self.leader() is not None, 30, "a leader")
        self.ctl("apply", *sum((["-f", f] for f in self.jobs_files), []))
        for w in self.worker_names:
            (self.dir / f"{w}.yaml").write_text(
                f"worker_id: {w}\n"
                f"coordinators: [{', '.join(self.addresses)}]\n"
                f"token_file: {self.dir}/worker.token\n"
                f"capacity: 4\n"
                f"labels: {{zone: local}}\n"
                f"spool_dir: {self.dir}/spool-{w}\n"
                f"reconnect: {{base: 50ms, max: 500ms}}\n"
                f"tls:\n  ca_file: {self.ca_file}\n")
            self._spawn(w, [self.binary, "worker", "--config", str(self.dir / f"{w}.yaml")])
        self.wait_for(lambda: self.attached_workers() >= len(self.worker_names), 30, "the workers")
        return self

    def _spawn(self, name: str, argv: list[str]) -> None:
        if self.alive(name):
            raise RuntimeError(f"{name} is running already")
        log = open(self.dir / f"{name}.log", "ab")
        # Its own session: stop() kills the whole group (task processes too).
        self.procs[name] = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                            start_new_session=True)
        self.spawned.append(self.procs[name])
        with open(self.dir / "pids", "a") as f:
            f.write(f"{self.procs[name].pid} {_start_time(self.procs[name].pid)}\n")
        log.close()

    def start_node(self, node: str) -> None:
        self._spawn(node, [self.binary, "node", "--config", str(self.dir / f"{node}.yaml")])
        self.wait_for(lambda: self.healthy(node), 30, f"{node} /healthz")

    def kill(self, name: str, sig: int = signal.SIGKILL) -> None:
        p = self.procs.get(name)
        if p is None:
            return
        _signal_group(p, sig)
        if sig == signal.SIGKILL:
            p.wait(10)

    def alive(self, name: str) -> bool:
        p = self.procs.get(name)
        return p is not None and p.poll() is None

    def stop(self) -> None:
        # A process group is signalled only while its leader is unreaped
        # (returncode None): until then its pid, the group's id, cannot have
        # been given to anything else.
        (self.dir / "watchdog").unlink(missing_ok=True)  # stopped the normal way
        live = [p for p in self.spawned if p.returncode is None]
        for p in live:
            _signal_group(p, signal.SIGTERM)
        end = time.monotonic() + 5
        while time.monotonic() < end and not all(_exited(p) for p in live):
            time.sleep(0.05)
        for p in live:
            _signal_group(p, signal.SIGKILL)  # the leader if it lingers, stragglers of its group
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                pass
        if self.pg_started:
            subprocess.run([str(REPO / "scripts/pg-private"), "stop", str(self.pg_dir)], capture_output=True)
            self.pg_started = False
        if os.environ.get("BATON_KEEP_CLUSTER"):
            print(f"cluster files kept in {self.dir}")
        else:
            shutil.rmtree(self.dir, ignore_errors=True)

    # --- what the cluster says --------------------------------------------
    def get(self, node: str, path: str, token: bool = False, timeout: float = 2.0):
        req = urllib.request.Request(f"https://{self.addr(node)}{path}")
        if token:
            req.add_header("Authorization", f"Bearer {self.token}")
        with urllib.request.urlopen(req, context=self.ssl_context(), timeout=timeout) as r:
            return r.status, r.read()

    def healthy(self, node: str) -> bool:
        try:
            return self.get(node, "/healthz")[0] == 200
        except Exception:
            return False

    def status(self, node: str) -> dict | None:
        try:
            return json.loads(self.get(node, "/status")[1])
        except Exception:
            return None

    def leader(self) -> str | None:
        """The node that says it leads (asked of each live node)."""
        for n in self.node_names:
            if not self.alive(n):
                continue
            s = self.status(n)
            if s and s.get("role") == "leader":
                return n
        return None

    def attached_workers(self) -> int:
        leader = self.leader()
        s = self.status(leader) if leader else None
        return int(s.get("attached_workers") or 0) if s else 0

    def ctl(self, *args: str) -> str:
        node = next(n for n in self.node_names if self.alive(n))
        r = subprocess.run([self.binary, "ctl", "--addr", self.addr(node), "--ca", self.ca_file,
                            "--token-file", self.token_file, *args],
                           capture_output=True, text=True, timeout=60, env=dict(os.environ, HOME=str(self.dir)))
        if r.returncode != 0:
            raise RuntimeError(f"baton ctl {' '.join(args)}: exit {r.returncode}: {r.stdout}{r.stderr}")
        return r.stdout

    @staticmethod
    def wait_for(cond, seconds: float, what: str) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            if cond():
                return
            time.sleep(0.1)
        raise TimeoutError(f"no {what} within {seconds} s")
