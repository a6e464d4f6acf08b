"""The client against small fake nodes (http.server + ssl): redirects, trust,
retries with Retry-After, failover across addresses, idempotency keys on
retries, error classes. No cluster needed."""
from __future__ import annotations

import email.utils
import socket
import time

import pytest

from baton_client import (BadRequest, BatonError, Client, Conflict, Forbidden, InvalidParameters, NotFound,
                          NotLeader, RateLimited, RedirectRefused, TLSError, Unauthorized, Unavailable)
from fakes import FakeNode, always, sequence

TRIGGERED = (201, {}, {"job": "j", "run_id": 7, "created": True})


@pytest.fixture
def certs(tls_dirs):
    t, o = tls_dirs["trusted"], tls_dirs["other"]
    return {"ca": str(t / "ca.crt"), "good": (str(t / "node.crt"), str(t / "node.key")),
            "stranger": (str(o / "node.crt"), str(o / "node.key"))}


def make_client(certs, *nodes, **kw):
    kw.setdefault("token", "s3cret-token")
    c = Client([n if isinstance(n, str) else n.address for n in nodes], ca_file=certs["ca"], env={}, **kw)
    c.slept = []
    c.transport.sleep = c.slept.append  # record the waits instead of sleeping them
    return c


def closed_port() -> str:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now: connection refused
    return f"127.0.0.1:{port}"


def redirect_to(url):
    return lambda seen, n: (307, {"Location": url + seen.path},
                            {"code": "not_leader", "message": "send this to the leader"})


# --- redirects and trust ------------------------------------------------------
def test_a_followers_redirect_is_followed_to_a_verified_leader(certs):
    with FakeNode(always(201, TRIGGERED[2]), certs["good"]) as leader, \
            FakeNode(lambda s, n: redirect_to(leader.url)(s, n), certs["good"]) as follower:
        c = make_client(certs, follower)
        t = c.trigger("j", {"a": 1}, idempotency_key="key-1")
        assert (t.run_id, t.created) == (7, True)
        assert len(follower.requests) == 1 and len(leader.requests) == 1
        sent = leader.requests[0]
        # The same request, with its token and key, reached the leader.
        assert sent.method == "POST" and sent.path == "/api/v1/jobs/j/trigger"
        assert sent.headers["authorization"] == "Bearer s3cret-token"
        assert sent.headers["idempotency-key"] == "key-1"
        assert sent.json() == {"parameters": {"a": 1}}


def test_a_redirect_to_plain_http_is_refused(certs):
    with FakeNode(always(201, TRIGGERED[2])) as plain, \
            FakeNode(lambda s, n: redirect_to(plain.url)(s, n), certs["good"]) as follower:
        c = make_client(certs, follower)
        with pytest.raises(RedirectRefused) as e:
            c.trigger("j")
        assert e.value.code == "redirect_refused" and "http://" in e.value.message
        assert plain.requests == []  # the token never went there
        assert len(follower.requests) == 1  # and it was not retried


def test_a_redirect_to_an_endpoint_of_another_ca_is_refused(certs):
    with FakeNode(always(201, TRIGGERED[2]), certs["stranger"]) as stranger, \
            FakeNode(lambda s, n: redirect_to(stranger.url)(s, n), certs["good"]) as follower:
        c = make_client(certs, follower)
        with pytest.raises(TLSError) as e:
            c.trigger("j")
        assert "certificate verify failed" in e.value.message
        assert stranger.requests == []  # refused in the handshake: no request, no token
        assert len(follower.requests) == 1


def test_a_redirect_to_a_host_the_certificate_does_not_name_is_refused(certs):
    # 127.0.0.2 is loopback too, but the node certificate names only
    # 127.0.0.1, ::1 and localhost: the same CA, the wrong name.
    with FakeNode(always(201, TRIGGERED[2]), certs["good"], host="127.0.0.2") as elsewhere, \
            FakeNode(lambda s, n: redirect_to(elsewhere.url)(s, n), certs["good"]) as follower:
        c = make_client(certs, follower)
        with pytest.raises(TLSError):
            c.trigger("j")
        assert elsewhere.requests == []


