// One query: its state and figures, and tabs for its live results, its
// operator graph, its charts, its checkpoint history and its late rows and
// errors.

import * as api from './api';
import { h, clear, fmtInt, fmtRate, fmtBytes, fmtDuration, stateBadge, dataTable } from './dom';
import { LiveResults } from './results';
import { renderDAG } from './dag';
import { LineChart } from './charts';
import { renderTimeline } from './timeline';
import { rate, lagSeconds } from './rates';
import { deleteButton } from './overview';
import type { Page } from './main';

export const TABS: [string, string][] = [
  ['results', 'Results'],
  ['graph', 'Operator graph'],
  ['metrics', 'Throughput & latency'],
  ['checkpoints', 'Checkpoints'],
  ['problems', 'Late rows & errors'],
  ['sql', 'SQL & plan'],
];

// Samples the console takes itself from the query's counters while the
// server has no /metrics, per query.
const localSamples = new Map<string, api.MetricSample[]>();

function sampleTime(t: number | string): number {
  if (typeof t === 'string') return Date.parse(t);
  return t > 1e12 ? t : t * 1000;
}

export function queryPage(root: HTMLElement, name: string, tab: string, go: (hash: string) => void): Page {
  if (!TABS.some(([id]) => id === tab)) tab = 'results';
  const base = `#/query/${encodeURIComponent(name)}`;
  const header = h('div', { class: 'query-head' });
  const summary = h('div', { class: 'summary', id: 'summary' });
  const progress = h('div', { class: 'progress-box', id: 'progress' });
  const body = h('div', { class: 'tab-body', id: `tab-${tab}` });
  const tabs = h('nav', { class: 'tabs' }, TABS.map(([id, label]) => h('a', { href: `${base}/${id}`, class: id === tab ? 'active' : null, id: `tab-link-${id}` }, label)));
  clear(root, h('section', { class: 'panel' }, header, progress, summary), h('section', { class: 'panel' }, tabs, body));

  let live: LiveResults | null = null;
  if (tab === 'results') {
    live = new LiveResults(name);
    const csvLink = h('a', { class: 'button small', href: api.csvURL(name), download: `${name}.csv`, id: 'download-csv' }, 'Download CSV');
    clear(body, h('div', { class: 'toolbar' }, csvLink, h('span', { class: 'muted' }, 'Rows flash as they change; ✓ marks windows the watermark has closed (final rows).')), live.el);
    live.start();
  }
  let selected: string | null = null;
  let hasServerMetrics = true;
  let lastCheckpoints: api.CheckpointStat[] = [];

  function renderHeader(q: api.QueryInfo) {
    const stop = h('button', { class: 'small' }, q.state === 'stopped' ? 'resume' : 'stop');
    stop.addEventListener('click', async () => {
      stop.setAttribute('disabled', '');
      try {
        await (q.state === 'stopped' ? api.resumeQuery(name) : api.stopQuery(name));
      } finally {
        refresh();
      }
    });
    clear(header,
      h('h1', {}, h('a', { href: '#/' }, 'queries'), ' / ', name, ' ', stateBadge(q.state)),
      h('div', { class: 'actions' }, stop, ' ', deleteButton(name, () => go('#/'))),
      q.error ? h('div', { class: 'banner err', id: 'query-error' }, q.error) : null);
  }

  function renderProgress(q: api.QueryInfo, ts: api.TableInfo[]) {
    const parts: HTMLElement[] = [];
    if (q.restore) {
      const f = q.restore.tasks ? q.restore.tasks_restored / q.restore.tasks : 0;
      parts.push(h('div', { class: 'progress' }, h('label', {}, `restoring state: ${q.restore.tasks_restored} of ${q.restore.tasks} tasks loaded`),
        h('progress', { max: 1, value: f })));
    }
    // Replay: how far each source is behind its table's log end.
    for (const [src, off] of Object.entries(q.offsets ?? {})) {
      const t = ts.find((x) => x.name === src);
      if (!t || t.end_offset === undefined) continue;
      const behind = t.end_offset - off;
      if (q.state === 'restoring' || q.state === 'starting' || behind > 1000) {
        parts.push(h('div', { class: 'progress' }, h('label', {}, `${q.state === 'running' ? 'catching up on' : 'replaying'} ${src}: offset ${fmtInt(off)} of ${fmtInt(t.end_offset)} (${fmtInt(behind)} rows behind)`),
          h('progress', { max: Math.max(t.end_offset, 1), value: off })));
      }
    }
    clear(progress, parts);
  }

  function renderSummary(q: api.QueryInfo, rin: number | null, rout: number | null) {
    const item = (label: string, value: string | Node, title?: string) => h('div', { class: 'item', title: title ?? null }, h('label', {}, label), h('div', { class: 'value' }, value));
    const opt = q.options ?? {};
    clear(summary,
      item('rows in', `${fmtInt(q.counters.rows_in)} · ${fmtRate(rin)}`),
      item('rows out', `${fmtInt(q.counters.rows_out)} · ${fmtRate(rout)}`),
      item('watermark', q.watermark ?? (q.input_ended ? 'input ended' : 'none yet')),
      item('watermark lag', fmtDuration(lagSeconds(q.watermark)), 'wall clock minus the watermark'),
      item('last checkpoint', q.last_checkpoint ? `#${q.last_checkpoint}` + (lastCheckpoints.find((c) => c.status === 'completed') ? ` · ${fmtDuration((Date.now() - Date.parse(lastCheckpoints.find((c) => c.status === 'completed')!.started)) / 1000)} ago` : '') : 'none yet'),
      item('late rows', fmtInt(q.counters.late_rows)),
      item('state', `${fmtInt(q.state_size?.rows)} ${q.state_size?.rows === 1 ? 'row' : 'rows'} · ${fmtBytes(q.state_size?.bytes)}`, 'groups and held join rows, and the heap their state takes (an estimate)'),
      item('emit mode', String(opt.emit_mode ?? '–')),
      item('parallelism', String(opt.parallelism ?? '–')),
      item('sources', Object.entries(q.offsets ?? {}).map(([k, v]) => `${k}@${fmtInt(v)}`).join(', ') || '–'),
    );
  }

  let charts: { thr: LineChart; lag: LineChart; cp: LineChart; queue: LineChart; source: HTMLElement } | null = null;

  async function renderMetrics() {
    let samples: api.MetricSample[] = localSamples.get(name) ?? [];
    let source = 'sampled by the console every second (this server has no /metrics endpoint)';
    if (hasServerMetrics) {
      const m = await api.metrics(name).catch(() => null);
      if (m && Array.isArray(m.samples)) {
        samples = m.samples;
        source = `GET /v1/queries/${name}/metrics, one sample every ${m.interval_ms} ms`;
      } else hasServerMetrics = false;
    }
    if (!charts) {
      charts = {
        thr: new LineChart('chart-throughput', 'Throughput', [{ name: 'rows in/s', color: '#2f6fd0' }, { name: 'rows out/s', color: '#e07b00' }], (v) => fmtRate(v).replace('/s', '')),
        lag: new LineChart('chart-lag', 'Latency: watermark lag (s)', [{ name: 'watermark lag', color: '#8e44ad' }], (v) => fmtDuration(v)),
        cp: new LineChart('chart-checkpoint', 'Checkpoint duration (ms)', [{ name: 'checkpoint', color: '#3b8e4a' }], (v) => `${Math.round(v)}ms`),
        queue: new LineChart('chart-queue', 'Backpressure: fullest input queue', [{ name: 'queue fill', color: '#c62828' }], (v) => `${Math.round(v)}%`, 100),
        source: h('p', { class: 'muted' }),
      };
      clear(body, charts.source, h('div', { class: 'charts' }, charts.thr.el, charts.lag.el, charts.cp.el, charts.queue.el));
    }
    charts.source.textContent = `Last two minutes; ${source}.`;
    const times = samples.map((x) => sampleTime(x.t));
    const col = (f: (x: api.MetricSample) => number | null | undefined) => samples.map((x) => f(x) ?? null);
    charts.thr.update(times, [col((x) => x.rows_in_per_s), col((x) => x.rows_out_per_s)]);
    charts.lag.update(times, [col((x) => x.watermark_lag_s)]);
    charts.cp.update(times, [col((x) => x.checkpoint_ms)]);
    charts.queue.update(times, [col((x) => (x.queue_fill === undefined ? null : x.queue_fill * 100))]);
  }

  function renderProblems(q: api.QueryInfo, cps: api.CheckpointStat[]) {
    const failed = cps.filter((c) => c.status === 'failed');
    const bad = q.recent_bad_records ?? [];
    clear(body,
      q.error ? h('div', { class: 'banner err' }, h('strong', {}, `${q.state}: `), q.error) : h('p', {}, 'The query reports no error.'),
      h('h3', {}, `Late rows: ${fmtInt(q.counters.late_rows)}`),
      h('p', { class: 'muted' }, 'Rows that arrived after their window closed (window end + allowed lateness at or below the watermark); they are counted, not applied. The most recent:'),
      q.recent_late_rows.length ? dataTable(['offset', 'event_time'], q.recent_late_rows, { id: 'late-rows' }) : h('p', { class: 'muted', id: 'late-rows' }, 'none'),
      h('h3', {}, `Bad source records: ${fmtInt(q.counters.bad_records ?? 0)}`),
      bad.length ? h('pre', {}, bad.map((b) => JSON.stringify(b)).join('\n')) : h('p', { class: 'muted' }, 'none'),
      h('h3', {}, `Failed checkpoints: ${failed.length} of the last ${cps.length}`),
      failed.length ? dataTable(['id', 'started', 'error'], failed.map((c) => ({ id: c.id, started: c.started, error: c.error ?? '' }))) : h('p', { class: 'muted' }, 'none'),
      h('h3', {}, 'Sinks'),
      h('pre', {}, JSON.stringify(q.sinks, null, 2)),
    );
  }

  async function refresh() {
    const [q, ts, cps] = await Promise.all([api.query(name), api.tables().catch(() => [] as api.TableInfo[]), api.checkpoints(name).catch(() => [] as api.CheckpointStat[])]);
    lastCheckpoints = cps;
    const rin = rate('qin:' + name, q.counters.rows_in);
    const rout = rate('qout:' + name, q.counters.rows_out);
    const stages = q.graph?.stages ?? [];
    const buf = localSamples.get(name) ?? [];
    const lastCp = cps.find((c) => c.status === 'completed');
    buf.push({ t: Date.now(), rows_in_per_s: rin ?? undefined, rows_out_per_s: rout ?? undefined, watermark_lag_s: lagSeconds(q.watermark),
      checkpoint_ms: lastCp?.duration_ms ?? null, queue_fill: stages.length ? Math.max(...stages.map((st) => st.queue_fill ?? 0)) : 0, state_rows: q.state_size?.rows });
    while (buf.length > 150) buf.shift();
    localSamples.set(name, buf);
    renderHeader(q);
    renderProgress(q, ts);
    renderSummary(q, rin, rout);
    live?.setWatermark(q.watermark);
    switch (tab) {
      case 'graph': {
        if (!stages.length) {
          clear(body, h('p', { class: 'muted' }, 'No plan: the query is not running.'));
          break;
        }
        const onSelect = (id: string) => {
          selected = id;
          refresh();
        };
        const el = await renderDAG(name, stages, selected, onSelect);
        // Keep the graph's scroll position across refreshes.
        const old = body.querySelector('.dag-wrap .dag-scroll');
        const left = old?.scrollLeft ?? 0, top = old?.scrollTop ?? 0;
        clear(body, el);
        if (left || top) el.querySelector('.dag-scroll')?.scrollTo(left, top);
        break;
      }
      case 'metrics':
        await renderMetrics();
        break;
      case 'checkpoints':
        clear(body, renderTimeline(cps));
        break;
      case 'problems':
        renderProblems(q, cps);
        break;
      case 'sql':
        if (!body.firstChild) clear(body, h('h3', {}, 'SQL'), h('pre', { class: 'sql' }, q.sql), h('h3', {}, 'Plan (EXPLAIN)'), h('pre', { class: 'plan' }, q.plan ?? ''),
          h('h3', {}, 'Options'), h('pre', {}, JSON.stringify(q.options ?? {}, null, 2)));
        break;
    }
  }
  return {
    refresh,
    interval: 1000,
    dispose: () => {
      live?.stop();
      if (charts) for (const c of [charts.thr, charts.lag, charts.cp, charts.queue]) c.destroy();
    },
  };
}
