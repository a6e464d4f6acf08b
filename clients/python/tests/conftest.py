"""Fixtures of the Python client's tests.

``cluster`` (session): a live TLS cluster on loopback (tests/baton_cluster.py)
running the binary named by BATON_BINARY (default <repo>/build/cmd/baton),
with configs/jobs/samples.yaml and tests/jobs.yaml applied and the sample
jobs' schedules paused (two cores: nothing runs that a test did not ask for).
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # baton_client from this source tree
sys.path.insert(0, str(HERE))

from baton_cluster import REPO, LiveCluster  # noqa: E402

from baton_client import Client  # noqa: E402


@pytest.fixture(scope="session")
def baton_binary() -> str:
    path = os.environ.get("BATON_BINARY") or str(REPO / "build" / "cmd" / "baton")
    if not os.access(path, os.X_OK):
        pytest.fail(f"no baton binary at {path}: set BATON_BINARY")
    return path


@pytest.fixture(scope="session")
def cluster(baton_binary, request) -> LiveCluster:
    c = LiveCluster(baton_binary, [str(REPO / "configs" / "jobs" / "samples.yaml"), str(HERE / "jobs.yaml")])
    request.addfinalizer(c.stop)
    c.start()
    admin = Client(c.addresses, token_file=c.token_file, ca_file=c.ca_file, env={})
    for job in admin.list_jobs():
        if job.schedule:
            admin.pause_job(job.name)
    return c


@pytest.fixture
def client(cluster) -> Client:
    return Client(cluster.addresses, token_file=cluster.token_file, ca_file=cluster.ca_file, env={})


@pytest.fixture(scope="session")
def tls_dirs(tmp_path_factory):
    """Two throwaway CAs: "trusted" (the client's) and "other" (a stranger),
    each with a certificate for 127.0.0.1, ::1 and localhost."""
    out = {}
    for name in ("trusted", "other"):
        d = tmp_path_factory.mktemp(f"ca-{name}")
        subprocess.run([str(REPO / "scripts" / "throwaway-ca"), str(d)], check=True, capture_output=True)
        out[name] = d
    return out
