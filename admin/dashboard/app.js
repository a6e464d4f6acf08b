// The Baton dashboard: a client of /status and /api/v1 (docs/operations.md),
// with the same tokens as `baton ctl`. Everything shown is built with
// textContent, never as HTML: job names, log output and notes come from
// clients and workers.
'use strict';

const view = document.getElementById('view');
const message = document.getElementById('message');
// The token lives in this browser's open dashboard tabs only
// (sessionStorage, never localStorage): a tab opened while another is
// signed in asks it over a BroadcastChannel (same origin only) and gets it,
// so a link opened in a new tab or pasted into one works; closing every tab
// forgets it, and "Forget" forgets it in every tab.
// A sign-in link (the demo prints one; docs/operations.md, "Dashboard") carries
// it in the URL's fragment, which a browser never sends to a server: it is
// moved to session storage and wiped from the address bar and history.
// `#token=T&to=/runs/42` lands on that page instead of the overview.
if (location.hash.startsWith('#token=')) {
  const [t, to] = location.hash.slice('#token='.length).split('&to=');
  sessionStorage.setItem('baton_token', decodeURIComponent(t));
  const route = to ? decodeURIComponent(to) : '/';
  history.replaceState(null, '', location.pathname + location.search + '#' + (/^\/[A-Za-z0-9\/_.%-]*$/.test(route) ? route : '/'));
}
let token = sessionStorage.getItem('baton_token') || '';
let timer = null;
const tabs = 'BroadcastChannel' in window ? new BroadcastChannel('baton_token') : null;
if (tabs) {
  tabs.onmessage = (m) => {
    const d = m.data || {};
    if (d.ask && token) tabs.postMessage({ token });
    else if (typeof d.token === 'string' && d.token && !token) {
      token = d.token;
      sessionStorage.setItem('baton_token', token);
      document.getElementById('token-panel').classList.add('hidden');
      render();
    } else if (d.forget && token) {
      token = '';
      sessionStorage.removeItem('baton_token');
      render();
    }
  };
  if (!token) tabs.postMessage({ ask: true });
}

// Shown in the browser's zone (with its offset) or in UTC, as chosen; the
// theme follows the system's unless chosen. Both kept in this browser.
let zoneUtc = localStorage.getItem('baton_zone') === 'utc';
function applyTheme() {
  const chosen = localStorage.getItem('baton_theme');
  const dark = chosen ? chosen === 'dark' : window.matchMedia('(prefers-color-scheme: dark)').matches;
  document.documentElement.dataset.theme = dark ? 'dark' : 'light';
}
applyTheme();

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

function pad(n) { return String(n).padStart(2, '0'); }
/// A time as people read it: the browser's zone with its offset
/// ("2026-11-29 14:02:07 +01:00") or UTC ("2026-11-29 13:02:07Z").
function timeText(ms, short) {
  const d = new Date(ms);
  if (isNaN(d)) return '-';
  if (zoneUtc) {
    const s = d.toISOString();
    return (short ? s.slice(5, 16) : s.slice(0, 19)).replace('T', ' ') + 'Z';
  }
  const off = -d.getTimezoneOffset();
  const zone = (off >= 0 ? '+' : '-') + pad(Math.floor(Math.abs(off) / 60)) + ':' + pad(Math.abs(off) % 60);
  const day = d.getFullYear() + '-' + pad(d.getMonth() + 1) + '-' + pad(d.getDate());
  const clock = pad(d.getHours()) + ':' + pad(d.getMinutes());
  return short ? day.slice(5) + ' ' + clock : day + ' ' + clock + ':' + pad(d.getSeconds()) + ' ' + zone;
}
function when(ts) { return ts ? timeText(Date.parse(ts)) : '-'; }
function iso(unix) { return unix === null || unix === undefined ? '-' : timeText(unix * 1000); }
/// How long ago, kubectl's AGE: 45s, 12m, 3h, 5d.
function age(ts) {
  if (!ts) return '-';
  const s = Math.max(0, Math.round((Date.now() - Date.parse(ts)) / 1000));
  return s < 120 ? s + 's' : s < 7200 ? Math.floor(s / 60) + 'm' : s < 172800 ? Math.floor(s / 3600) + 'h' : Math.floor(s / 86400) + 'd';
}
/// A run's or an attempt's length: 350ms, 4.2s, 3m7s, then as age().
function duration(ms) {
  if (ms === null || ms === undefined) return '-';
  if (ms < 1000) return ms + 'ms';
  if (ms < 60000) return (Math.floor(ms / 100) / 10) + 's';
  const s = Math.floor(ms / 1000);
  return s < 3600 ? Math.floor(s / 60) + 'm' + (s % 60) + 's' : s < 172800 ? Math.floor(s / 3600) + 'h' : Math.floor(s / 86400) + 'd';
}
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

