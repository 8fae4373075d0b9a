// The operator graph: one box per stage holding its operator chain, one node
// per operator with the rows that reached it and its stage's backpressure
// (how full its input queues are), and one edge per input of a stage (the
// plan's edges: GET /v1/queries/{name} graph.stages[].inputs), from the
// producer's last operator to the consumer's first. ELK (elkjs, its layered
// algorithm, the stages as compound nodes) places the boxes and routes the
// edges around them, top to bottom; the layout is computed once per shape
// of the graph and kept, so the figures refresh without moving anything.
//
// Each inter-stage edge carries data-from and data-to (the stage ids) and
// data-from-op and data-to-op (the operator nodes' data-id), and starts and
// ends on those nodes' boxes.

import type { ELK, ElkNode, ElkExtendedEdge, ElkLabel } from 'elkjs/lib/elk.bundled.js';
import type { StageInfo } from './api';
import { s, h, fmtInt, fmtRate, fmtBytes } from './dom';
import { rate } from './rates';

const NODE_W = 250;
const NODE_H = 58;
const STAGE_HEAD = 24;
const PAD = 12;
const LABEL_W = 180;
const LABEL_H = 30;
const MARGIN = 10;

export interface Box {
  x: number;
  y: number;
  w: number;
  h: number;
}

export interface Layout {
  width: number;
  height: number;
  stages: Map<number, Box>;
  ops: Map<string, Box>; // by "stage.operator"
  // Edges by "from->to" (stage ids): their points, and their label's box.
  edges: Map<string, { points: { x: number; y: number }[]; label: Box | null }>;
  chains: Map<string, { x: number; y: number }[]>; // by "stage.k" (from op k-1 to op k)
}

// ELK is loaded when a graph is first shown (it is most of the bundle).
let elk: Promise<ELK> | null = null;
const layouts = new Map<string, Promise<Layout>>();

// shape is what the layout depends on: the stages, their operator counts
// and their inputs.
function shape(stages: StageInfo[]): string {
  return JSON.stringify(stages.map((st) => [st.id, st.operators.length, st.inputs.map((e) => e.from)]));
}

const opId = (stage: number, k: number) => `${stage}.${k}`;

// layout places the graph with ELK (cached per shape).
export function layout(stages: StageInfo[]): Promise<Layout> {
  const key = shape(stages);
  let p = layouts.get(key);
  if (!p) {
    p = computeLayout(stages);
    layouts.set(key, p);
    p.catch(() => layouts.delete(key));
  }
  return p;
}

