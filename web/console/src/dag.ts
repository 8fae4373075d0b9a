// The operator graph: stages left to right by depth, each stage's operator
// chain top to bottom, one node per operator with the rows that reached it
// and its stage's backpressure (how full its input queues are).

import type { StageInfo } from './api';
import { s, h, fmtInt, fmtRate, fmtBytes } from './dom';
import { rate } from './rates';

const NODE_W = 250;
const NODE_H = 58;
const GAP_Y = 18;
const STAGE_PAD = 12;
const STAGE_HEAD = 22;
const COL_GAP = 140;
const ROW_GAP = 30;

function fillColor(q: number): string {
  if (q >= 0.9) return '#fde2e1';
  if (q >= 0.5) return '#fff3cd';
  return '#eef6ee';
}

function strokeColor(q: number): string {
  if (q >= 0.9) return '#c62828';
  if (q >= 0.5) return '#b7791f';
  return '#4a7d4e';
}

function truncate(t: string, n: number) {
  return t.length > n ? t.slice(0, n - 1) + '…' : t;
}

export function renderDAG(query: string, stages: StageInfo[], selected: string | null, onSelect: (id: string) => void): HTMLElement {
  const byId = new Map(stages.map((st) => [st.id, st]));
  const depth = new Map<number, number>();
  const depthOf = (id: number): number => {
    if (depth.has(id)) return depth.get(id)!;
    const st = byId.get(id);
    const d = st && st.inputs.length ? 1 + Math.max(...st.inputs.map((e) => depthOf(e.from))) : 0;
    depth.set(id, d);
    return d;
  };
  const cols: StageInfo[][] = [];
  for (const st of stages) (cols[depthOf(st.id)] ??= []).push(st);

  // Place stages: x by column, y stacked within a column.
  const pos = new Map<number, { x: number; y: number; w: number; h: number }>();
  let height = 0;
  cols.forEach((col, c) => {
    let y = 10;
    for (const st of col) {
      const hgt = STAGE_HEAD + STAGE_PAD * 2 + st.operators.length * NODE_H + (st.operators.length - 1) * GAP_Y;
      pos.set(st.id, { x: 10 + c * (NODE_W + STAGE_PAD * 2 + COL_GAP), y, w: NODE_W + STAGE_PAD * 2, h: hgt });
      y += hgt + ROW_GAP;
    }
    height = Math.max(height, y);
  });
  const width = 20 + cols.length * (NODE_W + STAGE_PAD * 2) + (cols.length - 1) * COL_GAP;
  const svg = s('svg', { class: 'dag', id: 'dag', width, height, viewBox: `0 0 ${width} ${height}`, role: 'img', 'aria-label': `operator graph of ${query}` },
    s('defs', {}, s('marker', { id: 'arrow', viewBox: '0 0 10 10', refX: 10, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse' },
      s('path', { d: 'M 0 0 L 10 5 L 0 10 z', fill: '#667' }))));

  const opY = (st: StageInfo, k: number) => pos.get(st.id)!.y + STAGE_HEAD + STAGE_PAD + k * (NODE_H + GAP_Y);

  // Edges between stages: from the producer's last operator to the
  // consumer's first.
  for (const st of stages) {
    const p = pos.get(st.id)!;
    st.inputs.forEach((e) => {
      const from = byId.get(e.from);
      if (!from) return;
      const fp = pos.get(from.id)!;
      const x1 = fp.x + fp.w - STAGE_PAD, y1 = opY(from, from.operators.length - 1) + NODE_H / 2;
      const x2 = p.x + STAGE_PAD, y2 = opY(st, 0) + NODE_H / 2;
      const mx = (x1 + x2) / 2;
      const label = e.partition !== 'hash' ? 'forward' : e.key?.length ? `hash[${e.key.join(',')}]` : 'hash[] (one key: all rows)';
      const r = rate(`edge:${query}:${from.id}`, from.rows_out);
      svg.append(
        s('path', { class: 'dag-edge', d: `M ${x1} ${y1} C ${mx} ${y1}, ${mx} ${y2}, ${x2} ${y2}`, fill: 'none', stroke: '#667', 'stroke-width': 1.5, 'marker-end': 'url(#arrow)' }),
        s('text', { x: mx, y: (y1 + y2) / 2 - 6, 'text-anchor': 'middle', class: 'dag-edge-label' }, label),
        s('text', { x: mx, y: (y1 + y2) / 2 + 12, 'text-anchor': 'middle', class: 'dag-edge-label muted' }, `${fmtInt(from.rows_out)} rows · ${fmtRate(r)}`),
      );
    });
  }

  for (const st of stages) {
    const p = pos.get(st.id)!;
    const q = st.queue_fill ?? 0;
    const g = s('g', { class: 'dag-stage', 'data-stage': st.id });
    g.append(
      s('rect', { x: p.x, y: p.y, width: p.w, height: p.h, rx: 8, fill: '#f7f8fa', stroke: '#c9ced6', 'stroke-dasharray': '4 3' }),
      s('text', { x: p.x + 10, y: p.y + 16, class: 'dag-stage-label' }, `Stage ${st.id} · parallelism ${st.parallelism}`),
      s('text', { x: p.x + p.w - 10, y: p.y + 16, 'text-anchor': 'end', class: 'dag-stage-label', fill: strokeColor(q) },
        st.inputs.length ? `input queues ${Math.round(q * 100)}%` : ''),
    );
    st.operators.forEach((op, k) => {
      const id = `${st.id}.${k}`;
      const x = p.x + STAGE_PAD, y = opY(st, k);
      // Backpressure shows on the operator that reads the queues.
      const bp = k === 0 && st.inputs.length ? q : 0;
      const r = rate(`op:${query}:${id}`, op.rows);
      const node = s('g', { class: `dag-op${selected === id ? ' selected' : ''}`, 'data-op': op.name, 'data-id': id, tabindex: 0 },
        s('title', {}, op.explain),
        s('rect', { x, y, width: NODE_W, height: NODE_H, rx: 6, fill: fillColor(bp), stroke: selected === id ? '#1f5fbf' : strokeColor(bp), 'stroke-width': selected === id ? 2.5 : 1.2 }),
        s('text', { x: x + 10, y: y + 18, class: 'dag-op-name' }, op.name),
        s('text', { x: x + NODE_W - 10, y: y + 18, 'text-anchor': 'end', class: 'dag-op-rows' }, `${fmtInt(op.rows)} rows`),
        s('text', { x: x + NODE_W - 10, y: y + 33, 'text-anchor': 'end', class: 'dag-op-rate muted' },
          op.state_bytes === undefined ? fmtRate(r) : [fmtRate(r), `state ${fmtBytes(op.state_bytes)}`].filter((t) => t !== '–').join(' · ')),
        s('text', { x: x + 10, y: y + 49, class: 'dag-op-explain' }, truncate(op.explain.replace(/^\S+\s*/, ''), 36)),
      );
      node.addEventListener('click', () => onSelect(id));
      g.append(node);
      if (k > 0) {
        const py = opY(st, k - 1) + NODE_H;
        g.append(s('line', { x1: x + NODE_W / 2, y1: py, x2: x + NODE_W / 2, y2: y, stroke: '#667', 'stroke-width': 1.5, 'marker-end': 'url(#arrow)' }));
      }
    });
    svg.append(g);
  }

  const sel = selected ? stages.flatMap((st) => st.operators.map((op, k) => ({ id: `${st.id}.${k}`, op, st }))).find((x) => x.id === selected) : undefined;
  return h('div', { class: 'dag-wrap' },
    h('p', { class: 'muted' }, 'One node per operator, with the rows that reached it. A stage\'s input queues filling up (amber from 50%, red from 90%) means it is what slows the query down: its producers wait. Click an operator for its full EXPLAIN line.'),
    h('div', { class: 'scroll' }, svg),
    sel ? h('pre', { class: 'op-detail', id: 'op-detail' }, `Stage ${sel.st.id}, operator ${sel.id.split('.')[1]}: ${sel.op.explain}\nrows: ${fmtInt(sel.op.rows)}` +
      (sel.op.state_bytes !== undefined ? `\nstate: ${fmtBytes(sel.op.state_bytes)} (an estimate of the heap it takes)` : '')) : null,
  );
}