async function api(method, path, body, extraHeaders) {
  let base = '';
  if (method !== 'GET' && leaderOnly.test(path)) {
    const s = await nodeStatus(true);
    if (s.role !== 'leader') {
      if (!s.leader_endpoint) throw new ApiError(503, 'no_leader', 'no leader is known right now; retry in a few seconds');
      base = location.protocol + '//' + s.leader_endpoint;  // the scheme this page came by
    }
  }
  const headers = Object.assign({ Authorization: 'Bearer ' + token }, extraHeaders || {});
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

/// A table; with `sortable`, a click on a column's head sorts the rows
/// shown by it (again: the other way).
const sortBy = {};
function table(id, columns, items, rowKey, sortable) {
  const order = sortBy[id];
  if (sortable && order && columns[order.col]) {
    const key = columns[order.col][2] || columns[order.col][1];
    const val = (item) => { const v = key(item); return v instanceof Node ? v.textContent : v; };
    items = [...items].sort((a, b) => {
      const x = val(a), y = val(b);
      const c = (typeof x === 'number' && typeof y === 'number') ? x - y : String(x ?? '').localeCompare(String(y ?? ''), undefined, { numeric: true });
      return order.desc ? -c : c;
    });
  }
  const head = el('tr', {}, ...columns.map((c, i) => sortable && c[0]
    ? el('th', { class: 'sortable', 'data-col': c[0], onclick: () => {
        sortBy[id] = { col: i, desc: order && order.col === i ? !order.desc : false }; render(false); } },
      c[0] + (order && order.col === i ? (order.desc ? ' \u25be' : ' \u25b4') : ''))
    : el('th', { text: c[0] })));
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

/// Paging with the API's cursor for a list page: its state survives the
/// page's redraws; `reset` goes back to the first page (a filter changed).
const pagers = {};
async function pagedGet(key, path) {
  const p = pagers[key] || (pagers[key] = { cursors: [], cursor: null, limit: 100 });
  const sep = path.includes('?') ? '&' : '?';
  const page = await api('GET', path + sep + 'limit=' + p.limit + (p.cursor ? '&cursor=' + encodeURIComponent(p.cursor) : ''));
  const info = page.items.length ? page.items.length + ' shown (page ' + (p.cursors.length + 1) + ')' : 'none';
  const pager = el('div', { class: 'pager', id: key + '-pager' },
    el('button', { type: 'button', class: 'small', 'data-action': 'newer', disabled: p.cursors.length ? null : '',
      onclick: () => { p.cursor = p.cursors.pop() || null; render(false); } }, '\u2190 Newer'),
    el('span', { id: key + '-page-info', text: info }),
    el('button', { type: 'button', class: 'small', 'data-action': 'older', disabled: page.next_cursor ? null : '',
      onclick: () => { p.cursors.push(p.cursor); p.cursor = page.next_cursor; render(false); } }, 'Older \u2192'));
  return { page, pager, reset: () => { p.cursors = []; p.cursor = null; } };
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

// --- charts --------------------------------------------------------------------

let chartWindow = localStorage.getItem('baton_chart_window') || '1h';
function windowPicker() {
  return el('span', { class: 'window-picker', id: 'chart-window' }, 'Window: ',
    ...['1h', '24h', '7d'].map(w => el('button', { type: 'button', class: 'small' + (w === chartWindow ? ' chosen' : ''),
      'data-window': w, onclick: () => { chartWindow = w; localStorage.setItem('baton_chart_window', w); render(false); } }, w)));
}
const outcomes = [{ key: 'succeeded', label: 'succeeded', cls: 'ok' }, { key: 'failed', label: 'failed', cls: 'bad' },
  { key: 'timed_out', label: 'timed out', cls: 'late' }, { key: 'canceled', label: 'canceled', cls: 'off' }];
const short = t => timeText(t, true);
/// The series change by the minute, the overview redraws every 5 s: one
/// fetch per 30 s per window and job, and at once after a leader change
/// (its marker must not wait).
const seriesCache = {};
async function seriesOf(query, epoch) {
  const c = seriesCache[query];
  if (c && c.epoch === epoch && Date.now() - c.at < 30000) return c.data;
  const data = await api('GET', '/api/v1/stats/series?' + query);
  seriesCache[query] = { epoch, at: Date.now(), data };
  return data;
}
function seriesCaption(data) {
  const before = data.epochs.filter(e => Date.parse(e.elected_at) < Date.parse(data.from));
  const inside = data.epochs.length - before.length;
  return el('p', { class: 'hint', id: 'chart-caption', text: (before.length ? 'Leader at the window\'s start: ' + before[0].leader_id +
    ' (epoch ' + before[0].epoch + '). ' : '') + inside + ' leader change' + (inside === 1 ? '' : 's') +
    ' in the window, drawn as markers. Buckets of ' + (data.bucket_seconds >= 3600 ? data.bucket_seconds / 3600 + ' h' :
    data.bucket_seconds / 60 + ' min') + '.' });
}
function clusterCharts(data) {
  return [el('div', { class: 'charts' },
    drawChart({ id: 'chart-finished', title: 'Runs finished, by outcome', kind: 'bars', series: outcomes, data, timeText: short }),
    drawChart({ id: 'chart-backlog', title: 'Backlog (runs due and waiting)', kind: 'lines',
      series: [{ key: 'pending', label: 'waiting', cls: 'wait' }], data, timeText: short }),
    drawChart({ id: 'chart-oldest', title: 'Oldest waiting run\'s age', unit: ' s', kind: 'lines',
      series: [{ key: 'oldest_pending_age_s', label: 'age (s)', cls: 'late' }], data, timeText: short }),
    drawChart({ id: 'chart-latency', title: 'Trigger-to-start latency', unit: ' ms', kind: 'lines',
      series: [{ key: 'start_latency_p50_ms', label: 'p50', cls: 'p50' }, { key: 'start_latency_p95_ms', label: 'p95', cls: 'p95' }],
      data, timeText: short })), seriesCaption(data)];
}
function jobCharts(data) {
  const rate = b => { const n = b.succeeded + b.failed + b.timed_out + b.canceled; return n ? Math.round(1000 * b.succeeded / n) / 10 : null; };
  return [el('div', { class: 'charts' },
    drawChart({ id: 'chart-finished', title: 'Runs finished, by outcome', kind: 'bars', series: outcomes, data, timeText: short }),
    drawChart({ id: 'chart-success', title: 'Success rate', unit: ' %', max: 100, kind: 'lines',
      series: [{ key: 'rate', label: 'succeeded (%)', cls: 'ok', value: rate }], data, timeText: short }),
    drawChart({ id: 'chart-duration', title: 'Duration', unit: ' ms', kind: 'lines',
      series: [{ key: 'duration_p50_ms', label: 'p50', cls: 'p50' }, { key: 'duration_p95_ms', label: 'p95', cls: 'p95' }],
      data, timeText: short }),
    drawChart({ id: 'chart-latency', title: 'Trigger-to-start latency', unit: ' ms', kind: 'lines',
      series: [{ key: 'start_latency_p50_ms', label: 'p50', cls: 'p50' }, { key: 'start_latency_p95_ms', label: 'p95', cls: 'p95' }],
      data, timeText: short })), seriesCaption(data)];
}

// --- pages ----------------------------------------------------------------------

/// Who leads, as it is: a lease holder whose renewals are overdue (a killed
/// or stalled leader) is not shown leading; until its lease runs out no node
/// may win, and the page says so and who led last.
function leaderNow(s) { return s.leader_state === 'leading' ? s.leader_id : ''; }
function noLeaderNote(s) {
  const why = s.leader_state === 'not_renewing' && s.lease_expires_in_ms !== null
    ? 'lease expires in ' + Math.max(1, Math.ceil(s.lease_expires_in_ms / 1000)) + ' s' : 'election under way';
  return 'no leader (' + why + ')' + (s.last_leader_id ? '; last: ' + s.last_leader_id + ', epoch ' + s.last_leader_epoch : '');
}

async function overview() {
  const s = await nodeStatus(true);
  const counts = s.runs_by_state || {};
  const leader = leaderNow(s);
  const cards = el('div', { class: 'cards', id: 'leadership' },
    el('div', { class: leader ? 'card' : 'card warn' }, 'Leader', el('div', { class: 'big', id: 'leader-id', text: leader || 'none' }),
      leader ? null : el('div', { class: 'hint', id: 'leader-note', text: noLeaderNote(s) })),
    el('div', { class: 'card' }, 'Epoch', el('div', { class: 'big', id: 'epoch', text: String(s.epoch) })),
    el('div', { class: 'card' }, 'This node', el('div', { class: 'big', text: s.node_id + ' (' + s.role + ')' })),
    el('div', { class: 'card' }, 'Running', el('div', { class: 'big', text: String((counts.RUNNING || 0) + (counts.ASSIGNED || 0)) })),
    el('div', { class: 'card' }, 'Pending', el('div', { class: 'big', text: String(counts.PENDING || 0) })),
    el('div', { class: 'card', title: 'FAILED and TIMED_OUT runs the database keeps (retention: docs/operations.md)' },
      'Failed, all kept runs', el('div', { class: 'big', text: String((counts.FAILED || 0) + (counts.TIMED_OUT || 0)) })),
    el('div', { class: s.unmatched_runs ? 'card warn' : 'card', title: 'unfinished runs whose selector no attached worker satisfies' },
      'No worker matches', el('div', { class: 'big', id: 'unmatched', text: String(s.unmatched_runs || 0) })));
  timer = setTimeout(() => render(false), 5000);
  const [epochs, nodes, failed, series] = await Promise.all([
    api('GET', '/api/v1/epochs?limit=20'), api('GET', '/api/v1/nodes'), api('GET', '/api/v1/runs?state=FAILED&limit=10'),
    seriesOf('window=' + chartWindow, s.epoch)]);
  // Every state of SPEC section 3 with its count (GET /status, the node's
  // counts a few seconds old at most), each a link to the runs in it.
  const allStates = ['PENDING', 'ASSIGNED', 'RUNNING', 'RETRY_WAITING', 'ORPHANED', 'SUCCEEDED', 'FAILED', 'TIMED_OUT', 'CANCELED'];
  const byState = table('states-table', [['State', r => el('a', { href: '#/runs', onclick: (e) => {
    e.preventDefault(); runFilters.state = r.state; runCursors = []; runCursor = null; location.hash = '#/runs'; } }, stateCell(r.state))],
    ['Runs', r => String(r.n)]], allStates.map(k => ({ state: k, n: counts[k] || 0 })), 'state');
  return [cards,
    el('h2', { text: 'Runs by state' }), byState,
    el('h2', {}, 'Trends ', windowPicker()), ...clusterCharts(series),
    el('h2', { text: 'Recent failures' }),
    table('failures-table', [['Run', r => runLink(r.id)], ['Job', r => r.job], ['Worker', r => r.worker_id],
      ['Finished', r => when(r.finished_at)], ['Error', r => r.error_msg ? (r.error_code || '') + ': ' + r.error_msg : r.error_code],
      ['', r => el('a', { href: '#/runs/' + r.id, 'data-action': 'logs', text: 'logs' })]], failed.items, 'id'),
    el('h2', { text: 'Leadership (every epoch)' }),
    table('epochs-table', [['Epoch', e => e.epoch], ['Leader', e => e.leader_id], ['Endpoint', e => e.leader_endpoint],
      ['Elected', e => when(e.elected_at)], ['Ended', e => when(e.ended_at)], ['How it ended', e => e.end_reason],
      ['Current', e => e.current ? 'yes' : '']], epochs.items, 'epoch'),
    el('h2', { text: 'Nodes' }),
    table('nodes-table', [['Node', n => n.node_id], ['Role', n => n.role], ['Leads', n => n.leads ? 'yes' : ''],
      ['Epoch', n => n.epoch == null ? '' : n.epoch],
      ['Endpoint', n => n.endpoint], ['Heartbeat', n => n.heartbeat_age_ms === null || n.heartbeat_age_ms === undefined ? '-' : duration(n.heartbeat_age_ms) + ' ago'], ['Started', n => when(n.started_at)]],
      nodes.items, 'node_id')];
}

async function jobs() {
  const { page, pager } = await pagedGet('jobs', '/api/v1/jobs');
  return [el('h2', { text: 'Jobs' }),
    table('jobs-table', [['Name', j => el('a', { href: '#/jobs/' + encodeURIComponent(j.name), text: j.name })],
      ['Schedule', j => j.schedule], ['Zone', j => j.time_zone],
      ['Next fire', j => iso(j.next_fire_unix)],
      ['Last run', j => j.last_run ? el('span', {}, runLink(j.last_run.id), ' ', stateCell(j.last_run.state)) : '-'],
      ['Paused', j => j.paused ? 'yes' : 'no'],
      ['', j => el('span', {},
        j.paused ? button('Resume', 'resume', () => act('resume ' + j.name, () => api('POST', '/api/v1/jobs/' + encodeURIComponent(j.name) + '/resume')))
                 : button('Pause', 'pause', () => act('pause ' + j.name, () => api('POST', '/api/v1/jobs/' + encodeURIComponent(j.name) + '/pause'))),
        ' ', button('Trigger', 'trigger', () => act('trigger ' + j.name, () => api('POST', '/api/v1/jobs/' + encodeURIComponent(j.name) + '/trigger'))))]],
    page.items, 'name', true), pager];
}

// One job: its definition, its statistics and backlog (GET
// /api/v1/jobs/{name}/stats), its recent runs, and "why did (or didn't) it
// run at TIME?" from the decision ledger (GET /api/v1/jobs/{name}/why).
const whyAt = {};
async function job(name) {
  const path = '/api/v1/jobs/' + encodeURIComponent(name);
  const [j, recent, stats, series] = await Promise.all([api('GET', path),
    api('GET', '/api/v1/runs?limit=20&job=' + encodeURIComponent(name)), api('GET', path + '/stats'),
    seriesOf('window=' + chartWindow + '&job=' + encodeURIComponent(name), (await nodeStatus(false)).epoch)]);
  const windows = ['1h', '24h'].map(w => Object.assign({ window: w }, stats.windows[w]));
  const b = stats.backlog;
  const fields = ['name', 'schedule', 'time_zone', 'misfire_policy', 'catch_up_limit', 'starting_deadline',
    'max_instances', 'concurrency_policy', 'exclusive_execution', 'mutually_exclusive', 'on_error', 'jitter', 'on_events', 'run_after', 'worker_selector',
    'concurrency_key', 'concurrency_limit', 'keys_in_use', 'rate_limit', 'rate_permits_taken', 'timeout_ms', 'max_attempts',
    'priority', 'paused', 'live', 'version'];
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
    el('h2', {}, 'Trends ', windowPicker()), ...jobCharts(series),
    table('job-fields', [['Field', f => f], ['Value', f => text(j[f])]], fields.filter(f => j[f] !== undefined)),
    el('h2', { text: 'Tasks' }),
    table('job-tasks', [['#', t => t.n], ['Kind', t => t.kind], ['Name', t => t.name], ['What it runs', t => t.what],
      ['Timeout', t => t.timeout], ['Other', t => t.rest]], (j.tasks || []).map(taskRow)),
    el('h2', { text: 'Parameters' }),
    table('job-parameters', [['Parameter', p => p.name], ['Declared', p => p.rule], ['Default', p => p.value]], parameterRows(j)),
    el('h2', { text: 'Trigger' }), triggerForm(j),
    el('h2', { text: 'Statistics' }),
    table('job-stats-table', [['Window', w => w.window], ['Runs', w => w.runs], ['Succeeded', w => w.succeeded],
      ['Failed', w => w.failed], ['Timed out', w => w.timed_out], ['Canceled', w => w.canceled],
      ['p50 ms', w => w.duration_p50_ms], ['p95 ms', w => w.duration_p95_ms]], windows),
    el('p', { id: 'job-backlog', text: 'Backlog: ' + b.pending + ' pending, ' + b.scheduled_ahead + ' scheduled ahead, ' +
      b.orphaned + ' orphaned, ' + b.retry_waiting + ' waiting to retry, ' + b.assigned + ' assigned, ' + b.running +
      ' running; oldest waiting ' + b.oldest_waiting_s + ' s' }),
    ...(j.cadence ? [el('h2', { text: 'Cadence' }),
      table('job-cadence', [['Window', w => w.window], ['Due', w => w.due], ['Fired', w => w.fired], ['Late', w => w.late],
        ['Skipped', w => w.skipped], ['Undecided', w => w.undecided], ['Every (s)', w => w.configured_interval_s],
        ['Effective (s)', w => w.effective_interval_s], ['Delay p50 / p99 ms', w => w.delay_ms_p50 + ' / ' + w.delay_ms_p99],
        ['Epochs', w => w.epochs]],
        ['last_hour', 'last_day'].filter(w => j.cadence[w]).map(w => Object.assign({ window: w }, j.cadence[w])))] : []),
    el('h2', { text: 'Why?' }), form, ...answer,
    el('h2', { text: 'Recent runs' }),
    table('job-runs-table', [['Run', r => runLink(r.id)], ['State', r => stateCell(r.state)], ['Trigger', r => r.trigger_kind],
      ['Created', r => when(r.created_at)], ['Finished', r => when(r.finished_at)], ['Error', r => r.error_code]],
      recent.items, 'id')];
}

/// A task of a job's definition, as one row: what it runs up front.
function taskRow(t, i) {
  const what = t.command ? t.command.join(' ') : t.sql || t.url || t.script || '';
  const rest = Object.assign({}, t);
  for (const k of ['kind', 'name', 'command', 'sql', 'timeout', 'timeout_ms']) delete rest[k];
  return { n: i + 1, kind: t.kind, name: t.name, what, timeout: t.timeout || t.timeout_ms,
    rest: Object.keys(rest).length ? JSON.stringify(rest) : '' };
}
/// Every parameter the job declares (parameter_rules) or gives a default
/// (parameters).
function parameterRows(j) {
  const rules = j.parameter_rules || {}, values = j.parameters || {};
  const names = [...new Set([...Object.keys(rules), ...Object.keys(values)])].sort();
  return names.map(n => ({ name: n, rule: rules[n] === undefined ? '-' : JSON.stringify(rules[n]),
    value: values[n] === undefined ? '-' : JSON.stringify(values[n]) }));
}

/// Trigger with parameters, a time to run at and an idempotency key (POST
/// /api/v1/jobs/{name}/trigger): what `baton ctl jobs trigger` takes.
function triggerForm(j) {
  const params = el('textarea', { id: 'trigger-parameters', rows: 4, cols: 60, spellcheck: 'false' });
  params.value = JSON.stringify(j.parameters || {}, null, 1);
  const at = el('input', { id: 'trigger-run-at', type: 'datetime-local', step: 1 });
  const key = el('input', { id: 'trigger-key', size: 24, placeholder: 'optional' });
  const prio = el('input', { id: 'trigger-priority', type: 'number', size: 6, placeholder: 'job\'s' });
  const go = async (e) => {
    e.preventDefault();
    let parameters;
    try { parameters = JSON.parse(params.value || '{}'); } catch (err) { return show('parameters: not JSON: ' + err.message, false); }
    const body = { parameters };
    if (at.value) body.run_at = new Date(at.value).toISOString();  // the browser's zone, sent as UTC
    if (prio.value !== '') body.priority = Number(prio.value);
    const headers = key.value.trim() ? { 'Idempotency-Key': key.value.trim() } : undefined;
    act('trigger ' + j.name, async () => {
      const r = await api('POST', '/api/v1/jobs/' + encodeURIComponent(j.name) + '/trigger', body, headers);
      if (r && r.created === false) throw new ApiError(200, 'exists', 'the idempotency key names run ' + r.run_id);
      return r;
    });
  };
  return el('form', { id: 'trigger-form', class: 'filters', onsubmit: go },
    el('label', {}, 'Parameters (JSON)', params), el('label', {}, 'Run at (your time; empty: now)', at),
    el('label', {}, 'Idempotency key', key), el('label', {}, 'Priority', prio),
    el('button', { type: 'submit', 'data-action': 'trigger-with' }, 'Trigger'));
}

const runFilters = { job: '', state: '', worker: '', idempotency_key: '', error: '', created_after: '', created_before: '' };
let runCursors = [];   // the cursors of the pages before this one (Newer goes back)
let runCursor = null;  // this page's
let runLimit = 100;
let refreshEvery = 5;
let refreshPaused = false;

async function runs() {
  const q = new URLSearchParams({ limit: String(runLimit) });
  for (const [k, v] of Object.entries(runFilters)) {
    if (!v) continue;
    // Times typed in the browser's zone; the API takes unix seconds.
    q.set(k, k.startsWith('created_') ? String(Math.floor(new Date(v).getTime() / 1000)) : v);
  }
  if (runCursor) q.set('cursor', runCursor);
  const [page, status] = await Promise.all([api('GET', '/api/v1/runs?' + q.toString()), nodeStatus(true)]);
  const refilter = () => { runCursors = []; runCursor = null; render(false); };
  // Every run by state (the node's counts, a few seconds old at most), each
  // a link that filters the list by it.
  const byState = status.runs_by_state || {};
  const stateCounts = el('div', { class: 'filters', id: 'runs-by-state' }, 'All runs by state:',
    ...Object.keys(byState).filter(k => byState[k] > 0).flatMap(k => [' ', el('a', { href: '#/runs', 'data-state': k,
      onclick: (e) => { e.preventDefault(); runFilters.state = k; refilter(); } }, stateCell(k), ' ' + byState[k])]));
  const input = (name, label, attrs = {}) => el('label', {}, label || name, el('input', Object.assign({ name, value: runFilters[name], size: 14,
    onchange: (e) => { runFilters[name] = e.target.value.trim(); refilter(); } }, attrs)));
  const states = ['', 'PENDING', 'ASSIGNED', 'RUNNING', 'RETRY_WAITING', 'ORPHANED', 'SUCCEEDED', 'FAILED', 'TIMED_OUT', 'CANCELED'];
  const stateSel = el('select', { name: 'state', onchange: (e) => { runFilters.state = e.target.value; refilter(); } },
    ...states.map(s => el('option', s === runFilters.state ? { value: s, selected: '' } : { value: s }, s || 'any')));
  const every = el('select', { id: 'refresh-every', onchange: (e) => { refreshEvery = Number(e.target.value); render(false); } },
    ...[0, 2, 5, 10, 30].map(n => el('option', n === refreshEvery ? { value: n, selected: '' } : { value: n }, n ? n + ' s' : 'off')));
  const pause = button(refreshPaused ? 'Resume refresh' : 'Pause refresh', 'refresh-pause',
    () => { refreshPaused = !refreshPaused; render(false); });
  const sizeSel = el('select', { id: 'page-size', onchange: (e) => { runLimit = Number(e.target.value); refilter(); } },
    ...[50, 100, 500].map(n => el('option', n === runLimit ? { value: n, selected: '' } : { value: n }, String(n))));
  // Only the first page refreshes by itself: a page further back stays put
  // while it is read.
  if (refreshEvery && !refreshPaused && !runCursor) timer = setTimeout(() => render(false), refreshEvery * 1000);
  const selected = () => [...document.querySelectorAll('#runs-table input[type=checkbox]:checked')].map(c => Number(c.value));
  const bulk = (verb, ask) => button(verb === 'cancel' ? 'Cancel selected' : 'Re-run selected', verb + '-selected', async () => {
    const ids = selected();
    if (!ids.length) return show('select runs first', false);
    act(verb + ' ' + ids.length + ' run(s)', async () => {
      const failed = [];
      for (const id of ids) {
        try { await api('POST', '/api/v1/runs/' + id + '/' + verb); } catch (e) { failed.push(id + ' (' + (e.code || e.message) + ')'); }
      }
      if (failed.length) throw new ApiError(0, 'partly', (ids.length - failed.length) + ' done; not done: ' + failed.join(', '));
    }, ask && ask(ids));
  }, verb === 'cancel' ? 'small danger' : 'small');
  const pager = el('div', { class: 'pager', id: 'runs-pager' },
    el('button', { type: 'button', class: 'small', 'data-action': 'newer', disabled: runCursors.length || runCursor ? null : '',
      onclick: () => { runCursor = runCursors.pop() || null; render(false); } }, '\u2190 Newer'),
    el('span', { id: 'runs-page-info', text: page.items.length ? 'runs ' + page.items[0].id + ' to ' + page.items[page.items.length - 1].id +
      ' (page ' + (runCursors.length + 1) + ')' : 'no runs' }),
    el('button', { type: 'button', class: 'small', 'data-action': 'older', disabled: page.next_cursor ? null : '',
      onclick: () => { runCursors.push(runCursor); runCursor = page.next_cursor; render(false); } }, 'Older \u2192'));
  return [stateCounts, el('div', { class: 'filters' }, input('job'), el('label', {}, 'state', stateSel), input('worker'),
    input('idempotency_key', 'idempotency key'), input('error', 'error text'),
    input('created_after', 'created after', { type: 'datetime-local', step: 1 }),
    input('created_before', 'created before', { type: 'datetime-local', step: 1 }),
    el('label', {}, 'page size', sizeSel), el('label', {}, 'refresh every', every), pause),
    el('div', { class: 'filters' }, bulk('cancel', ids => 'Cancel ' + ids.length + ' run(s)? Running tasks are killed.'), bulk('rerun')),
    table('runs-table', [['', r => el('input', { type: 'checkbox', value: String(r.id), 'aria-label': 'select run ' + r.id })],
      ['Run', r => runLink(r.id), r => r.id], ['Job', r => r.job], ['State', r => stateCell(r.state), r => r.state],
      ['Attempt', r => r.attempt + '/' + r.max_attempts, r => r.attempt], ['Worker', r => r.worker_id], ['Epoch', r => r.leader_epoch],
      ['Trigger', r => r.trigger_kind], ['Key', r => r.idempotency_key], ['Created', r => when(r.created_at), r => r.created_at],
      ['Age', r => age(r.created_at), r => -Date.parse(r.created_at)], ['Finished', r => when(r.finished_at), r => r.finished_at || ''],
      ['Duration', r => duration(r.duration_ms), r => r.duration_ms === null ? -1 : r.duration_ms],
      ['Error', r => r.error_msg ? (r.error_code || '') + ': ' + r.error_msg : r.error_code]], page.items, 'id', true),
    pager];
}

const terminal = new Set(['SUCCEEDED', 'FAILED', 'TIMED_OUT', 'CANCELED']);

/// What a run was given: its trigger's parameters a row each (the job's
/// defaults fill in the rest), then the rest of its payload and its result
/// as JSON. Text nodes only: a value is shown, never parsed as markup.
function given(r) {
  const payload = r.payload && typeof r.payload === 'object' ? Object.assign({}, r.payload) : {};
  const params = payload.parameters && typeof payload.parameters === 'object' ? payload.parameters : {};
  delete payload.parameters;
  const names = Object.keys(params);
  const json = (v) => { const pre = el('pre', { class: 'logs' }); pre.textContent = JSON.stringify(v, null, 2); return pre; };
  return el('div', { id: 'run-given' },
    names.length ? table('run-parameters', [['Name', n => n], ['Value', n => text(params[n])]], names)
      : el('p', { id: 'run-parameters-none', text: 'none given: the job\'s defaults' }),
    Object.keys(payload).length ? el('div', { id: 'run-payload' }, el('h3', { text: 'Payload' }), json(payload)) : null,
    r.result !== null && r.result !== undefined ? el('div', { id: 'run-result' }, el('h3', { text: 'Result' }), json(r.result)) : null);
}

async function run(id) {
  const r = await api('GET', '/api/v1/runs/' + encodeURIComponent(id));
  const fields = ['job', 'state', 'attempt', 'max_attempts', 'assigned_worker_id', 'leader_epoch', 'continuation_state',
    'trigger_kind', 'rerun_of', 'idempotency_key', 'created_at', 'started_at', 'finished_at', 'duration_ms', 'error_code',
    'error_msg', 'log_ref', 'progress', 'progress_at'];
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
      ['Value', f => f === 'state' ? stateCell(r.state) : f.endsWith('_at') ? when(r[f]) : f === 'duration_ms' ? duration(r[f]) : text(r[f])]], fields),
    actions,
    el('h2', { text: 'Parameters' }), given(r),
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
  const { page, pager } = await pagedGet('workers', '/api/v1/workers');
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
    page.items, 'worker_id', true), pager];
}

