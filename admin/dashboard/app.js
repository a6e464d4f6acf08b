// The Baton dashboard: a client of /status and /api/v1 (docs/operations.md),
// with the same tokens as `baton ctl`. Everything shown is built with
// textContent, never as HTML: job names, log output and notes come from
// clients and workers.
'use strict';

const view = document.getElementById('view');
const message = document.getElementById('message');
// The token lives for this browser tab's session only (sessionStorage):
// closing the tab forgets it, and no other tab or later visit finds it.
let token = sessionStorage.getItem('baton_token') || '';
let timer = null;

// --- helpers ------------------------------------------------------------------

function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null) continue;
    if (k === 'text') e.textContent = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v);
  }
  for (const c of children) if (c !== null && c !== undefined) e.append(c instanceof Node ? c : String(c));
  return e;
}

function show(text, ok) {
  message.textContent = text;
  message.className = 'message ' + (ok ? 'ok' : 'error');
}
function clearMessage() { message.className = 'message hidden'; }

function when(ts) { return ts ? String(ts).replace('T', ' ').slice(0, 19) : '-'; }
function iso(unix) { return unix === null || unix === undefined ? '-' : new Date(unix * 1000).toISOString().slice(0, 19).replace('T', ' '); }
function text(v) { return v === null || v === undefined ? '-' : (typeof v === 'object' ? JSON.stringify(v) : String(v)); }

class ApiError extends Error {
  constructor(status, code, msg) { super(msg); this.status = status; this.code = code; }
}

let statusCache = null;
async function nodeStatus(fresh) {
  if (!statusCache || fresh) statusCache = await (await fetch('/status')).json();
  return statusCache;
}

// Calls that create or cancel runs are the leader's (its epoch fences them).
// A follower would answer 307, and a browser drops the Authorization header
// on a redirect to another origin: such calls go to the leader directly.
const leaderOnly = /\/(trigger|cancel|rerun|replay)$/;

