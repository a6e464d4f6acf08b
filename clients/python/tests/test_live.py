"""The client against a live TLS cluster on loopback (conftest.py: three
nodes, a worker, a private PostgreSQL). The leader-kill test is last: it
restarts the node it killed."""
from __future__ import annotations

import datetime as dt
import re
import threading
import time
import uuid

import pytest

from baton_client import (Client, Conflict, Forbidden, InvalidParameters, NotFound, Unauthorized)
from fakes import ForwardingProxy


def parse_time(s: str) -> dt.datetime:
    # PostgreSQL trims trailing zeros of the fraction; fromisoformat of
    # Python < 3.11 wants 0, 3 or 6 digits.
    m = re.match(r"^([^.]*)(?:\.(\d+))?(.*)$", s.replace("Z", "+00:00"))
    assert m, s
    head, digits, zone = m.groups()
    return dt.datetime.fromisoformat(f"{head}.{(digits or '').ljust(6, '0')[:6]}{zone}")


def wait_until(cond, seconds=30.0, what="the condition"):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        value = cond()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"no {what} within {seconds} s")


def running(client, run_id):
    return wait_until(lambda: client.get_run(run_id).state == "RUNNING", 30, f"run {run_id} RUNNING")


def test_trigger_wait_and_logs(client):
    t = client.trigger("py-echo", {"who": "pytest"})
    assert t.created and t.job == "py-echo" and t.idempotency_key
    run = client.wait(t.run_id, timeout=60)
    assert run.state == "SUCCEEDED" and run.succeeded and run.finished
    assert run.payload == {"parameters": {"who": "pytest"}}
    assert run.idempotency_key == t.idempotency_key  # a key is sent by default
    assert run.attempts[0].exit_code == 0 and run.attempts[0].worker_id == "w1"
    chunks = list(client.logs(t.run_id))
    assert "".join(c.text for c in chunks if c.stream == "stdout") == "hello from pytest\n"
    assert "".join(c.text for c in chunks if c.stream == "stderr") == "to stderr\n"
    assert run.output() == "hello from pytest\n"


def test_the_same_key_twice_is_one_run(client):
    key = f"order-{uuid.uuid4()}"
    first = client.trigger("py-echo", {"who": "once"}, idempotency_key=key)
    again = client.trigger("py-echo", {"who": "once"}, idempotency_key=key)
    assert first.created and not again.created and again.run_id == first.run_id
    client.wait(first.run_id, timeout=60)
    # Finished: the key still names it (for 24 hours).
    late = client.trigger("py-echo", {"who": "once"}, idempotency_key=key)
    assert not late.created and late.run_id == first.run_id
    assert [r.id for r in client.list_runs(idempotency_key=key)] == [first.run_id]


def test_a_trigger_whose_answer_was_lost_runs_once(cluster, client):
    """The node creates the run, the answer never arrives (a proxy drops it):
    the client sends the trigger again with the same key and learns the run
    the first one made; the job runs once."""
    leader = cluster.leader()
    tls = cluster.dir / "tls"
    with ForwardingProxy(cluster.addr(leader), cluster.ca_file, (str(tls / "node.crt"), str(tls / "node.key")),
                         drop=lambda seen, n: n == 0) as proxy:
        c = Client([proxy.address], token_file=cluster.token_file, ca_file=cluster.ca_file, env={})
        t = c.trigger("py-echo", {"who": "a lost answer"})
    assert len(proxy.requests) == 2
    assert proxy.forwarded_answers[0][0] == 201  # the first try made the run
    assert not t.created  # the retry was given that run
    assert [r.id for r in client.list_runs(idempotency_key=t.idempotency_key)] == [t.run_id]
    assert client.list_runs(job="py-echo", limit=1)[0].id == t.run_id  # and nothing after it
    assert client.wait(t.run_id, timeout=60).output() == "hello from a lost answer\n"


def test_a_write_to_a_follower_is_redirected_to_the_leader(cluster):
    leader = cluster.leader()
    follower = next(n for n in cluster.node_names if n != leader)
    c = Client(cluster.addr(follower), token_file=cluster.token_file, ca_file=cluster.ca_file, env={})
    r = c.transport.request("POST", "/api/v1/jobs/py-echo/trigger", None, {"Idempotency-Key": str(uuid.uuid4())})
    assert r.status == 201 and r.address == cluster.addr(leader)
    t = c.trigger("py-echo", {"who": "a follower"})
    assert t.created
    assert c.wait(t.run_id, timeout=60).output() == "hello from a follower\n"


