// Checkpoint history as a timeline: one bar per checkpoint at its start,
// as long as it took (at least a few pixels), as tall as its size (log
// scale), coloured by status; and the same as a table, with each
// checkpoint's alignment time (how long its slowest task held the barrier
// up: aligning inputs, or an external sink waiting for room).

import type { CheckpointStat } from './api';
import { s, h, fmtBytes, fmtDuration, fmtInt } from './dom';

const COLORS: Record<string, string> = { completed: '#3b8e4a', failed: '#c62828', in_progress: '#2f6fd0' };

export function renderTimeline(cps: CheckpointStat[]): HTMLElement {
  if (cps.length === 0) return h('p', { class: 'muted', id: 'timeline' }, 'No checkpoints yet (the first comes after the checkpoint interval; POST /v1/checkpoints forces one).');
  const W = 900, H = 120, L = 10, R = 10, base = 90;
  const start = (c: CheckpointStat) => Date.parse(c.started);
  const t0 = Math.min(...cps.map(start));
  const t1 = Math.max(...cps.map((c) => start(c) + Math.max(c.duration_ms, 0)), t0 + 1000);
  const X = (t: number) => L + ((t - t0) / (t1 - t0)) * (W - L - R);
  const maxLog = Math.max(...cps.map((c) => Math.log2(1 + c.bytes)), 1);
  const svg = s('svg', { class: 'timeline', width: W, height: H, viewBox: `0 0 ${W} ${H}` },
    s('line', { x1: L, x2: W - R, y1: base, y2: base, stroke: '#aab' }),
    s('text', { x: L, y: H - 8, class: 'axis' }, new Date(t0).toLocaleTimeString()),
    s('text', { x: W - R, y: H - 8, class: 'axis', 'text-anchor': 'end' }, new Date(t1).toLocaleTimeString()));
  for (const c of [...cps].reverse()) {
    const x = X(start(c));
    const w = Math.max(X(start(c) + c.duration_ms) - x, 4);
    const hgt = 10 + (Math.log2(1 + c.bytes) / maxLog) * 60;
    svg.append(s('rect', { class: `cp-entry cp-${c.status}`, 'data-id': c.id, x, y: base - hgt, width: w, height: hgt, rx: 1.5, fill: COLORS[c.status] ?? '#888', opacity: 0.85 },
      s('title', {}, `#${c.id} ${c.status}: ${fmtDuration(c.duration_ms / 1000)} (aligning ${fmtDuration((c.alignment_ms ?? 0) / 1000)}), ${fmtBytes(c.bytes)}${c.error ? ' — ' + c.error : ''}`)));
  }
  const done = cps.filter((c) => c.status === 'completed');
  const avg = done.length ? done.reduce((a, c) => a + c.duration_ms, 0) / done.length : 0;
  return h('div', { id: 'timeline' },
    h('p', { class: 'muted' }, `${cps.length} recent checkpoints: ${done.length} completed, ${cps.filter((c) => c.status === 'failed').length} failed; mean duration ${fmtDuration(avg / 1000)}. Bar width is the duration, height the size written (log scale).`),
    h('div', { class: 'scroll' }, svg),
    h('div', { class: 'legend' }, Object.entries(COLORS).map(([k, v]) => h('span', {}, h('i', { style: `background:${v}` }), k.replace('_', ' ')))),
    h('table', { class: 'data list', id: 'checkpoint-table' },
      h('thead', {}, h('tr', {}, ['id', 'status', 'started', 'duration', 'alignment', 'size', 'offsets', 'error'].map((c) => h('th', {}, c)))),
      h('tbody', {}, cps.map((c) => h('tr', { class: `cp-row cp-${c.status}` },
        h('td', { class: 'num' }, `#${c.id}`),
        h('td', {}, h('span', { class: `badge cp-${c.status}` }, c.status)),
        h('td', {}, new Date(c.started).toLocaleTimeString()),
        h('td', { class: 'num' }, fmtDuration(c.duration_ms / 1000)),
        h('td', { class: 'num' }, fmtDuration((c.alignment_ms ?? 0) / 1000)),
        h('td', { class: 'num' }, fmtBytes(c.bytes)),
        h('td', { class: 'small' }, Object.entries(c.offsets ?? {}).map(([k, v]) => `${k}@${fmtInt(v)}`).join(', ')),
        h('td', { class: 'err small' }, c.error ?? ''),
      )))),
  );
}