async function computeLayout(stages: StageInfo[]): Promise<Layout> {
  const byId = new Map(stages.map((st) => [st.id, st]));
  const graph: ElkNode = {
    id: 'root',
    layoutOptions: {
      'elk.algorithm': 'layered',
      'elk.direction': 'DOWN',
      'elk.hierarchyHandling': 'INCLUDE_CHILDREN',
      'elk.edgeRouting': 'ORTHOGONAL',
      'elk.json.shapeCoords': 'ROOT',
      'elk.json.edgeCoords': 'ROOT',
      'elk.edgeLabels.placement': 'CENTER',
      'elk.layered.spacing.nodeNodeBetweenLayers': '36',
      'elk.layered.spacing.edgeNodeBetweenLayers': '20',
      'elk.spacing.nodeNode': '36',
      'elk.spacing.edgeNode': '24',
      'elk.spacing.edgeEdge': '16',
      'elk.padding': `[top=${MARGIN},left=${MARGIN},bottom=${MARGIN},right=${MARGIN}]`,
    },
    children: stages.map((st) => ({
      id: `s${st.id}`,
      layoutOptions: { 'elk.padding': `[top=${STAGE_HEAD + PAD},left=${PAD},bottom=${PAD},right=${PAD}]`, 'elk.spacing.nodeNode': '20' },
      children: st.operators.map((_, k) => ({ id: opId(st.id, k), width: NODE_W, height: NODE_H })),
      edges: st.operators.slice(1).map((_, k) => ({ id: `c${opId(st.id, k + 1)}`, sources: [opId(st.id, k)], targets: [opId(st.id, k + 1)] })),
    })),
    edges: stages.flatMap((st) =>
      st.inputs
        .filter((e) => byId.has(e.from) && byId.get(e.from)!.operators.length && st.operators.length)
        .map((e): ElkExtendedEdge => ({
          id: `e${e.from}->${st.id}`,
          sources: [opId(e.from, byId.get(e.from)!.operators.length - 1)],
          targets: [opId(st.id, 0)],
          labels: [{ id: `l${e.from}->${st.id}`, text: 'rows', width: LABEL_W, height: LABEL_H }],
        })),
    ),
  };
  elk ??= import('elkjs/lib/elk.bundled.js').then((m) => new m.default());
  const out = await (await elk).layout(graph);
  const box = (n: ElkNode | ElkLabel): Box => ({ x: n.x ?? 0, y: n.y ?? 0, w: n.width ?? 0, h: n.height ?? 0 });
  const pts = (e: ElkExtendedEdge) => e.sections?.length ? [e.sections[0].startPoint, ...(e.sections[0].bendPoints ?? []), e.sections[0].endPoint] : [];
  const l: Layout = { width: out.width ?? 0, height: out.height ?? 0, stages: new Map(), ops: new Map(), edges: new Map(), chains: new Map() };
  for (const sn of out.children ?? []) {
    l.stages.set(Number(sn.id.slice(1)), box(sn));
    for (const op of sn.children ?? []) l.ops.set(op.id, box(op));
    for (const e of sn.edges ?? []) l.chains.set(e.id.slice(1), pts(e));
  }
  for (const e of out.edges ?? []) l.edges.set(e.id.slice(1), { points: pts(e), label: e.labels?.[0] ? box(e.labels[0]) : null });
  return l;
}

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

const path = (p: { x: number; y: number }[]) => p.map((q, i) => `${i ? 'L' : 'M'} ${q.x.toFixed(1)} ${q.y.toFixed(1)}`).join(' ');