def test_errors_carry_the_apis_code(cluster, client):
    with pytest.raises(NotFound) as e:
        client.trigger("no-such-job")
    assert (e.value.code, e.value.status) == ("unknown_job", 404)
    with pytest.raises(NotFound) as e:
        client.get_run(987654321)
    assert e.value.code == "not_found"
    with pytest.raises(InvalidParameters) as e:
        client.trigger("py-echo", {"undeclared": "x"})
    assert e.value.code == "invalid_parameters" and "undeclared" in e.value.message
    bad = Client(cluster.addresses, token="not-a-token-of-this-cluster", ca_file=cluster.ca_file, env={})
    with pytest.raises(Unauthorized) as e:
        bad.list_runs()
    assert (e.value.code, e.value.status) == ("unauthenticated", 401)
    made = client._call("POST", "/api/v1/tokens", {"name": f"reader-{uuid.uuid4().hex[:8]}", "role": "read"})
    reader = Client(cluster.addresses, token=made["token"], ca_file=cluster.ca_file, env={})
    assert reader.get_job("py-echo").name == "py-echo"
    with pytest.raises(Forbidden) as e:
        reader.trigger("py-echo")
    assert (e.value.code, e.value.status) == ("forbidden", 403)


def test_cancel(client):
    t = client.trigger("py-sleep")
    running(client, t.run_id)
    assert client.cancel(t.run_id).run_id == t.run_id
    assert client.wait(t.run_id, timeout=30).state == "CANCELED"
    with pytest.raises(Conflict):
        client.cancel(t.run_id)


def test_logs_follow_a_running_run(client):
    t = client.trigger("py-stream")
    seen = []
    for chunk in client.logs(t.run_id, follow=True, interval=0.2, timeout=60):
        seen.append((chunk.text, client.get_run(t.run_id).finished))
    assert "".join(text for text, _ in seen) == "first\nsecond\n"
    assert seen[0] == ("first\n", False)  # streamed while the run ran
    assert client.get_run(t.run_id).state == "SUCCEEDED"


def test_run_at(client):
    at = dt.datetime.now(dt.timezone.utc).replace(microsecond=0) + dt.timedelta(seconds=3)
    t = client.trigger("py-echo", {"who": "later"}, run_at=at)
    assert t.run_at and parse_time(t.run_at) == at
    run = client.wait(t.run_id, timeout=60)
    assert run.state == "SUCCEEDED" and parse_time(run.started_at) >= at


def test_trigger_many_is_one_batch_and_a_repeat_gives_the_same_runs(client):
    keys = [f"batch-{uuid.uuid4()}" for _ in range(3)]
    made = client.trigger_many("py-echo", [{"who": "a"}, {"who": "b"}, None], idempotency_keys=keys,
                               priority=-5, timeout=30)
    assert [t.created for t in made] == [True, True, True]
    again = client.trigger_many("py-echo", [{"who": "a"}, {"who": "b"}, None], idempotency_keys=keys)
    assert [t.run_id for t in again] == [t.run_id for t in made] and not any(t.created for t in again)
    run = client.wait(made[0].run_id, timeout=60)
    assert run.state == "SUCCEEDED"
    assert (run.raw["priority"], run.raw["timeout_ms"]) == (-5, 30000)
    with pytest.raises(InvalidParameters, match="priority 1 is outside what the job allows"):
        client.trigger("py-echo", priority=1)


def test_events_are_recorded_once_per_dedupe_key(client):
    key = f"deploy-{uuid.uuid4()}"
    first = client.emit_event("py-client-test", {"version": "1.2"}, dedupe_key=key)
    again = client.emit_event("py-client-test", {"version": "1.2"}, dedupe_key=key)
    assert first.created and again.created is False and again.id == first.id

    def processed():
        mine = [e for e in client.list_events(kind="py-client-test") if e.id == first.id]
        return mine[0] if mine and mine[0].runs else None

    event = wait_until(processed, 30, "run of the event")
    assert event.dedupe_key == key and event.payload == {"version": "1.2"}
    assert [r["job"] for r in event.runs] == ["py-on-event"]
    assert client.wait(event.runs[0]["id"], timeout=60).state == "SUCCEEDED"
    # Without a key of its own, each call is one event.
    assert client.emit_event("py-client-test").id != client.emit_event("py-client-test").id