let letterStatus = '';
async function deadLetters() {
  const { page, pager, reset } = await pagedGet('letters', '/api/v1/dead-letters' + (letterStatus ? '?status=' + letterStatus : ''));
  const statuses = ['pending', 'acknowledged', 'replayed', 'closed'];
  const filter = el('select', { name: 'status', onchange: (e) => { letterStatus = e.target.value; reset(); render(false); } },
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
    page.items, 'id', true), pager];
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

let eventKind = '';
async function events() {
  const { page, pager, reset } = await pagedGet('events', '/api/v1/events' + (eventKind ? '?kind=' + encodeURIComponent(eventKind) : ''));
  const kind = el('input', { id: 'event-kind', size: 20, placeholder: 'invoice.paid' });
  const payload = el('textarea', { id: 'event-payload', rows: 2, cols: 50, spellcheck: 'false' });
  payload.value = '{}';
  const dedupe = el('input', { id: 'event-dedupe', size: 20, placeholder: 'optional' });
  const post = (e) => {
    e.preventDefault();
    let body;
    try { body = { kind: kind.value.trim(), payload: JSON.parse(payload.value || '{}') }; } catch (err) { return show('payload: not JSON: ' + err.message, false); }
    if (dedupe.value.trim()) body.dedupe_key = dedupe.value.trim();
    act('post event ' + body.kind, async () => {
      const r = await api('POST', '/api/v1/events', body);
      show('event ' + r.event_id + (r.created ? ' posted' : ' already posted with this dedupe key'), true);
      return r;
    });
  };
  return [el('h2', { text: 'Events' }),
    el('p', { class: 'hint', text: 'An event starts every job whose on_events lists its kind; its runs are listed beside it.' }),
    el('form', { id: 'event-form', class: 'filters', onsubmit: post }, el('label', {}, 'Kind', kind), el('label', {}, 'Payload (JSON)', payload),
      el('label', {}, 'Dedupe key', dedupe), el('button', { type: 'submit', 'data-action': 'post-event' }, 'Post event')),
    el('div', { class: 'filters' }, el('label', {}, 'kind', el('input', { name: 'kind', value: eventKind, size: 20,
      onchange: (e) => { eventKind = e.target.value.trim(); reset(); render(false); } }))),
    table('events-table', [['Id', e => e.id], ['Kind', e => e.kind], ['Payload', e => e.payload], ['Dedupe key', e => e.dedupe_key],
      ['By', e => e.created_by], ['Posted', e => when(e.created_at)],
      ['Runs', e => el('span', {}, ...(e.runs || []).map(r => el('span', {}, runLink(r.id), ' ', stateCell(r.state), ' ')))]],
    page.items, 'id', true), pager];
}

