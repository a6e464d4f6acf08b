"""The admin API's typed contract (docs/api/openapi.json, served at
/api/v1/openapi.json without a token) against a live cluster: the document
keeps the OpenAPI 3.1 rules checked below (its structure, its parameters,
every schema against the JSON Schema 2020-12 meta-schema, every $ref
resolving), and the real answer of every route, success and error alike,
matches the schema the document gives for its status."""
from __future__ import annotations

import json
import re
import ssl
import time
import urllib.error
import urllib.request

import jsonschema
import pytest

from baton_cluster import REPO

METHODS = {"get", "put", "post", "delete"}


@pytest.fixture(scope="module")
def api(cluster):
    return Api(cluster)


class Api:
    def __init__(self, cluster):
        self.cluster = cluster
        self.ctx = ssl.create_default_context(cafile=cluster.ca_file)
        self.doc = self.fetch("GET", "/api/v1/openapi.json", token=False)[1]
        self.resolver = jsonschema.RefResolver.from_schema(self.doc)
        self.checked: set[str] = set()
        self.mismatches: list[str] = []

    def fetch(self, method, path, body=None, token=True, key=None, node=None):
        node = node or self.cluster.leader()
        req = urllib.request.Request(f"https://{self.cluster.addr(node)}{path}", method=method,
                                     data=json.dumps(body).encode() if body is not None else None)
        if token:
            req.add_header("Authorization", "Bearer " + self.cluster.token)
        if body is not None:
            req.add_header("Content-Type", "application/json")
        if key:
            req.add_header("Idempotency-Key", key)
        try:
            with urllib.request.urlopen(req, context=self.ctx, timeout=10) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read())

    def call(self, method, pattern, path=None, body=None, key=None, expect=None):
        """Calls the route and checks its answer against the document."""
        status, answer = self.fetch(method, path or pattern, body, key=key)
        if expect is not None:
            assert status == expect, (method, path or pattern, status, answer)
        op = self.doc["paths"][pattern][method.lower()]
        schema = op["responses"].get(str(status), op["responses"].get(f"{status // 100}XX", op["responses"]["default"]))
        schema = schema["content"]["application/json"]["schema"]
        for e in jsonschema.Draft202012Validator(schema, resolver=self.resolver).iter_errors(answer):
            self.mismatches.append(f"{method} {path or pattern} {status}: at {'/'.join(map(str, e.absolute_path))}: "
                                   f"{e.message[:200]}")
        self.checked.add(f"{method} {pattern}")
        return answer


def test_the_document_keeps_the_openapi_3_1_rules(api):
    doc = api.doc
    assert re.fullmatch(r"3\.1\.\d+", doc["openapi"])
    assert doc["info"]["title"] and doc["info"]["version"]
    schemes = doc["components"]["securitySchemes"]
    for name, schema in doc["components"]["schemas"].items():
        jsonschema.Draft202012Validator.check_schema(schema)
    for path, ops in doc["paths"].items():
        assert path.startswith("/api/v1/")
        in_path = set(re.findall(r"\{(\w+)\}", path))
        for method, op in ops.items():
            assert method in METHODS, (path, method)
            assert op["summary"] and op["responses"], (path, method)
            for code, answer in op["responses"].items():
                assert code == "default" or re.fullmatch(r"[1-5](\d\d|XX)", code), (path, method, code)
                assert answer["description"]
                jsonschema.Draft202012Validator.check_schema(answer["content"]["application/json"]["schema"])
            names = set()
            for p in op["parameters"]:
                # Headers: only those a route reads besides the token (a
                # trigger's Idempotency-Key), never required.
                assert p["in"] in ("path", "query", "header") and (p["name"], p["in"]) not in names
                if p["in"] == "header":
                    assert p["required"] is False and p["name"].lower() != "authorization", (path, method, p)
                names.add((p["name"], p["in"]))
                jsonschema.Draft202012Validator.check_schema(p["schema"])
                if p["in"] == "path":
                    assert p["required"] is True and p["name"] in in_path
            assert {n for n, where in names if where == "path"} == in_path, (path, method)
            if "requestBody" in op:
                jsonschema.Draft202012Validator.check_schema(op["requestBody"]["content"]["application/json"]["schema"])
            for need in op.get("security", []):
                assert set(need) <= set(schemes)
    # Every $ref resolves.
    text = json.dumps(doc)
    for ref in set(re.findall(r'"\$ref": "([^"]+)"', text)):
        api.resolver.resolve(ref)
    # The document the repository carries is this one.
    assert json.loads((REPO / "docs" / "api" / "openapi.json").read_text()) == doc


