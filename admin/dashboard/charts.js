// The dashboard's charts (docs/dashboard.md, "Charts"), drawn as plain SVG:
// nothing is loaded from outside the node. A chart is a time axis (the
// buckets of GET /api/v1/stats/series), its series as stacked bars or lines,
// and every epoch elected in the window as a marker across it: "the dip at
// 14:02 is the failover to n2, epoch 7". Text goes in with textContent only.
'use strict';

const svgNs = 'http://www.w3.org/2000/svg';

function svgEl(tag, attrs = {}, text) {
  const e = document.createElementNS(svgNs, tag);
  for (const [k, v] of Object.entries(attrs)) if (v !== undefined && v !== null) e.setAttribute(k, String(v));
  if (text !== undefined) e.textContent = text;
  return e;
}

/// The smallest of 1, 2, 5 times a power of ten at or above `v`: an axis
/// top that reads as a round number.
function niceMax(v) {
  if (!(v > 0)) return 1;
  const p = Math.pow(10, Math.floor(Math.log10(v)));
  for (const m of [1, 2, 5, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

function shortNumber(v) {
  if (v >= 1e6) return (v / 1e6).toFixed(v % 1e6 ? 1 : 0) + 'M';
  if (v >= 1e3) return (v / 1e3).toFixed(v % 1e3 ? 1 : 0) + 'k';
  return String(Math.round(v * 10) / 10);
}

/// One chart. `o`: {id, title, unit, kind: 'bars' | 'lines', series:
/// [{key, label, cls, value(bucket)?}], data (a series answer), timeText(ms),
/// max?: a fixed top of the axis (100 for a percentage, so 0 % is not drawn
/// against a 0-1 % axis)}.
function drawChart(o) {
  const W = 640, H = 200, L = 52, R = 10, T = 30, B = 22;
  const t0 = Date.parse(o.data.from), t1 = Date.parse(o.data.to);
  const span = Math.max(1, t1 - t0);
  const x = t => L + (W - L - R) * (t - t0) / span;
  const value = (s, b) => (s.value ? s.value(b) : b[s.key]);
  const buckets = o.data.buckets;
  const tops = buckets.map(b => o.kind === 'bars'
    ? o.series.reduce((sum, s) => sum + (value(s, b) || 0), 0)
    : Math.max(0, ...o.series.map(s => value(s, b) || 0)));
  const max = o.max || niceMax(Math.max(0, ...tops));
  const y = v => H - B - (H - B - T) * v / max;
  const root = svgEl('svg', { viewBox: '0 0 ' + W + ' ' + H, class: 'chart', role: 'img', 'aria-label': o.title });
  for (const f of [0, 0.5, 1]) {
    root.append(svgEl('line', { x1: L, x2: W - R, y1: y(max * f), y2: y(max * f), class: 'grid' }),
      svgEl('text', { x: L - 5, y: y(max * f) + 4, class: 'axis', 'text-anchor': 'end' }, shortNumber(max * f) + (f ? o.unit || '' : '')));
  }
  for (const f of [0, 1 / 3, 2 / 3, 1]) {
    const t = t0 + f * span;
    root.append(svgEl('text', { x: x(t), y: H - 6, class: 'axis', 'text-anchor': f === 0 ? 'start' : f === 1 ? 'end' : 'middle' },
      o.timeText(t)));
  }
  const step = o.data.bucket_seconds * 1000;
  const width = Math.max(1, (W - L - R) * step / span - 1);
  if (o.kind === 'bars') {
    for (const b of buckets) {
      const t = Date.parse(b.at);
      let base = 0;
      for (const s of o.series) {
        const v = value(s, b) || 0;
        if (!v) continue;
        const r = svgEl('rect', { x: x(t), y: y(base + v), width, height: y(base) - y(base + v), class: 'series ' + s.cls });
        r.append(svgEl('title', {}, o.timeText(t) + ': ' + v + ' ' + s.label));
        root.append(r);
        base += v;
      }
    }
  } else {
    for (const s of o.series) {
      // A gap in the data (a bucket with no value) breaks the line.
      let points = [];
      const flush = () => {
        if (points.length === 1) root.append(svgEl('circle', { cx: points[0][0], cy: points[0][1], r: 2, class: 'series ' + s.cls }));
        if (points.length > 1) root.append(svgEl('polyline', { points: points.map(p => p.join(',')).join(' '), class: 'series line ' + s.cls }));
        points = [];
      };
      for (const b of buckets) {
        const v = value(s, b);
        if (v === null || v === undefined) { flush(); continue; }
        points.push([(x(Date.parse(b.at)) + width / 2).toFixed(1), y(v).toFixed(1)]);
      }
      flush();
    }
  }
  // Leader changes: each epoch elected inside the window. Labels alternate
  // between two rows, and sit left of a marker in the chart's right part.
  let nth = 0;
  for (const e of o.data.epochs) {
    const t = Date.parse(e.elected_at);
    if (!(t >= t0 && t <= t1)) continue;
    const g = svgEl('g', { class: 'epoch-marker', 'data-epoch': e.epoch });
    const right = x(t) > W * 0.6;
    g.append(svgEl('line', { x1: x(t), x2: x(t), y1: 4, y2: H - B }),
      svgEl('text', { x: right ? x(t) - 3 : x(t) + 3, y: nth++ % 2 ? 22 : 11, class: 'marker-label',
        'text-anchor': right ? 'end' : 'start' }, 'epoch ' + e.epoch + ' \u2192 ' + e.leader_id),
      svgEl('title', {}, 'epoch ' + e.epoch + ': ' + e.leader_id + ' leads from ' + o.timeText(t) +
        (e.end_reason ? ' (ended: ' + e.end_reason + ')' : '')));
    root.append(g);
  }
  const legend = document.createElement('div');
  legend.className = 'legend';
  for (const s of o.series) {
    const item = document.createElement('span');
    const swatch = document.createElement('i');
    swatch.className = 'swatch ' + s.cls;
    item.append(swatch, document.createTextNode(s.label));
    legend.append(item);
  }
  const title = document.createElement('h3');
  title.textContent = o.title;
  const box = document.createElement('div');
  box.className = 'chart-box';
  box.id = o.id;
  box.append(title, root, legend);
  return box;
}
