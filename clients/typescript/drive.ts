// A client generated from Baton's OpenAPI document drives a live cluster:
// openapi-typescript turns the document into types (generated/api.d.ts),
// openapi-fetch makes the typed calls, tsc checks every call and field
// against the document. Run by `check` (this folder) from the process test
// GeneratedClientTest (cmd/tests/generated_client_test.cpp).
//
//   node out/drive.js FOLLOWER_URL LEADER_URL TOKEN JOB
//
// It asks a follower for everything, the leader's calls included: a
// trigger answered 307 is sent again to the leader with the token, the
// recipe of docs/clients.md ("Redirects, for any client").
import createClient from "openapi-fetch";
import type { components, paths } from "./generated/api.js";

type Run = components["schemas"]["Run"];
type RunState = Run["state"];
// The named schemas a generator names its types by (a missing one fails tsc).
export type Named = [
  components["schemas"]["Job"],
  components["schemas"]["JobListing"],
  components["schemas"]["Worker"],
  components["schemas"]["DeadLetter"],
  components["schemas"]["Webhook"],
  components["schemas"]["Node"],
  components["schemas"]["Error"],
];

const [follower, leader, token, job] = process.argv.slice(2);
if (!follower || !leader || !token || !job) {
  console.error("usage: node out/drive.js FOLLOWER_URL LEADER_URL TOKEN JOB");
  process.exit(2);
}

// The cluster's nodes: a 307 is followed, with the token, only to one of them.
const nodes = new Set([new URL(follower).host, new URL(leader).host]);
let redirects = 0;

async function clusterFetch(input: Request): Promise<Response> {
  const body = input.method === "GET" || input.method === "HEAD" ? undefined : await input.clone().text();
  let url = new URL(input.url);
  for (let hop = 0; ; hop++) {
    const res = await fetch(url, { method: input.method, headers: input.headers, body, redirect: "manual" });
    if (res.status !== 307 || hop === 2) return res;
    const location = new URL(res.headers.get("location") ?? "", url);
    if (!nodes.has(location.host)) return res;  // never the token to another host
    redirects++;
    url = location;
  }
}

const api = createClient<paths>({ baseUrl: follower, fetch: clusterFetch, headers: { Authorization: `Bearer ${token}` } });

function fail(what: string, detail: unknown): never {
  console.error(`drive: ${what}: ${JSON.stringify(detail)}`);
  process.exit(1);
}

const jobs = await api.GET("/api/v1/jobs", { params: { query: { limit: 100 } } });
if (!jobs.data) fail("listJobs", jobs.error);
if (!jobs.data.items.some((j) => j.name === job)) fail("listJobs: no job " + job, jobs.data.items);

const key = `generated-client-${process.pid}`;
const trigger = () =>
  api.POST("/api/v1/jobs/{name}/trigger", {
    params: { path: { name: job }, header: { "Idempotency-Key": key } },
    body: { parameters: { who: "generated client" }, priority: 0 },
  });
const first = await trigger();
if (!first.data) fail("triggerJob through the follower", first.error);
const runId: number = first.data.run_id;

let state: RunState = "PENDING";
for (let i = 0; i < 300 && !["SUCCEEDED", "FAILED", "TIMED_OUT", "CANCELED"].includes(state); i++) {
  const run = await api.GET("/api/v1/runs/{id}", { params: { path: { id: runId } } });
  if (!run.data) fail("getRun", run.error);
  state = run.data.state;
  if (state !== "SUCCEEDED") await new Promise((r) => setTimeout(r, 100));
}

// The same key again, at the leader itself: the same run, none created.
const leaderApi = createClient<paths>({ baseUrl: leader, headers: { Authorization: `Bearer ${token}` } });
const again = await leaderApi.POST("/api/v1/jobs/{name}/trigger", {
  params: { path: { name: job }, header: { "Idempotency-Key": key } },
  body: { parameters: { who: "generated client" }, priority: 0 },
});
if (!again.data) fail("triggerJob at the leader", again.error);

// A typed error: an unknown run is a 404 whose body is the Error schema.
const missing = await api.GET("/api/v1/runs/{id}", { params: { path: { id: 999999999 } } });
if (missing.response.status !== 404 || !missing.error) fail("getRun of no run", missing.response.status);

console.log(
  JSON.stringify({
    run_id: runId,
    state,
    redirects,
    again_run_id: again.data.run_id,
    again_created: again.data.created,
    missing_code: missing.error.code,
  }),
);