def test_every_routes_real_answer_matches_its_schema(api):
    a = api
    t = a.call("POST", "/api/v1/jobs/{name}/trigger", "/api/v1/jobs/py-echo/trigger",
               {"parameters": {"who": "contract"}, "priority": -1, "timeout_ms": 30000}, key="contract-1", expect=201)
    a.call("POST", "/api/v1/jobs/{name}/trigger", "/api/v1/jobs/py-echo/trigger",
           {"parameters": {"who": "contract"}, "priority": -1, "timeout_ms": 30000}, key="contract-1", expect=200)
    # The key with other parameters is another request: refused (docs/operations.md, "Idempotency keys").
    a.call("POST", "/api/v1/jobs/{name}/trigger", "/api/v1/jobs/py-echo/trigger", {}, key="contract-1", expect=409)
    a.call("POST", "/api/v1/jobs/{name}/trigger", "/api/v1/jobs/nope/trigger", {}, expect=404)
    a.call("POST", "/api/v1/jobs/{name}/trigger", "/api/v1/jobs/py-echo/trigger", {"priority": 99}, expect=400)
    failed = a.call("POST", "/api/v1/jobs/{name}/trigger", "/api/v1/jobs/py-fail/trigger", {}, expect=201)
    a.call("POST", "/api/v1/triggers", body={"runs": [{"job": "py-echo", "idempotency_key": "contract-b"}]},
           expect=201)
    a.call("POST", "/api/v1/triggers", body={"runs": [{"job": "py-echo", "idempotency_key": "contract-b"}]},
           expect=200)
    run = t["run_id"]
    for _ in range(100):
        if a.fetch("GET", f"/api/v1/runs/{failed['run_id']}")[1]["state"] == "FAILED" and \
                a.fetch("GET", f"/api/v1/runs/{run}")[1]["state"] == "SUCCEEDED":
            break
        time.sleep(0.1)
    a.call("GET", "/api/v1/runs", expect=200)
    a.call("GET", "/api/v1/runs", "/api/v1/runs?state=SUCCEEDED&limit=1", expect=200)
    a.call("GET", "/api/v1/runs", "/api/v1/runs?limit=zero", expect=400)
    a.call("GET", "/api/v1/runs/{id}", f"/api/v1/runs/{run}", expect=200)
    a.call("GET", "/api/v1/runs/{id}", f"/api/v1/runs/{failed['run_id']}", expect=200)
    a.call("GET", "/api/v1/runs/{id}", "/api/v1/runs/999999", expect=404)
    a.call("GET", "/api/v1/runs/{id}/output", f"/api/v1/runs/{run}/output?stream=stdout")
    sleeper = a.call("POST", "/api/v1/jobs/{name}/trigger", "/api/v1/jobs/py-sleep/trigger", {}, expect=201)
    a.call("POST", "/api/v1/runs/{id}/cancel", f"/api/v1/runs/{sleeper['run_id']}/cancel", {}, expect=202)
    a.call("POST", "/api/v1/runs/{id}/rerun", f"/api/v1/runs/{run}/rerun", {}, expect=201)
    a.call("GET", "/api/v1/jobs", expect=200)
    a.call("POST", "/api/v1/jobs", body={"name": "contract-made", "tasks": [{"kind": "BUILTIN", "builtin": "NOOP"}]},
           expect=201)
    a.call("POST", "/api/v1/jobs", body={"name": "contract-bad", "tasks": []}, expect=400)
    a.call("GET", "/api/v1/jobs/{name}", "/api/v1/jobs/contract-made", expect=200)
    a.call("GET", "/api/v1/jobs/{name}/why", "/api/v1/jobs/every-second-noop/why?at=2026-12-01T09:00:00Z",
           expect=200)
    a.call("GET", "/api/v1/jobs/{name}/stats", "/api/v1/jobs/py-echo/stats", expect=200)
    a.call("GET", "/api/v1/jobs/{name}/document", "/api/v1/jobs/py-echo/document", expect=200)
    a.call("GET", "/api/v1/stats/series", "/api/v1/stats/series?window=24h", expect=200)
    a.call("GET", "/api/v1/stats/series", "/api/v1/stats/series?window=1h&job=py-echo", expect=200)
    a.call("PUT", "/api/v1/jobs/{name}", "/api/v1/jobs/contract-made",
           {"tasks": [{"kind": "BUILTIN", "builtin": "NOOP"}], "priority": 2}, expect=200)
    a.call("POST", "/api/v1/jobs/{name}/pause", "/api/v1/jobs/contract-made/pause", {}, expect=200)
    a.call("POST", "/api/v1/jobs/{name}/resume", "/api/v1/jobs/contract-made/resume", {}, expect=200)
    a.call("DELETE", "/api/v1/jobs/{name}", "/api/v1/jobs/contract-made", expect=200)
    a.call("GET", "/api/v1/workers", expect=200)
    a.call("GET", "/api/v1/workers/{worker}", "/api/v1/workers/w1", expect=200)
    a.call("POST", "/api/v1/workers/{worker}/drain", "/api/v1/workers/w1/drain", {}, expect=200)
    a.call("POST", "/api/v1/workers/{worker}/resume", "/api/v1/workers/w1/resume", {}, expect=200)
    a.call("POST", "/api/v1/workers/{worker}/enrollments", "/api/v1/workers/wc/enrollments",
           {"labels": {"zone": "a"}, "capacity": 2}, expect=201)
    a.call("GET", "/api/v1/worker-credentials", expect=200)
    a.call("POST", "/api/v1/workers/{worker}/rotate", "/api/v1/workers/wc/rotate", {}, expect=404)
    a.call("POST", "/api/v1/workers/{worker}/revoke", "/api/v1/workers/wc/revoke", {}, expect=200)
    a.call("POST", "/api/v1/enroll", body={"worker_id": "wc"}, expect=401)
    letters = a.call("GET", "/api/v1/dead-letters", expect=200)
    letter = letters["items"][0]["id"]
    a.call("GET", "/api/v1/dead-letters/{id}", f"/api/v1/dead-letters/{letter}", expect=200)
    a.call("POST", "/api/v1/dead-letters/{id}/triage", f"/api/v1/dead-letters/{letter}/triage",
           {"status": "acknowledged", "notes": "seen"}, expect=200)
    a.call("POST", "/api/v1/dead-letters/{id}/replay", f"/api/v1/dead-letters/{letter}/replay", {}, expect=201)
    a.call("POST", "/api/v1/dead-letters/replay", body={"ids": [letter, 999999]}, expect=200)
    a.call("GET", "/api/v1/verify", expect=200)
    a.call("GET", "/api/v1/verify", "/api/v1/verify?open=true&limit=5", expect=200)
    a.call("GET", "/api/v1/verify", "/api/v1/verify?open=maybe", expect=400)
    a.call("POST", "/api/v1/verify/acknowledge", body={"through_id": 1}, expect=200)
    a.call("POST", "/api/v1/verify/acknowledge", body={"through_id": 0}, expect=400)
    a.call("GET", "/api/v1/epochs", expect=200)
    a.call("GET", "/api/v1/nodes", expect=200)
    a.call("GET", "/api/v1/audit", expect=200)
    a.call("POST", "/api/v1/events", body={"kind": "contract", "payload": {"a": 1}, "dedupe_key": "contract-e"},
           expect=201)
    a.call("POST", "/api/v1/events", body={"kind": "contract", "dedupe_key": "contract-e"}, expect=200)
    a.call("GET", "/api/v1/events", expect=200)
    a.call("GET", "/api/v1/settings", expect=200)
    a.call("PUT", "/api/v1/settings/{key}", "/api/v1/settings/retention_days", {"value": 30}, expect=200)
    a.call("PUT", "/api/v1/settings/{key}", "/api/v1/settings/retention_days", {"value": "soon"}, expect=400)
    token = a.call("POST", "/api/v1/tokens", body={"name": "contract", "role": "read"}, expect=201)
    a.call("GET", "/api/v1/tokens", expect=200)
    a.call("POST", "/api/v1/tokens/{id}/revoke", f"/api/v1/tokens/{token['id']}/revoke", {}, expect=200)
    hook = {"url": "https://127.0.0.1:9/contract", "events": ["run_failed"], "secret": "contract-secret-0123"}
    a.call("PUT", "/api/v1/webhooks/{name}", "/api/v1/webhooks/contract?dry_run=true", hook, expect=200)
    a.call("PUT", "/api/v1/webhooks/{name}", "/api/v1/webhooks/contract", hook, expect=201)
    a.call("PUT", "/api/v1/webhooks/{name}", "/api/v1/webhooks/contract", {"url": "http://x", "events": []},
           expect=400)
    a.call("GET", "/api/v1/webhooks", expect=200)
    a.call("GET", "/api/v1/webhooks/{name}", "/api/v1/webhooks/contract", expect=200)
    a.call("GET", "/api/v1/webhooks/{name}", "/api/v1/webhooks/nope", expect=404)
    ping = a.call("POST", "/api/v1/webhooks/{name}/ping", "/api/v1/webhooks/contract/ping", {}, expect=201)
    a.call("GET", "/api/v1/webhooks/{name}/deliveries", "/api/v1/webhooks/contract/deliveries?state=pending",
           expect=200)
    a.call("POST", "/api/v1/webhook-deliveries/{id}/redeliver", f"/api/v1/webhook-deliveries/{ping['id']}/redeliver",
           {}, expect=200)
    a.call("DELETE", "/api/v1/webhooks/{name}", "/api/v1/webhooks/contract", expect=200)
    a.call("GET", "/api/v1/openapi.json", expect=200)
    # The leader's incident journal (docs/assurance.md, "Incident replay").
    now = int(time.time())
    journal = a.call("GET", "/api/v1/incident", f"/api/v1/incident?from={now - 600}&to={now}", expect=200)
    assert journal["books"] >= 1 and journal["journal"].count('"k":"book"') == journal["books"], \
        {k: journal[k] for k in ("node", "books", "lines")}
    a.call("GET", "/api/v1/incident", "/api/v1/incident?from=5&to=1", expect=400)
    a.call("POST", "/api/v1/workers/{worker}/evict", "/api/v1/workers/wc/evict", {})
    # The leader hands over (docs/operations.md, "Runbook"): to itself is a
    # conflict, a malformed name a refusal, to another node it happens.
    me = a.cluster.leader()
    a.call("POST", "/api/v1/leader/handover", body={"to": me}, expect=409)
    a.call("POST", "/api/v1/leader/handover", body={"to": "no such"}, expect=400)
    other = next(n for n in a.cluster.node_names if n != me and a.cluster.alive(n))
    handed = a.call("POST", "/api/v1/leader/handover", body={"to": other}, expect=202)
    assert handed["from"] == me and handed["to"] == other, handed
    for _ in range(100):
        if a.cluster.leader() == other:
            break
        time.sleep(0.1)
    assert a.cluster.leader() == other
    routes = {f"{m.upper()} {p}" for p, ops in a.doc["paths"].items() for m in ops}
    assert routes - a.checked == set(), "routes whose answer no test checked"
    assert a.mismatches == [], "answers that do not match their schema:\n" + "\n".join(a.mismatches)