def test_jobs(client):
    names = [j.name for j in client.list_jobs()]
    assert {"py-echo", "py-sleep", "greet"} <= set(names) and names == sorted(names)
    assert len(client.list_jobs(limit=2)) == 2
    job = client.get_job("py-echo")
    assert job.parameters == {"who": "nobody"} and job.tasks[0]["kind"] == "PROGRAM" and job.schedule is None
    paused = client.pause_job("py-echo")
    assert paused.paused and client.get_job("py-echo").paused
    resumed = client.resume_job("py-echo")
    assert not resumed.paused and resumed.version > paused.version and not client.get_job("py-echo").paused
    with pytest.raises(NotFound):
        client.get_job("no-such-job")
    applied = client.put_job({"name": "py-made-here", "tasks": [{"kind": "BUILTIN", "builtin": "NOOP"}]})
    assert applied.action == "create"
    assert client.put_job({"name": "py-made-here", "tasks": [{"kind": "BUILTIN", "builtin": "NOOP"}]}).action \
        == "unchanged"
    assert client.wait(client.trigger("py-made-here").run_id, timeout=60).succeeded


def test_runs_list_filters_and_rerun(client):
    ok = client.trigger("py-echo", {"who": "listed"})
    bad = client.trigger("py-fail")
    client.wait(ok.run_id, timeout=60)
    client.wait(bad.run_id, timeout=60)
    failed = client.list_runs(job="py-fail", state="FAILED", limit=None)
    assert bad.run_id in [r.id for r in failed]
    assert all(r.job == "py-fail" and r.state == "FAILED" for r in failed)
    assert ok.run_id not in [r.id for r in failed]
    newest = client.list_runs(limit=3)
    assert len(newest) == 3 and [r.id for r in newest] == sorted((r.id for r in newest), reverse=True)
    again = client.rerun(ok.run_id)
    rerun = client.wait(again.run_id, timeout=60)
    assert rerun.rerun_of == ok.run_id and rerun.trigger_kind == "rerun" and rerun.output() == "hello from listed\n"


def test_dead_letters_and_replay(client):
    t = client.trigger("py-fail")
    run = client.wait(t.run_id, timeout=60)
    assert run.state == "FAILED" and run.output() == "failing\n"
    letter = client.get_dead_letter(run.dead_letter["id"])
    assert (letter.run_id, letter.job, letter.triage_status) == (t.run_id, "py-fail", "pending")
    assert letter.id in [d.id for d in client.list_dead_letters(status="pending", limit=None)]
    triaged = client.triage(letter.id, "acknowledged", "exit 3 on purpose")
    assert (triaged.triage_status, triaged.notes) == ("acknowledged", "exit 3 on purpose")
    replayed = client.replay(letter.id)
    assert replayed.ok and replayed.dead_letter_id == letter.id
    again = client.wait(replayed.run_id, timeout=60)
    assert again.trigger_kind == "replay" and again.rerun_of == t.run_id and again.state == "FAILED"
    letter = client.get_dead_letter(letter.id)
    assert letter.triage_status == "replayed" and letter.replayed_run_ids == [replayed.run_id]
    results = client.replay_many([letter.id, 987654321])
    assert results[0].ok and not results[1].ok and results[1].error == "not_found"


def test_wait_survives_the_leader_killed_mid_run(cluster):
    """kill -9 of the leader while `wait` polls a sleeping run: a follower
    takes over (lease 3 s), the worker's run goes on under it, and wait
    returns the final outcome. The client lists the leader first, so its
    polls meet the dead node and move on."""
    leader = cluster.leader()
    order = [leader] + [n for n in cluster.node_names if n != leader]
    c = Client([cluster.addr(n) for n in order], token_file=cluster.token_file, ca_file=cluster.ca_file,
               env={}, timeout=3)
    epoch = c.status()["epoch"]
    t = c.trigger("py-sleep")
    running(c, t.run_id)
    outcome = {}

    def waiter():
        try:
            outcome["run"] = c.wait(t.run_id, timeout=90)
        except BaseException as e:  # noqa: BLE001 - reported below
            outcome["error"] = e

    thread = threading.Thread(target=waiter)
    thread.start()
    try:
        time.sleep(0.5)
        assert thread.is_alive()  # wait is polling: the run sleeps for 6 s
        cluster.kill(leader)
        thread.join(120)
        assert not thread.is_alive()
        assert "error" not in outcome, outcome.get("error")
        run = outcome["run"]
        assert run.state == "SUCCEEDED" and "slept" in run.output()
        new_leader = cluster.leader()
        assert new_leader is not None and new_leader != leader
        finish = [tr for tr in run.transitions if tr["to"] == "SUCCEEDED"]
        assert finish and finish[-1]["leader_epoch"] > epoch  # recorded by the next leader
        assert c.transport._preferred != 0  # the dead first address was left
    finally:
        thread.join(120)
        if not cluster.alive(leader):
            cluster.start_node(leader)  # three nodes again for whatever runs next