async function api(method, path, body) {
  let base = '';
  if (method !== 'GET' && leaderOnly.test(path)) {
    const s = await nodeStatus(true);
    if (s.role !== 'leader') {
      if (!s.leader_endpoint) throw new ApiError(503, 'no_leader', 'no leader is known right now; retry in a few seconds');
      base = location.protocol + '//' + s.leader_endpoint;  // the scheme this page came by
    }
  }
  const headers = { Authorization: 'Bearer ' + token };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const res = await fetch(base + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const raw = await res.text();
  let data = null;
  try { data = JSON.parse(raw); } catch (e) { data = null; }
  if (!res.ok) {
    if (res.status === 401) document.getElementById('token-panel').classList.remove('hidden');
    throw new ApiError(res.status, data && data.code, (data && data.message) || raw);
  }
  return data;
}

function table(id, columns, items, rowKey) {
  const head = el('tr', {}, ...columns.map(c => el('th', { text: c[0] })));
  const rows = items.map(item => {
    const tr = el('tr', rowKey ? { 'data-key': String(item[rowKey]) } : {});
    for (const c of columns) {
      const v = c[1](item);
      tr.append(v instanceof Node ? el('td', {}, v) : el('td', { text: text(v) }));
    }
    return tr;
  });
  return el('table', { id }, el('thead', {}, head), el('tbody', {}, ...rows));
}

function runLink(id) { return id ? el('a', { href: '#/runs/' + id, text: String(id) }) : '-'; }
function stateCell(s) { return el('span', { class: 'state-' + s, text: s || '-' }); }

function button(label, action, onclick, cls) {
  return el('button', { type: 'button', class: cls || 'small', 'data-action': action, onclick }, label);
}

/// Runs a mutation, says how it went, and redraws the page. With `ask`,
/// only once the operator confirmed it: what cannot be undone (a cancel,
/// a drain, an eviction) is never one stray click.
async function act(what, fn, ask) {
  if (ask && !window.confirm(ask)) {
    show(what + ': not done', false);
    return;
  }
  try {
    const r = await fn();
    show(what + ': done' + (r && r.run_id ? ' (run ' + r.run_id + ')' : ''), true);
  } catch (e) {
    show(what + ': ' + (e.code ? e.code + ': ' : '') + e.message, false);
  }
  await render(false);
}

// --- pages ----------------------------------------------------------------------

async function overview() {
  const s = await nodeStatus(true);
  const counts = s.runs_by_state || {};
  const cards = el('div', { class: 'cards', id: 'leadership' },
    el('div', { class: 'card' }, 'Leader', el('div', { class: 'big', id: 'leader-id', text: s.leader_id || 'none' })),
    el('div', { class: 'card' }, 'Epoch', el('div', { class: 'big', id: 'epoch', text: String(s.epoch) })),
    el('div', { class: 'card' }, 'This node', el('div', { class: 'big', text: s.node_id + ' (' + s.role + ')' })),
    el('div', { class: 'card' }, 'Running', el('div', { class: 'big', text: String((counts.RUNNING || 0) + (counts.ASSIGNED || 0)) })),
    el('div', { class: 'card' }, 'Pending', el('div', { class: 'big', text: String(counts.PENDING || 0) })),
    el('div', { class: 'card' }, 'Failed', el('div', { class: 'big', text: String((counts.FAILED || 0) + (counts.TIMED_OUT || 0)) })),
    el('div', { class: s.unmatched_runs ? 'card warn' : 'card', title: 'unfinished runs whose selector no attached worker satisfies' },
      'No worker matches', el('div', { class: 'big', id: 'unmatched', text: String(s.unmatched_runs || 0) })));
  timer = setTimeout(() => render(false), 5000);
  const [epochs, nodes, failed] = await Promise.all([
    api('GET', '/api/v1/epochs?limit=20'), api('GET', '/api/v1/nodes'), api('GET', '/api/v1/runs?state=FAILED&limit=10')]);
  return [cards,
    el('h2', { text: 'Recent failures' }),
    table('failures-table', [['Run', r => runLink(r.id)], ['Job', r => r.job], ['Worker', r => r.worker_id],
      ['Finished', r => when(r.finished_at)], ['Error', r => r.error_code],
      ['', r => el('a', { href: '#/runs/' + r.id, 'data-action': 'logs', text: 'logs' })]], failed.items, 'id'),
    el('h2', { text: 'Leadership (every epoch)' }),
    table('epochs-table', [['Epoch', e => e.epoch], ['Leader', e => e.leader_id], ['Endpoint', e => e.leader_endpoint],
      ['Elected', e => when(e.elected_at)], ['Ended', e => when(e.ended_at)], ['How it ended', e => e.end_reason],
      ['Current', e => e.current ? 'yes' : '']], epochs.items, 'epoch'),
    el('h2', { text: 'Nodes' }),
    table('nodes-table', [['Node', n => n.node_id], ['Role', n => n.role], ['Leads', n => n.leads ? 'yes' : ''],
      ['Endpoint', n => n.endpoint], ['Heartbeat age (ms)', n => n.heartbeat_age_ms], ['Started', n => when(n.started_at)]],
      nodes.items, 'node_id')];
}

async function jobs() {
  const page = await api('GET', '/api/v1/jobs?limit=500');
  return [el('h2', { text: 'Jobs' }),
    table('jobs-table', [['Name', j => el('a', { href: '#/jobs/' + encodeURIComponent(j.name), text: j.name })],
      ['Schedule', j => j.schedule], ['Zone', j => j.time_zone],
      ['Next fire (UTC)', j => iso(j.next_fire_unix)],
      ['Last run', j => j.last_run ? el('span', {}, runLink(j.last_run.id), ' ', stateCell(j.last_run.state)) : '-'],
      ['Paused', j => j.paused ? 'yes' : 'no'],
      ['', j => el('span', {},
        j.paused ? button('Resume', 'resume', () => act('resume ' + j.name, () => api('POST', '/api/v1/jobs/' + encodeURIComponent(j.name) + '/resume')))
                 : button('Pause', 'pause', () => act('pause ' + j.name, () => api('POST', '/api/v1/jobs/' + encodeURIComponent(j.name) + '/pause'))),
        ' ', button('Trigger', 'trigger', () => act('trigger ' + j.name, () => api('POST', '/api/v1/jobs/' + encodeURIComponent(j.name) + '/trigger'))))]],
    page.items, 'name')];
}

// One job: its definition, its statistics and backlog (GET
// /api/v1/jobs/{name}/stats), its recent runs, and "why did (or didn't) it
// run at TIME?" from the decision ledger (GET /api/v1/jobs/{name}/why).
const whyAt = {};
async function job(name) {
  const path = '/api/v1/jobs/' + encodeURIComponent(name);
  const [j, recent, stats] = await Promise.all([api('GET', path),
    api('GET', '/api/v1/runs?limit=20&job=' + encodeURIComponent(name)), api('GET', path + '/stats')]);
  const windows = ['1h', '24h'].map(w => Object.assign({ window: w }, stats.windows[w]));
  const b = stats.backlog;
  const fields = ['name', 'schedule', 'time_zone', 'misfire_policy', 'catch_up_limit', 'starting_deadline',
    'max_instances', 'concurrency_policy', 'exclusive_execution', 'mutually_exclusive', 'on_error', 'jitter', 'on_events', 'run_after', 'worker_selector',
    'concurrency_key', 'concurrency_limit', 'keys_in_use', 'rate_limit', 'rate_permits_taken', 'paused', 'live'];
  const at = el('input', { id: 'why-at', name: 'at', size: 28, value: whyAt[name] || new Date().toISOString().slice(0, 19) + 'Z',
    placeholder: '2026-03-29T01:30:00Z' });
  const form = el('form', { id: 'why-form', class: 'filters', onsubmit: (e) => { e.preventDefault(); whyAt[name] = at.value.trim(); render(false); } },
    el('label', {}, 'Why did (or didn\'t) it run at ', at), el('button', { type: 'submit', 'data-action': 'why', text: 'Explain' }));
  let answer = [];
  if (j.schedule && whyAt[name]) {
    try {
      const w = await api('GET', path + '/why?at=' + encodeURIComponent(whyAt[name]));
      answer = [el('p', { id: 'why-explanation', class: 'explanation', text: w.explanation }),
        el('p', {}, 'Slot ' + w.slot + (w.run ? ', run ' : ', no run'), w.run ? runLink(w.run.id) : null,
          w.run ? el('span', {}, ' ', stateCell(w.run.state)) : null),
        table('why-table', [['At', d => when(d.at)], ['Epoch', d => d.epoch], ['Decision', d => d.decision],
          ['Reason', d => d.reason], ['Slot', d => when(d.slot)], ['To', d => when(d.slot_last)], ['Count', d => d.slot_count],
          ['Run', d => runLink(d.run_id)], ['Details', d => d.details]], w.decisions)];
    } catch (e) {
      answer = [el('p', { id: 'why-explanation', class: 'message error', text: (e.code ? e.code + ': ' : '') + e.message })];
    }
  } else if (!j.schedule) {
    answer = [el('p', { class: 'explanation', text: 'This job has no schedule: it runs when triggered, on events or after another job.' })];
  }
  return [el('h2', { text: 'Job ' + name }),
    table('job-fields', [['Field', f => f], ['Value', f => text(j[f])]], fields.filter(f => j[f] !== undefined)),
    el('h2', { text: 'Statistics' }),
    table('job-stats-table', [['Window', w => w.window], ['Runs', w => w.runs], ['Succeeded', w => w.succeeded],
      ['Failed', w => w.failed], ['Timed out', w => w.timed_out], ['Canceled', w => w.canceled],
      ['p50 ms', w => w.duration_p50_ms], ['p95 ms', w => w.duration_p95_ms]], windows),
    el('p', { id: 'job-backlog', text: 'Backlog: ' + b.pending + ' pending, ' + b.scheduled_ahead + ' scheduled ahead, ' +
      b.orphaned + ' orphaned, ' + b.retry_waiting + ' waiting to retry, ' + b.assigned + ' assigned, ' + b.running +
      ' running; oldest waiting ' + b.oldest_waiting_s + ' s' }),
    el('h2', { text: 'Why?' }), form, ...answer,
    el('h2', { text: 'Recent runs' }),
    table('job-runs-table', [['Run', r => runLink(r.id)], ['State', r => stateCell(r.state)], ['Trigger', r => r.trigger_kind],
      ['Created', r => when(r.created_at)], ['Finished', r => when(r.finished_at)], ['Error', r => r.error_code]],
      recent.items, 'id')];
}

const runFilters = { job: '', state: '', worker: '' };
let refreshEvery = 5;
let refreshPaused = false;

async function runs() {
  const q = new URLSearchParams({ limit: '100' });
  for (const [k, v] of Object.entries(runFilters)) if (v) q.set(k, v);
  const page = await api('GET', '/api/v1/runs?' + q.toString());
  const input = (name) => el('label', {}, name, el('input', { name, value: runFilters[name], size: 14,
    onchange: (e) => { runFilters[name] = e.target.value.trim(); render(false); } }));
  const states = ['', 'PENDING', 'ASSIGNED', 'RUNNING', 'RETRY_WAITING', 'ORPHANED', 'SUCCEEDED', 'FAILED', 'TIMED_OUT', 'CANCELED'];
  const stateSel = el('select', { name: 'state', onchange: (e) => { runFilters.state = e.target.value; render(false); } },
    ...states.map(s => el('option', s === runFilters.state ? { value: s, selected: '' } : { value: s }, s || 'any')));
  const every = el('select', { id: 'refresh-every', onchange: (e) => { refreshEvery = Number(e.target.value); render(false); } },
    ...[0, 2, 5, 10, 30].map(n => el('option', n === refreshEvery ? { value: n, selected: '' } : { value: n }, n ? n + ' s' : 'off')));
  const pause = button(refreshPaused ? 'Resume refresh' : 'Pause refresh', 'refresh-pause',
    () => { refreshPaused = !refreshPaused; render(false); });
  if (refreshEvery && !refreshPaused) timer = setTimeout(() => render(false), refreshEvery * 1000);
  return [el('div', { class: 'filters' }, input('job'), el('label', {}, 'state', stateSel), input('worker'),
    el('label', {}, 'refresh every', every), pause),
    table('runs-table', [['Run', r => runLink(r.id)], ['Job', r => r.job], ['State', r => stateCell(r.state)],
      ['Attempt', r => r.attempt + '/' + r.max_attempts], ['Worker', r => r.worker_id], ['Epoch', r => r.leader_epoch],
      ['Trigger', r => r.trigger_kind], ['Created', r => when(r.created_at)], ['Finished', r => when(r.finished_at)],
      ['Error', r => r.error_code]], page.items, 'id')];
}

const terminal = new Set(['SUCCEEDED', 'FAILED', 'TIMED_OUT', 'CANCELED']);

async function run(id) {
  const r = await api('GET', '/api/v1/runs/' + encodeURIComponent(id));
  const fields = ['job', 'state', 'attempt', 'max_attempts', 'assigned_worker_id', 'leader_epoch', 'continuation_state',
    'trigger_kind', 'rerun_of', 'idempotency_key', 'created_at', 'started_at', 'finished_at', 'error_code', 'error_msg',
    'log_ref', 'progress', 'progress_at'];
  const actions = el('p', {},
    terminal.has(r.state)
      ? button('Re-run', 'rerun', () => act('re-run ' + id, async () => {
          const n = await api('POST', '/api/v1/runs/' + id + '/rerun'); location.hash = '#/runs/' + n.run_id; return n; }))
      : button('Cancel', 'cancel', () => act('cancel ' + id, () => api('POST', '/api/v1/runs/' + id + '/cancel'),
        'Cancel run ' + id + '? A running task is killed.'), 'small danger'));
  // The attempt timeline: each attempt's span between the run's creation and now.
  const t0 = Date.parse(r.created_at);
  const t1 = Math.max(Date.now(), ...r.attempts.map(a => Date.parse(a.finished_at || 0) || 0));
  const timeline = el('div', { id: 'timeline' }, ...r.attempts.map(a => {
    const start = Date.parse(a.started_at || r.started_at || r.created_at);
    const end = Date.parse(a.finished_at) || Date.now();
    const left = 100 * (start - t0) / Math.max(1, t1 - t0), width = Math.max(1, 100 * (end - start) / Math.max(1, t1 - t0));
    return el('div', { class: 'timeline' }, el('span', { class: a.outcome, style: 'left:' + left + '%;width:' + width + '%',
      text: 'attempt ' + a.attempt + ' on ' + a.worker_id + ': ' + a.outcome + ' (' + a.duration_ms + ' ms)' }));
  }));
  const logs = el('pre', { class: 'logs', id: 'logs' });
  logs.textContent = r.logs.map(l => (l.stream === 'stdout' ? '' : '[' + l.stream + '] ') + l.chunk).join('') || '(no output)';
  if (!terminal.has(r.state)) timer = setTimeout(() => render(false), 2000);
  return [el('h2', { text: 'Run ' + r.id }),
    table('run-fields', [['Field', f => f],
      ['Value', f => f === 'state' ? stateCell(r.state) : f.endsWith('_at') ? when(r[f]) : text(r[f])]], fields),
    actions,
    r.dead_letter ? el('p', {}, 'Dead letter ', el('a', { href: '#/dead-letters', text: String(r.dead_letter.id) }), ' (' + r.dead_letter.triage_status + ')') : null,
    el('h2', { text: 'Attempts' }), timeline,
    table('attempts-table', [['Attempt', a => a.attempt], ['Worker', a => a.worker_id], ['Epoch', a => a.leader_epoch],
      ['Outcome', a => stateCell(a.outcome)], ['Exit', a => a.exit_code], ['Duration (ms)', a => a.duration_ms],
      ['Finished', a => when(a.finished_at)]], r.attempts, 'attempt'),
    el('h2', { text: 'Scheduling decisions' }),
    table('decisions-table', [['At', d => when(d.at)], ['Epoch', d => d.epoch], ['Decision', d => d.decision],
      ['Reason', d => d.reason], ['Slot', d => when(d.slot)], ['Details', d => d.details]], r.decisions || []),
    el('h2', { text: 'Transitions' }),
    table('transitions-table', [['At', t => when(t.at)], ['From', t => t.from], ['To', t => stateCell(t.to)],
      ['Attempt', t => t.attempt], ['Epoch', t => t.leader_epoch], ['Continuation', t => t.continuation_state]], r.transitions),
    el('h2', { text: 'Output' }), logs];
}

async function workers() {
  const page = await api('GET', '/api/v1/workers?limit=500');
  const ask = {
    drain: w => 'Drain worker ' + w.worker_id + '? It finishes what it runs and takes no new run.',
    evict: w => 'Evict worker ' + w.worker_id + '? Its runs are taken back and it cannot attach until resumed.',
  };
  const post = (w, verb) => act(verb + ' ' + w.worker_id,
    () => api('POST', '/api/v1/workers/' + encodeURIComponent(w.worker_id) + '/' + verb), ask[verb] && ask[verb](w));
  timer = setTimeout(() => render(false), 5000);
  return [el('h2', { text: 'Workers' }),
    table('workers-table', [['Worker', w => w.worker_id], ['State', w => w.state], ['Hold', w => w.admin_state],
      ['Capacity', w => w.capacity], ['In flight', w => w.in_flight], ['Last heartbeat', w => when(w.last_heartbeat_at)],
      ['Node', w => w.attached_node_id], ['Labels', w => w.labels],
      ['', w => el('span', {}, w.admin_state === 'active'
        ? button('Drain', 'drain', () => post(w, 'drain'))
        : button('Resume', 'resume', () => post(w, 'resume')),
        ' ', w.admin_state === 'evicted' ? null : button('Evict', 'evict', () => post(w, 'evict'), 'small danger'))]],
    page.items, 'worker_id')];
}

let letterStatus = '';
async function deadLetters() {
  const page = await api('GET', '/api/v1/dead-letters?limit=200' + (letterStatus ? '&status=' + letterStatus : ''));
  const statuses = ['pending', 'acknowledged', 'replayed', 'closed'];
  const filter = el('select', { name: 'status', onchange: (e) => { letterStatus = e.target.value; render(false); } },
    ...['', ...statuses].map(s => el('option', s === letterStatus ? { value: s, selected: '' } : { value: s }, s || 'any')));
  const replaySelected = button('Replay selected', 'replay-selected', () => {
    const ids = [...document.querySelectorAll('#letters-table input[type=checkbox]:checked')].map(c => Number(c.value));
    if (!ids.length) return show('select dead letters to replay first', false);
    act('replay ' + ids.length + ' dead letter(s)', () => api('POST', '/api/v1/dead-letters/replay', { ids }));
  });
  return [el('h2', { text: 'Dead letters' }), el('div', { class: 'filters' }, el('label', {}, 'triage status', filter), replaySelected),
    table('letters-table', [['', d => el('input', { type: 'checkbox', value: String(d.id) })], ['Id', d => d.id],
      ['Run', d => runLink(d.run_id)], ['Job', d => d.job], ['Final', d => stateCell(d.final_state)], ['Attempts', d => d.attempts],
      ['Error', d => d.error_msg || d.error_code], ['Created', d => when(d.created_at)],
      ['Triage', d => {
        const sel = el('select', { 'data-field': 'status' }, ...statuses.map(s => el('option', s === d.triage_status ? { value: s, selected: '' } : { value: s }, s)));
        const notes = el('input', { 'data-field': 'notes', value: d.notes || '', size: 24, placeholder: 'notes' });
        return el('span', {}, sel, ' ', notes, ' ', button('Save', 'triage', () => act('triage ' + d.id,
          () => api('POST', '/api/v1/dead-letters/' + d.id + '/triage', { status: sel.value, notes: notes.value }))));
      }],
      ['Replayed as', d => el('span', {}, ...d.replayed_run_ids.map(id => el('span', {}, runLink(id), ' ')))],
      ['', d => button('Replay', 'replay', () => act('replay ' + d.id, () => api('POST', '/api/v1/dead-letters/' + d.id + '/replay')))]],
    page.items, 'id')];
}

let webhookShown = '';
async function webhooks() {
  const page = await api('GET', '/api/v1/webhooks?limit=200');
  const names = page.items.map(w => w.name);
  if (!names.includes(webhookShown)) webhookShown = names[0] || '';
  const out = [el('h2', { text: 'Webhooks' }),
    el('p', { class: 'hint', text: 'Defined with baton ctl apply (a webhooks: list). A delivery is retried with backoff until its receiver answers 2xx; each event keeps one id.' }),
    table('webhooks-table', [['Name', w => w.name], ['URL', w => w.url], ['Events', w => w.events.join(', ')],
      ['Jobs', w => w.jobs.length ? w.jobs.join(', ') : 'all'], ['Enabled', w => w.enabled ? 'yes' : 'no'],
      ['Pending', w => w.deliveries.pending], ['Delivered', w => w.deliveries.delivered], ['Failed', w => w.deliveries.failed],
      ['Last delivered', w => when(w.deliveries.last_delivered_at)], ['Last error', w => w.deliveries.last_error],
      ['', w => el('span', {}, button('Deliveries', 'show', () => { webhookShown = w.name; render(false); }), ' ',
        button('Ping', 'ping', () => act('ping ' + w.name, () => api('POST', '/api/v1/webhooks/' + encodeURIComponent(w.name) + '/ping'))))]],
    page.items, 'name')];
  if (webhookShown) {
    const d = await api('GET', '/api/v1/webhooks/' + encodeURIComponent(webhookShown) + '/deliveries?limit=100');
    out.push(el('h3', { text: 'Deliveries of ' + webhookShown }),
      table('deliveries-table', [['Id', x => x.id], ['Kind', x => x.kind], ['Event id', x => x.event_id],
        ['State', x => stateCell(x.state)], ['Attempts', x => x.attempts + ' of ' + x.max_attempts],
        ['Next attempt', x => when(x.next_attempt_at)], ['Status', x => x.last_status], ['Error', x => x.last_error],
        ['Created', x => when(x.created_at)],
        ['', x => button('Redeliver', 'redeliver', () => act('redeliver ' + x.id, () => api('POST', '/api/v1/webhook-deliveries/' + x.id + '/redeliver')))]],
      d.items, 'id'));
  }
  timer = setTimeout(() => render(false), 5000);
  return out;
}

async function audit() {
  const page = await api('GET', '/api/v1/audit?limit=100');
  return [el('h2', { text: 'Audit log' }),
    table('audit-table', [['At', a => when(a.at)], ['Actor', a => a.actor], ['Action', a => a.action], ['Subject', a => a.subject],
      ['Epoch', a => a.epoch], ['Details', a => a.details]], page.items, 'id')];
}

// --- routing ----------------------------------------------------------------------

async function render(clear = true) {
  if (timer) { clearTimeout(timer); timer = null; }
  if (clear) clearMessage();
  const hash = location.hash || '#/';
  const parts = hash.slice(2).split('/');
  const page = parts[0] || 'overview';
  for (const a of document.querySelectorAll('nav a')) a.classList.toggle('active', a.dataset.nav === page);
  try {
    const s = await nodeStatus(true);
    document.getElementById('node-status').textContent =
      'node ' + s.node_id + ' (' + s.role + ') - leader ' + (s.leader_id || 'none') + ' - epoch ' + s.epoch;
    let content;
    if (page === 'overview') content = await overview();
    else if (page === 'jobs' && parts[1]) content = await job(decodeURIComponent(parts[1]));
    else if (page === 'jobs') content = await jobs();
    else if (page === 'runs' && parts[1]) content = await run(parts[1]);
    else if (page === 'runs') content = await runs();
    else if (page === 'workers') content = await workers();
    else if (page === 'dead-letters') content = await deadLetters();
    else if (page === 'webhooks') content = await webhooks();
    else if (page === 'audit') content = await audit();
    else content = [el('p', { text: 'No such page.' })];
    view.replaceChildren(...content.filter(x => x));
    view.dataset.page = page;
    view.dataset.rendered = String(Date.now());
  } catch (e) {
    view.replaceChildren(el('p', { class: 'message error', id: 'page-error',
      text: (e.status === 401 ? 'This page needs an API token (Token, top right). ' : '') + (e.code ? e.code + ': ' : '') + e.message }));
    view.dataset.rendered = String(Date.now());
  }
}

document.getElementById('token-button').addEventListener('click', () =>
  document.getElementById('token-panel').classList.toggle('hidden'));
document.getElementById('token-form').addEventListener('submit', (e) => {
  e.preventDefault();
  token = document.getElementById('token-input').value.trim();
  sessionStorage.setItem('baton_token', token);
  document.getElementById('token-panel').classList.add('hidden');
  render();
});
document.getElementById('token-forget').addEventListener('click', () => {
  token = '';
  sessionStorage.removeItem('baton_token');
  render();
});
window.addEventListener('hashchange', () => render());
if (!token) document.getElementById('token-panel').classList.remove('hidden');
render();