def test_the_first_node_is_verified_too(certs):
    with FakeNode(always(200, {"items": [], "next_cursor": None}), certs["stranger"]) as stranger:
        with pytest.raises(TLSError):
            make_client(certs, stranger).list_runs()
        assert stranger.requests == []


def test_redirects_are_bounded(certs):
    with FakeNode(lambda s, n: redirect_to(loop.url)(s, n), certs["good"]) as loop:
        with pytest.raises(Unavailable, match="too many redirects"):
            make_client(certs, loop).trigger("j")
        assert len(loop.requests) == 4


# --- retries ------------------------------------------------------------------
@pytest.mark.parametrize("status,code", [(429, "rate_limited"), (503, "overloaded")])
def test_retry_after_is_honoured(certs, status, code):
    with FakeNode(sequence((status, {"Retry-After": "2"}, {"code": code, "message": "later"}),
                           (status, {"Retry-After": "1"}, {"code": code, "message": "later"}), TRIGGERED),
                  certs["good"]) as node:
        c = make_client(certs, node)
        t = c.trigger("j")
        assert t.run_id == 7
        assert c.slept == [2.0, 1.0]
        assert len(node.requests) == 3
        keys = {r.headers["idempotency-key"] for r in node.requests}
        assert len(keys) == 1  # one logical call: one key for all of its tries


def test_retry_after_as_an_http_date(certs):
    when = email.utils.formatdate(time.time() + 3, usegmt=True)
    with FakeNode(sequence((429, {"Retry-After": when}, {"code": "rate_limited", "message": "x"}), TRIGGERED),
                  certs["good"]) as node:
        c = make_client(certs, node)
        c.trigger("j")
        assert len(c.slept) == 1 and 1.0 <= c.slept[0] <= 3.5


def test_a_retry_after_beyond_the_calls_time_raises_at_once(certs):
    with FakeNode(always(429, {"code": "rate_limited", "message": "over the rate"}, {"Retry-After": "60"}),
                  certs["good"]) as node:
        c = make_client(certs, node, total_timeout=5)
        with pytest.raises(RateLimited) as e:
            c.trigger("j")
        assert (e.value.code, e.value.status, e.value.retry_after) == ("rate_limited", 429, 60.0)
        assert c.slept == [] and len(node.requests) == 1


def test_no_leader_is_waited_out_with_backoff(certs):
    no_leader = (503, {}, {"code": "no_leader", "message": "no leader is known right now"})
    with FakeNode(sequence(no_leader, no_leader, no_leader, TRIGGERED), certs["good"]) as node:
        c = make_client(certs, node)
        assert c.trigger("j").run_id == 7
        assert len(c.slept) == 3 and all(0 < s <= 2.0 for s in c.slept)
        assert c.slept[2] > c.slept[0] / 2  # it grows (with jitter)


def test_no_leader_for_the_whole_call_is_not_leader(certs):
    with FakeNode(always(503, {"code": "no_leader", "message": "none"}), certs["good"]) as node:
        c = make_client(certs, node, total_timeout=1)
        c.transport.sleep = time.sleep
        with pytest.raises(NotLeader) as e:
            c.trigger("j")
        assert e.value.code == "no_leader" and e.value.status == 503


def test_a_dead_address_moves_on_to_the_next(certs):
    dead = closed_port()
    with FakeNode(always(200, {"id": 3, "state": "RUNNING"}), certs["good"]) as node:
        c = make_client(certs, dead, node)
        assert c.get_run(3).state == "RUNNING"
        assert c.slept == []  # the next address at once, no backoff
        # and the node that answered is asked first from then on
        c.get_run(3)
        assert c.transport._preferred == 1


def test_every_address_dead_is_unavailable_within_the_time(certs):
    c = make_client(certs, closed_port(), closed_port(), total_timeout=1.5)
    c.transport.sleep = time.sleep
    start = time.monotonic()
    with pytest.raises(Unavailable) as e:
        c.get_run(1)
    assert e.value.code == "unreachable" and e.value.status == 0
    assert time.monotonic() - start < 5


def test_a_lost_answer_is_retried_with_the_same_key(certs):
    with FakeNode(sequence("drop", (200, {}, {"job": "j", "run_id": 7, "created": False})),
                  certs["good"]) as node:
        t = make_client(certs, node).trigger("j")
        assert (t.run_id, t.created) == (7, False)
        assert len(node.requests) == 2
        assert node.requests[0].headers["idempotency-key"] == node.requests[1].headers["idempotency-key"]
        assert node.requests[0].body == node.requests[1].body