async function settings() {
  const all = await api('GET', '/api/v1/settings');
  const rows = Object.entries(all).map(([key, v]) => Object.assign({ key }, v));
  return [el('h2', { text: 'Settings' }),
    el('p', { class: 'hint', text: 'Live settings: a change applies to the whole cluster within seconds and is audited (admin role).' }),
    table('settings-table', [['Setting', r => r.key], ['Value', r => {
      const input = el('input', { 'data-setting': r.key, size: 24, value: JSON.stringify(r.value) });
      return el('span', {}, input, ' ', button('Save', 'save-setting', () => {
        let value;
        try { value = JSON.parse(input.value); } catch (err) { return show(r.key + ': not JSON: ' + err.message, false); }
        act('set ' + r.key, () => api('PUT', '/api/v1/settings/' + encodeURIComponent(r.key), { value }));
      }));
    }], ['Default', r => r.default], ['Type', r => r.type], ['What it does', r => r.effect],
      ['Changed', r => when(r.updated_at)], ['By', r => r.updated_by]], rows, 'key')];
}

let revealedSecret = null;  // { what, secret }: the one the access page shows
/// API tokens and worker enrollment (the admin role): a secret is shown
/// once, when it is made, and never again.
async function access() {
  const [tokens, creds] = await Promise.all([api('GET', '/api/v1/tokens?limit=200'), api('GET', '/api/v1/worker-credentials?limit=200')]);
  // The secret just made is part of the page's state, not a box added to the
  // page after it rendered: any later render (a refresh, another action)
  // would otherwise take it away before it was copied. Leaving the page
  // forgets it.
  const secretBox = el('pre', { id: 'new-secret', class: 'secret' + (revealedSecret ? '' : ' hidden') },
    revealedSecret ? revealedSecret.what + ' (shown once, copy it now):\n' + revealedSecret.secret : null);
  const reveal = (what, secret) => { revealedSecret = { what, secret }; };
  const tName = el('input', { id: 'token-name', size: 16, placeholder: 'ci-deploy' });
  const tRole = el('select', { id: 'token-role' }, ...['read', 'operate', 'admin'].map(r => el('option', { value: r }, r)));
  const tTtl = el('input', { id: 'token-ttl', type: 'number', size: 8, placeholder: 'never expires' });
  const makeToken = async (e) => {
    e.preventDefault();
    const body = { name: tName.value.trim(), role: tRole.value };
    if (tTtl.value) body.ttl_seconds = Number(tTtl.value);
    try {
      const r = await api('POST', '/api/v1/tokens', body);
      reveal('API token ' + r.name + ' (' + r.role + ')', r.token);
      await render(false);
      show('token ' + r.name + ' made', true);
    } catch (err) { show('make token: ' + (err.code ? err.code + ': ' : '') + err.message, false); }
  };
  const wId = el('input', { id: 'enroll-worker', size: 16, placeholder: 'w7' });
  const wCap = el('input', { id: 'enroll-capacity', type: 'number', size: 5, value: '4' });
  const wLabels = el('input', { id: 'enroll-labels', size: 24, placeholder: '{"zone": "a"}' });
  const enroll = async (e) => {
    e.preventDefault();
    let labels = {};
    try { if (wLabels.value.trim()) labels = JSON.parse(wLabels.value); } catch (err) { return show('labels: not JSON: ' + err.message, false); }
    try {
      const r = await api('POST', '/api/v1/workers/' + encodeURIComponent(wId.value.trim()) + '/enrollments', { capacity: Number(wCap.value), labels });
      reveal('Bootstrap token of ' + r.worker_id + ' (its worker.yaml: enrollment_token_file)', r.token);
      await render(false);
      show('enrollment for ' + r.worker_id + ' made', true);
    } catch (err) { show('enroll: ' + (err.code ? err.code + ': ' : '') + err.message, false); }
  };
  return [secretBox, el('h2', { text: 'API tokens' }),
    el('form', { id: 'token-make-form', class: 'filters', onsubmit: makeToken }, el('label', {}, 'Name', tName), el('label', {}, 'Role', tRole),
      el('label', {}, 'Expires after (s)', tTtl), el('button', { type: 'submit', 'data-action': 'make-token' }, 'Make token')),
    table('tokens-table', [['Id', t => t.id], ['Name', t => t.name], ['Role', t => t.role], ['Created', t => when(t.created_at)],
      ['Expires', t => when(t.expires_at)], ['Last used', t => when(t.last_used_at)], ['Revoked', t => when(t.revoked_at)],
      ['', t => t.revoked_at ? '' : button('Revoke', 'revoke-token', () => act('revoke token ' + t.name,
        () => api('POST', '/api/v1/tokens/' + t.id + '/revoke'), 'Revoke token ' + t.name + '? Whoever holds it loses access at once.'), 'small danger')]],
    tokens.items, 'id', true),
    el('h2', { text: 'Worker enrollment' }),
    el('form', { id: 'enroll-form', class: 'filters', onsubmit: enroll }, el('label', {}, 'Worker id', wId), el('label', {}, 'Capacity', wCap),
      el('label', {}, 'Labels (JSON)', wLabels), el('button', { type: 'submit', 'data-action': 'enroll' }, 'Enroll')),
    table('credentials-table', [['Id', c => c.id], ['Kind', c => c.kind], ['Worker', c => c.worker_id], ['Capacity', c => c.capacity],
      ['Labels', c => c.labels], ['Created', c => when(c.created_at)], ['Expires', c => when(c.expires_at)], ['Revoked', c => when(c.revoked_at)],
      ['', c => c.revoked_at || !c.worker_id ? '' : button('Revoke', 'revoke-credential', () => act('revoke ' + c.worker_id,
        () => api('POST', '/api/v1/workers/' + encodeURIComponent(c.worker_id) + '/revoke'),
        'Revoke the credentials of worker ' + c.worker_id + '? It is detached at once.'), 'small danger')]],
    creds.items, 'id', true)];
}