export async function renderDAG(query: string, stages: StageInfo[], selected: string | null, onSelect: (id: string) => void): Promise<HTMLElement> {
  const l = await layout(stages);
  const byId = new Map(stages.map((st) => [st.id, st]));
  const width = Math.ceil(l.width), height = Math.ceil(l.height);
  const svg = s('svg', { class: 'dag', id: 'dag', width, height, viewBox: `0 0 ${width} ${height}`, role: 'img', 'aria-label': `operator graph of ${query}` },
    s('defs', {}, s('marker', { id: 'arrow', viewBox: '0 0 10 10', refX: 10, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse' },
      s('path', { d: 'M 0 0 L 10 5 L 0 10 z', fill: '#667' }))));

  for (const st of stages) {
    const p = l.stages.get(st.id);
    if (!p) continue;
    const q = st.queue_fill ?? 0;
    const g = s('g', { class: 'dag-stage', 'data-stage': st.id });
    g.append(
      s('rect', { x: p.x, y: p.y, width: p.w, height: p.h, rx: 8, fill: '#f7f8fa', stroke: '#c9ced6', 'stroke-dasharray': '4 3' }),
      s('text', { x: p.x + 10, y: p.y + 16, class: 'dag-stage-label' }, `Stage ${st.id} · parallelism ${st.parallelism}`),
      s('text', { x: p.x + p.w - 10, y: p.y + 16, 'text-anchor': 'end', class: 'dag-stage-label', fill: strokeColor(q) },
        st.inputs.length ? `input queues ${Math.round(q * 100)}%` : ''),
    );
    st.operators.forEach((op, k) => {
      const id = opId(st.id, k);
      const b = l.ops.get(id)!;
      // Backpressure shows on the operator that reads the queues.
      const bp = k === 0 && st.inputs.length ? q : 0;
      const r = rate(`op:${query}:${id}`, op.rows);
      const node = s('g', { class: `dag-op${selected === id ? ' selected' : ''}`, 'data-op': op.name, 'data-id': id, tabindex: 0 },
        s('title', {}, op.explain),
        s('rect', { class: 'dag-op-box', x: b.x, y: b.y, width: b.w, height: b.h, rx: 6, fill: fillColor(bp), stroke: selected === id ? '#1f5fbf' : strokeColor(bp), 'stroke-width': selected === id ? 2.5 : 1.2 }),
        s('text', { x: b.x + 10, y: b.y + 18, class: 'dag-op-name' }, op.name),
        s('text', { x: b.x + b.w - 10, y: b.y + 18, 'text-anchor': 'end', class: 'dag-op-rows' }, `${fmtInt(op.rows)} rows`),
        s('text', { x: b.x + b.w - 10, y: b.y + 33, 'text-anchor': 'end', class: 'dag-op-rate muted' },
          op.state_bytes === undefined ? fmtRate(r) : [fmtRate(r), `state ${fmtBytes(op.state_bytes)}`].filter((t) => t !== '–').join(' · ')),
        s('text', { x: b.x + 10, y: b.y + 49, class: 'dag-op-explain' }, truncate(op.explain.replace(/^\S+\s*/, ''), 36)),
      );
      node.addEventListener('click', () => onSelect(id));
      node.addEventListener('keydown', (ev) => {
        if ((ev as KeyboardEvent).key === 'Enter') onSelect(id);
      });
      g.append(node);
      const chain = l.chains.get(id);
      if (k > 0 && chain?.length) g.append(s('path', { class: 'dag-chain', d: path(chain), fill: 'none', stroke: '#667', 'stroke-width': 1.5, 'marker-end': 'url(#arrow)' }));
    });
    svg.append(g);
  }

  // Edges last, over the stage boxes.
  for (const st of stages) {
    for (const e of st.inputs) {
      const from = byId.get(e.from);
      const le = l.edges.get(`${e.from}->${st.id}`);
      if (!from || !le || le.points.length < 2) continue;
      const route = e.partition !== 'hash' ? e.partition : e.key?.length ? `hash[${e.key.join(',')}]` : 'hash[] (one key: all rows)';
      // What the edge carries, when it is not plain inserts: upsert[key] or retract.
      const kind = e.kind === 'upsert' ? `upsert[${(e.upsert_key ?? []).join(',')}]` : e.kind === 'retract' ? 'retract' : '';
      const label = kind ? `${route} · ${kind}` : route;
      const r = rate(`edge:${query}:${from.id}`, from.rows_out);
      const g = s('g', { class: 'dag-edge-group' },
        s('path', { class: 'dag-edge', d: path(le.points), fill: 'none', stroke: '#667', 'stroke-width': 1.5, 'marker-end': 'url(#arrow)',
          'data-from': from.id, 'data-to': st.id, 'data-from-op': opId(from.id, from.operators.length - 1), 'data-to-op': opId(st.id, 0) }));
      if (le.label) {
        const lx = le.label.x + 4, ly = le.label.y;
        g.append(
          s('text', { x: lx, y: ly + 12, class: 'dag-edge-label' }, label),
          s('text', { x: lx, y: ly + 26, class: 'dag-edge-label muted' }, `${fmtInt(from.rows_out)} rows · ${fmtRate(r)}`),
        );
      }
      svg.append(g);
    }
  }

  const sel = selected ? stages.flatMap((st) => st.operators.map((op, k) => ({ id: opId(st.id, k), op, st }))).find((x) => x.id === selected) : undefined;
  return h('div', { class: 'dag-wrap' },
    h('p', { class: 'muted' }, 'One node per operator, with the rows that reached it. A stage\'s input queues filling up (amber from 50%, red from 90%) means it is what slows the query down: its producers wait. Click an operator for its full EXPLAIN line.'),
    h('div', { class: 'dag-scroll' }, svg),
    sel ? h('pre', { class: 'op-detail', id: 'op-detail' }, `Stage ${sel.st.id}, operator ${sel.id.split('.')[1]}: ${sel.op.explain}\nrows: ${fmtInt(sel.op.rows)}` +
      (sel.op.state_bytes !== undefined ? `\nstate: ${fmtBytes(sel.op.state_bytes)} (an estimate of the heap it takes)` : '')) : null,
  );
}
