// One peer in one configuration: throughput, then trigger-to-start latency.
// Run by bench/peers/run-peers with the Node 22 it installs; prints one line
// "RESULT {json}" on stdout, progress on stderr.
//
//   node peer.mjs PEER MODE URL JOBS TRIGGERS CAP_S LATCAP_S
//     PEER      graphile_worker | pg_boss
//     MODE      defaults | batched
//     URL       a PostgreSQL URL; a database of our own is created beside it
//     JOBS      jobs bulk-enqueued for the throughput run
//     TRIGGERS  sequential single-job triggers for the latency run
//     CAP_S     longest throughput window, counted from the first job start
//     LATCAP_S  longest latency run (the triggers done by then are reported)
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const [peer, mode, url, jobsArg, trigArg, capArg, latCapArg] = process.argv.slice(2);
const N = Number(jobsArg), TRIGGERS = Number(trigArg);
const CAP_MS = Number(capArg) * 1000, LATCAP_MS = Number(latCapArg) * 1000;
const peersDir = process.env.PEERS_DIR;
if (!peersDir || !['graphile_worker', 'pg_boss'].includes(peer) || !['defaults', 'batched'].includes(mode) || !url || !(N > 0)) {
  console.error('usage: PEERS_DIR=... node peer.mjs graphile_worker|pg_boss defaults|batched URL JOBS TRIGGERS CAP_S LATCAP_S');
  process.exit(2);
}
const req = createRequire(join(peersDir, 'package.json'));
const pkgVersion = (name) => JSON.parse(readFileSync(join(peersDir, 'node_modules', name, 'package.json'), 'utf8')).version;
const pg = req('pg');

const now = () => Number(process.hrtime.bigint()) / 1e6; // ms, monotonic
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const log = (...a) => console.error(`[${peer}/${mode}]`, ...a);
const pct = (sorted, p) => sorted.length ? sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] : null;
const round = (x, d = 2) => (x == null ? null : Math.round(x * 10 ** d) / 10 ** d);

// ---- a fresh database of our own (or, failing CREATE DATABASE, a schema) ----
const dbName = `baton_peer_${peer}`;
const schemaName = peer === 'graphile_worker' ? 'graphile_worker' : 'pgboss';
let peerUrl = url, schema = schemaName, ownDb = false;