async function audit() {
  const { page, pager } = await pagedGet('audit', '/api/v1/audit');
  return [el('h2', { text: 'Audit log' }),
    table('audit-table', [['At', a => when(a.at), a => a.at], ['Actor', a => a.actor], ['Action', a => a.action], ['Subject', a => a.subject],
      ['Epoch', a => a.epoch], ['Details', a => a.details]], page.items, 'id', true), pager];
}

// --- the history checker's banner ---------------------------------------------------

/// Violations the history checker found in the database's records and no
/// operator acknowledged yet (GET /api/v1/verify?open=true;
/// docs/assurance.md), on every page until acknowledged: each names its
/// invariant, its runs (links) and its evidence.
const banner = document.getElementById('violations');
async function violationBanner() {
  let v;
  try { v = await api('GET', '/api/v1/verify?open=true&limit=5'); } catch (e) { banner.className = 'violations hidden'; return; }
  if (!v.violations_open) { banner.className = 'violations hidden'; banner.replaceChildren(); return; }
  const items = v.violations.map(x => el('li', { 'data-violation': x.id },
    el('strong', { text: x.invariant }), ' ',
    ...x.run_ids.flatMap(r => [el('a', { href: '#/runs/' + r, text: 'run ' + r }), ' ']),
    '- ' + x.evidence + ' (found ' + when(x.found_at) + ' by ' + x.found_by + ', epoch ' + text(x.epoch) + ')'));
  const newest = v.violations.length ? v.violations[0].id : 0;
  banner.replaceChildren(
    el('span', { text: v.violations_open + ' invariant violation' + (v.violations_open === 1 ? '' : 's') +
      ' found by the history checker in the database\'s records, not acknowledged' +
      (v.violations_open > v.violations.length ? ' (the newest ' + v.violations.length + ' below)' : '') + ':' }),
    el('ul', {}, ...items),
    button('Acknowledge', 'acknowledge-violations', () => act('acknowledge violations',
      () => api('POST', '/api/v1/verify/acknowledge', { through_id: newest }),
      'Acknowledge these violations? The banner hides them; /api/v1/verify and the audit log keep them.').then(() => render(false)), 'small danger'));
  banner.className = 'violations';
}

