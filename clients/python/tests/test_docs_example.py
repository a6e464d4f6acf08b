"""The acceptance test: docs/clients.md's Python script, taken from between
its markers (the page and this test cannot drift apart), run against the
live cluster by a fresh virtual environment into which the package was
installed with `pip install ./clients/python` and no package index."""
from __future__ import annotations

import re
import subprocess
import sys

from baton_cluster import REPO

DOC = REPO / "docs" / "clients.md"


def docs_script() -> str:
    text = DOC.read_text(encoding="utf-8")
    m = re.search(r"<!-- python-example: begin[^>]*-->\s*```python\n(.*?)```\s*<!-- python-example: end -->", text,
                  re.S)
    assert m, "docs/clients.md has no python-example block"
    return m.group(1)


def test_the_docs_script_is_ten_lines():
    assert len(docs_script().rstrip("\n").split("\n")) <= 10


def test_the_docs_script_runs_from_an_offline_install(cluster, tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True, timeout=120)
    # Nothing of the caller's: no index, no user config, no BATON_* but ours.
    env = {"PATH": f"{venv / 'bin'}:/usr/local/bin:/usr/bin:/bin", "HOME": str(tmp_path), "LANG": "C.UTF-8",
           "PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PYTHONDONTWRITEBYTECODE": "1"}
    pip = subprocess.run([str(venv / "bin" / "pip"), "install", str(REPO / "clients" / "python")], env=env,
                         capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert pip.returncode == 0, pip.stdout + pip.stderr
    where = subprocess.run([str(venv / "bin" / "python"), "-c", "import baton_client; print(baton_client.__file__)"],
                           env=env, capture_output=True, text=True, cwd=tmp_path, check=True).stdout
    assert where.startswith(str(venv)), where  # the installed copy, not the source tree

    script = tmp_path / "greet.py"
    script.write_text(docs_script())
    leader = cluster.leader()
    follower = next(n for n in cluster.node_names if n != leader)  # the trigger is redirected
    env.update(BATON_ADDR=cluster.addr(follower), BATON_TOKEN_FILE=cluster.token_file,
               BATON_CA_FILE=cluster.ca_file)
    r = subprocess.run([str(venv / "bin" / "python"), str(script)], env=env, capture_output=True, text=True,
                       timeout=180, cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    m = re.match(r"run (\d+) of greet\nrun \1 ended SUCCEEDED\n(.*)\Z", r.stdout, re.S)
    assert m, r.stdout
    assert m.group(2) == "hello python\n"

    # What it printed is the run's output as the API has it.
    sys.path.insert(0, str(REPO / "clients" / "python"))
    from baton_client import Client
    run = Client(cluster.addresses, token_file=cluster.token_file, ca_file=cluster.ca_file, env={}).get_run(
        int(m.group(1)))
    assert run.job == "greet" and run.succeeded and run.output() == m.group(2)
    assert run.payload == {"parameters": {"name": "python"}}