async function withClient(u, fn) {
  const c = new pg.Client({ connectionString: u });
  await c.connect();
  try { return await fn(c); } finally { await c.end(); }
}
async function freshState() {
  try {
    await withClient(url, async (c) => {
      await c.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
      await c.query(`CREATE DATABASE ${dbName}`);
    });
    const u = new URL(url); u.pathname = '/' + dbName; peerUrl = u.toString(); ownDb = true;
  } catch (e) {
    log(`cannot create database ${dbName} (${e.message}); using schema peers_${peer} in the given database`);
    schema = `peers_${peer}`;
    await withClient(url, (c) => c.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`));
  }
}
async function dropState() {
  try {
    if (ownDb) await withClient(url, (c) => c.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`));
    else await withClient(url, (c) => c.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`));
  } catch (e) { log('cleanup failed:', e.message); }
}
async function analyzeSchema(c) {
  const { rows } = await c.query(
    `SELECT format('%I.%I', n.nspname, r.relname) AS t FROM pg_class r JOIN pg_namespace n ON n.oid = r.relnamespace
      WHERE n.nspname = $1 AND r.relkind IN ('r', 'p')`, [schema]);
  for (const { t } of rows) await c.query(`ANALYZE ${t}`);
  return rows.length;
}

// ---- the two peers behind one interface -------------------------------------
// make() returns { version, options, setup(), enqueueBulk(n), startWorker(queue, onJobs),
//   stopWorker(), addOne(queue, i), completed(queue), discard(queue), close() }.
// onJobs(items) is called with the payloads of the jobs a handler invocation got.

async function makeGraphile() {
  const gw = req('graphile-worker');
  const quiet = new gw.Logger(() => (level, message) => {
    if (level === 'error' || level === 'warning') process.stderr.write(`graphile-worker ${level}: ${message}\n`);
  });
  // defaults: the library's own (concurrentJobs 1, maxPoolSize 10, no local
  // queue, no completion batching, LISTEN/NOTIFY + 2 s poll). batched: the
  // configuration of https://worker.graphile.org/docs/performance.
  const workerPreset = mode === 'batched'
    ? { concurrentJobs: 24, maxPoolSize: 25, localQueue: { size: 500 }, completeJobBatchDelay: 0, failJobBatchDelay: 0 }
    : {};
  const base = { connectionString: peerUrl, schema, logger: quiet, noHandleSignals: true };
  let utils, runner, pool;
  return {
    version: pkgVersion('graphile-worker'),
    options: mode === 'batched' ? { preset: { worker: workerPreset } } : { note: 'library defaults (concurrentJobs 1)' },
    async setup() {
      utils = await gw.makeWorkerUtils(base);
      await utils.migrate();
      pool = new pg.Pool({ connectionString: peerUrl, max: 2 });
    },
    async enqueueBulk(queue, n) {
      for (let i = 0; i < n; i += 2000) {
        const specs = [];
        for (let j = i; j < Math.min(n, i + 2000); j++) specs.push({ identifier: queue, payload: { i: j } });
        await utils.addJobs(specs);
      }
    },
    analyze() { return withClient(peerUrl, analyzeSchema); },
    async startWorker(queue, onJobs) {
      runner = await gw.run({
        ...base,
        preset: { worker: workerPreset },
        taskList: { [queue]: async (payload) => { onJobs([payload]); } },
      });
    },
    async stopWorker() { if (runner) { await runner.stop(); runner = null; } },
    async addOne(queue, i) { await utils.addJob(queue, { i }); },
    // Completed graphile-worker jobs are deleted; every job in this database is ours.
    async completed(queue, total) {
      const { rows } = await pool.query(`SELECT count(*)::int AS n FROM ${schema}._private_jobs j
        JOIN ${schema}._private_tasks t ON t.id = j.task_id WHERE t.identifier = $1`, [queue]);
      return total - rows[0].n;
    },
    async discard(queue) {
      await pool.query(`DELETE FROM ${schema}._private_jobs j USING ${schema}._private_tasks t
        WHERE t.id = j.task_id AND t.identifier = $1`, [queue]);
    },
    async close() { await this.stopWorker(); if (utils) await utils.release(); if (pool) await pool.end(); },
  };
}

async function makePgBoss() {
  const main = JSON.parse(readFileSync(join(peersDir, 'node_modules/pg-boss/package.json'), 'utf8')).main;
  const { PgBoss } = await import(pathToFileURL(join(peersDir, 'node_modules/pg-boss', main)).href);
  // defaults: new PgBoss(url) and work(queue, handler): batchSize 1, one fetch per
  // pollingIntervalSeconds (2 s), no LISTEN/NOTIFY. batched: batchSize 100 with
  // burstWhenBatchFull (keep fetching while batches come back full), the minimum
  // poll of 0.5 s, and LISTEN/NOTIFY wake-ups (useListenNotify + queue notify).
  const ctor = mode === 'batched' ? { useListenNotify: true } : {};
  const queueOpts = mode === 'batched' ? { notify: true } : {};
  const workOpts = mode === 'batched' ? { batchSize: 100, burstWhenBatchFull: true, pollingIntervalSeconds: 0.5 } : {};
  let boss, pool;
  return {
    version: pkgVersion('pg-boss'),
    pollPhaseMs: mode === 'batched' ? 0 : 2000, // defaults: woken only by its 2 s poll
    options: mode === 'batched'
      ? { constructor: ctor, createQueue: queueOpts, work: workOpts }
      : { note: 'library defaults (batchSize 1, pollingIntervalSeconds 2, no LISTEN/NOTIFY)' },
    async setup() {
      boss = new PgBoss({ connectionString: peerUrl, schema, ...ctor });
      boss.on('error', (e) => log('pg-boss error:', e.message));
      boss.on('warning', (w) => log('pg-boss warning:', w?.message ?? JSON.stringify(w)));
      await boss.start();
      await boss.createQueue('thr', queueOpts);
      await boss.createQueue('lat', queueOpts);
      pool = new pg.Pool({ connectionString: peerUrl, max: 2 });
    },
    async enqueueBulk(queue, n) {
      for (let i = 0; i < n; i += 2000) {
        const jobs = [];
        for (let j = i; j < Math.min(n, i + 2000); j++) jobs.push({ data: { i: j } });
        await boss.insert(queue, jobs);
      }
    },
    analyze() { return withClient(peerUrl, analyzeSchema); },
    async startWorker(queue, onJobs) {
      await boss.work(queue, workOpts, async (jobs) => { onJobs(jobs.map((j) => j.data)); });
    },
    async stopWorker(queue) { if (boss) await boss.offWork(queue, { wait: true }); },
    async addOne(queue, i) { await boss.send(queue, { i }); },
    async completed(queue) {
      const { rows } = await pool.query(`SELECT count(*)::int AS n FROM ${schema}.job WHERE name = $1 AND state = 'completed'`, [queue]);
      return rows[0].n;
    },
    async discard(queue) { await pool.query(`DELETE FROM ${schema}.job WHERE name = $1 AND state <> 'completed'`, [queue]); },
    async close() { if (boss) await boss.stop({ graceful: true, timeout: 5000 }); if (pool) await pool.end(); },
  };
}

// ---- measurements -----------------------------------------------------------
async function throughput(p) {
  const t0 = now();
  await p.enqueueBulk('thr', N);
  const enqueueMs = now() - t0;
  const tables = await p.analyze();
  log(`enqueued ${N} in ${(enqueueMs / 1000).toFixed(2)} s; analyzed ${tables} tables`);
  let started = 0, first = null;
  const workerStart = now();
  await p.startWorker('thr', (items) => { if (first === null) first = now(); started += items.length; });
  let done, end, capped = false;
  for (;;) {
    const t = now();
    const origin = first ?? workerStart;
    if (t - origin >= CAP_MS) { done = await p.completed('thr', N); end = now(); capped = done < N; break; }
    if (started >= N) {
      done = await p.completed('thr', N);
      if (done >= N) { end = now(); break; }
      await sleep(5);
    } else await sleep(20);
  }
  await p.stopWorker('thr');
  await p.discard('thr');
  const windowMs = first === null ? null : end - first;
  const jps = first === null || windowMs <= 0 ? 0 : done / (windowMs / 1000);
  log(`throughput ${jps.toFixed(1)} jobs/s (${done} jobs in ${(windowMs / 1000).toFixed(2)} s${capped ? ', capped' : ''})`);
  return {
    jobs_per_s: round(jps, 1), jobs: N, completed: done, window_s: round(windowMs / 1000, 3), capped,
    enqueue_s: round(enqueueMs / 1000, 3),
  };
}

async function latency(p) {
  let waiting = null; // { i, resolve }
  await p.startWorker('lat', (items) => {
    const t = now();
    for (const it of items) if (waiting && it && it.i === waiting.i) { const w = waiting; waiting = null; w.resolve(t); }
  });
  await sleep(1000); // idle: the worker is up and has done its first poll
  const samples = [];
  if (p.pollPhaseMs) log(`idle gaps between triggers spread over ${p.pollPhaseMs} ms (polling-only worker)`);
  const began = now();
  let timeouts = 0;
  for (let i = 0; i < TRIGGERS && now() - began < LATCAP_MS; i++) {
    const started = new Promise((resolve) => { waiting = { i, resolve }; });
    const t0 = now();
    await p.addOne('lat', i);
    const t1 = await Promise.race([started, sleep(15000).then(() => null)]);
    if (t1 === null) { timeouts++; waiting = null; if (timeouts >= 3) break; continue; }
    samples.push(t1 - t0);
    // Idle gap before the next trigger. A worker that only polls would otherwise
    // be phase-locked to the triggers (each one lands just after a poll and waits
    // a whole interval), so for those the gap is spread over one poll interval,
    // sampling every phase of the poll cycle as triggers at random times would.
    await sleep(20 + Math.random() * (p.pollPhaseMs || 10));
  }
  await p.stopWorker('lat');
  const s = samples.slice().sort((a, b) => a - b);
  const out = {
    p50: round(pct(s, 50)), p90: round(pct(s, 90)), p99: round(pct(s, 99)),
    samples: s.length, mean: round(s.reduce((a, b) => a + b, 0) / (s.length || 1)), timeouts,
  };
  log(`latency p50 ${out.p50} p90 ${out.p90} p99 ${out.p99} ms over ${s.length} triggers`);
  return out;
}

const result = { peer, mode, version: null, options: null, jobs_per_s: null, latency_ms: null, throughput: null, error: null };
let p;
try { result.version = pkgVersion(peer === 'graphile_worker' ? 'graphile-worker' : 'pg-boss'); } catch {}
try {
  await freshState();
  p = peer === 'graphile_worker' ? await makeGraphile() : await makePgBoss();
  result.version = p.version; result.options = p.options;
  await p.setup();
  const th = await throughput(p);
  result.throughput = th; result.jobs_per_s = th.jobs_per_s;
  result.latency_ms = await latency(p);
} catch (e) {
  result.error = e instanceof Error ? `${e.name}: ${e.message}` : String(e);
  if (e instanceof Error && e.stack) log(e.stack);
  log('FAILED:', result.error);
}
try { if (p) await Promise.race([p.close(), sleep(10000)]); } catch (e) { log('close:', e.message); }
await dropState();
console.log('RESULT ' + JSON.stringify(result));
process.exit(0);