// --- routing ----------------------------------------------------------------------

// Renders overlap (a refresh timer, a hash change, an action's own render),
// and each awaits the API: only the one started last may replace the page,
// or a slow earlier one would put back what a later one replaced.
let renderGeneration = 0;
async function render(clear = true) {
  const generation = ++renderGeneration;
  if (timer) { clearTimeout(timer); timer = null; }
  if (clear) clearMessage();
  const hash = location.hash || '#/';
  const parts = hash.slice(2).split('/');
  const page = parts[0] || 'overview';
  for (const a of document.querySelectorAll('nav a')) a.classList.toggle('active', a.dataset.nav === page);
  try {
    const s = await nodeStatus(true);
    document.getElementById('node-status').textContent =
      'node ' + s.node_id + ' (' + s.role + ') - ' + (leaderNow(s) ? 'leader ' + leaderNow(s) : noLeaderNote(s)) + ' - epoch ' + s.epoch;
    await violationBanner();
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
    else if (page === 'events') content = await events();
    else if (page === 'settings') content = await settings();
    else if (page === 'access') content = await access();
    else content = [el('p', { text: 'No such page.' })];
    if (generation !== renderGeneration) return;
    view.replaceChildren(...content.filter(x => x));
    view.dataset.page = page;
    view.dataset.rendered = String(Date.now());
  } catch (e) {
    if (generation !== renderGeneration) return;
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
document.getElementById('theme-button').addEventListener('click', () => {
  localStorage.setItem('baton_theme', document.documentElement.dataset.theme === 'dark' ? 'light' : 'dark');
  applyTheme();
});
const zoneButton = document.getElementById('zone-button');
zoneButton.textContent = zoneUtc ? 'UTC' : 'Local time';
zoneButton.addEventListener('click', () => {
  zoneUtc = !zoneUtc;
  localStorage.setItem('baton_zone', zoneUtc ? 'utc' : 'local');
  zoneButton.textContent = zoneUtc ? 'UTC' : 'Local time';
  render(false);
});
document.getElementById('token-forget').addEventListener('click', () => {
  token = '';
  sessionStorage.removeItem('baton_token');
  if (tabs) tabs.postMessage({ forget: true });
  render();
});
window.addEventListener('hashchange', () => { revealedSecret = null; render(); });
if (!token) document.getElementById('token-panel').classList.remove('hidden');
render();