def test_each_logical_trigger_gets_its_own_key(certs):
    with FakeNode(always(201, TRIGGERED[2]), certs["good"]) as node:
        c = make_client(certs, node)
        c.trigger("j")
        c.trigger("j")
    with FakeNode(sequence(TRIGGERED, TRIGGERED, (201, {}, {"runs": [{"job": "j", "run_id": 8, "created": True},
                                                                    {"job": "j", "run_id": 9, "created": True}]})),
                  certs["good"]) as node:
        c = make_client(certs, node)
        c.trigger("j")
        c.trigger("j")
        c.trigger_many("j", [{"n": 1}, {"n": 2}])
        keys = [r.headers["idempotency-key"] for r in node.requests[:2]]
        keys += [run["idempotency_key"] for run in node.requests[2].json()["runs"]]
        assert len(node.requests) == 3 and len(keys) == 4 and len(set(keys)) == 4


def test_events_carry_a_dedupe_key_reused_on_retry(certs):
    with FakeNode(sequence("drop", (201, {}, {"event_id": 4, "created": True})), certs["good"]) as node:
        ev = make_client(certs, node).emit_event("deploy", {"v": 2})
        assert ev.id == 4 and ev.created
        bodies = [r.json() for r in node.requests]
        assert bodies[0] == bodies[1] and bodies[0]["dedupe_key"] == ev.dedupe_key


def test_a_replay_whose_answer_was_lost_is_not_repeated(certs):
    # The API takes no key for a replay: sent twice, it would make two runs.
    with FakeNode(sequence("drop", (201, {}, {"dead_letter_id": 1, "run_id": 9})), certs["good"]) as node:
        with pytest.raises(Unavailable, match="not retried"):
            make_client(certs, node).replay(1)
        assert len(node.requests) == 1


def test_a_replay_refused_with_503_is_retried(certs):
    # A refused request changed nothing: safe to send again.
    with FakeNode(sequence((503, {"Retry-After": "1"}, {"code": "overloaded", "message": "full"}),
                           (201, {}, {"dead_letter_id": 1, "run_id": 9})), certs["good"]) as node:
        assert make_client(certs, node).replay(1).run_id == 9
        assert len(node.requests) == 2


# --- errors -------------------------------------------------------------------
@pytest.mark.parametrize("status,code,cls", [
    (400, "bad_request", BadRequest), (400, "invalid_parameters", InvalidParameters),
    (401, "unauthenticated", Unauthorized), (403, "forbidden", Forbidden), (404, "unknown_job", NotFound),
    (409, "conflict", Conflict), (500, "internal", BatonError)])
def test_errors_carry_the_apis_code_message_and_status(certs, status, code, cls):
    with FakeNode(always(status, {"code": code, "message": f"the {code} message"}), certs["good"]) as node:
        with pytest.raises(cls) as e:
            make_client(certs, node).trigger("j")
        assert (e.value.code, e.value.message, e.value.status) == (code, f"the {code} message", status)
        assert len(node.requests) == 1  # an answer is final: not retried


def test_a_non_json_error_still_has_a_code(certs):
    with FakeNode(always(502, b"bad gateway", {"Content-Type": "text/plain", "Retry-After": "0"}),
                  certs["good"]) as node:
        with pytest.raises(Unavailable) as e:
            make_client(certs, node).get_run(1)
        assert e.value.code == "http_502" and e.value.status == 502


def test_paths_are_encoded(certs):
    with FakeNode(always(404, {"code": "not_found", "message": "no job"}), certs["good"]) as node:
        with pytest.raises(NotFound):
            make_client(certs, node).get_job("a/../../status?x=1")
        assert node.requests[0].path == "/api/v1/jobs/a%2F..%2F..%2Fstatus%3Fx%3D1"


# --- wait, logs, trigger_many -----------------------------------------------
def run_answer(state, **more):
    return (200, {}, dict({"id": 5, "job": "j", "state": state, "logs": []}, **more))


def test_wait_outlasts_an_outage_longer_than_one_call(certs):
    # Each call gives up after 1.5 s; the database is away for longer than
    # that (503s): wait goes on polling until the run has finished.
    away = (503, {"Retry-After": "1"}, {"code": "db_unavailable", "message": "the database does not answer"})
    with FakeNode(sequence(away, away, away, run_answer("RUNNING"), run_answer("SUCCEEDED")),
                  certs["good"]) as node:
        c = make_client(certs, node, total_timeout=1.5)
        c.transport.sleep = time.sleep
        run = c.wait(5, timeout=30)
        assert run.state == "SUCCEEDED" and len(node.requests) == 5


def test_wait_gives_up_at_its_timeout(certs):
    with FakeNode(always(*run_answer("RUNNING")[::2]), certs["good"]) as node:
        c = make_client(certs, node)
        with pytest.raises(TimeoutError) as e:
            c.wait(5, timeout=0.6, interval=0.1)
        assert e.value.code == "timeout" and e.value.run.state == "RUNNING"
        assert 2 <= len(node.requests) <= 10


def test_logs_follow_until_the_run_ends(certs):
    def chunk(text):
        return {"chunk": text, "stream": "stdout", "attempt": 1, "start_offset": 0}
    with FakeNode(sequence(run_answer("RUNNING", logs=[chunk("a\n")]),
                           run_answer("RUNNING", logs=[chunk("a\n"), chunk("b\n")]),
                           run_answer("SUCCEEDED", logs=[chunk("a\n"), chunk("b\n"), chunk("c\n")])),
                  certs["good"]) as node:
        c = make_client(certs, node)
        c._sleep = lambda s: None
        assert [x.text for x in c.logs(5)] == ["a\n"]  # without follow: what there is now
        assert [x.text for x in c.logs(5, follow=True)] == ["a\n", "b\n", "c\n"]


def test_trigger_many_sends_batches_of_500_and_says_what_was_done_before_a_failure(certs):
    first = {"runs": [{"job": "j", "run_id": i + 1, "created": True} for i in range(500)]}
    with FakeNode(sequence((201, {}, first), (404, {}, {"code": "unknown_job", "message": "gone"})),
                  certs["good"]) as node:
        keys = [f"k{i}" for i in range(501)]
        with pytest.raises(NotFound) as e:
            make_client(certs, node).trigger_many("j", [{"n": i} for i in range(501)], idempotency_keys=keys,
                                                  priority=-2, timeout=1.5)
        assert len(e.value.completed) == 500 and e.value.keys == keys
        assert [r.path for r in node.requests] == ["/api/v1/triggers"] * 2
        batches = [r.json()["runs"] for r in node.requests]
        assert [len(b) for b in batches] == [500, 1]
        assert batches[1][0] == {"job": "j", "idempotency_key": "k500", "parameters": {"n": 500}, "priority": -2,
                                 "timeout_ms": 1500}


# --- credentials kept to the cluster (security review N-L5) -------------------
def test_the_token_is_in_no_repr(certs):
    c = make_client(certs, closed_port(), token="s3cret-token")
    for shown in (repr(c.settings), repr(c.transport), str(c.settings), str(c.transport)):
        assert "s3cret-token" not in shown


def test_without_a_pinned_ca_the_token_follows_a_redirect_only_to_a_configured_address(certs):
    # Trust by the system's roots (no ca_file) is imitated by a transport
    # that says its CA is not pinned: any public certificate would verify.
    with FakeNode(always(201, TRIGGERED[2]), certs["good"]) as leader, \
            FakeNode(lambda s, n: redirect_to(leader.url)(s, n), certs["good"]) as follower:
        c = make_client(certs, follower)
        c.transport.ca_pinned = False
        with pytest.raises(RedirectRefused) as e:
            c.trigger("j", {"a": 1}, idempotency_key="key-1")
        assert "not one of the configured addresses" in str(e.value) and "ca_file" in str(e.value)
        assert leader.requests == []  # nothing, and no token, was sent there
        # The same redirect to an address the caller configured is followed.
        c2 = make_client(certs, follower, leader)
        c2.transport.ca_pinned = False
        assert c2.trigger("j", {"a": 1}, idempotency_key="key-2").run_id == 7
        assert leader.requests[-1].headers["authorization"] == "Bearer s3cret-token"
