// The live results' worker: it reads a query's /changes stream (NDJSON:
// the schema, the snapshot rows, snapshot_end, then changes, watermarks and
// checkpoints), keeps the ResultSet (rows by key, the filtered and sorted
// view), and answers the page's requests for the rows it shows. Parsing
// thousands of records a second and keeping hundreds of thousands of rows
// ordered happens here, off the page's thread: the page only draws the
// rows in sight. Where the query has no /changes (a sink query, an older
// server) it polls the latest results every second instead.

import { ResultSet, display, type Row } from './resultset';
import type { ToWorker, FromWorker, RowMsg } from './resultsproto';

const set = new ResultSet();
let changesURL = '';
let resultsURL = '';
let mode: 'connecting' | 'changes' | 'polling' = 'connecting';
let changes = 0;
let checkpoint: number | null = null;
let watermark: number | null = null;
let closedBefore: number | null = null;
let problem = '';
let stopped = false;
let abort: AbortController | null = null;
let pollTimer: number | null = null;
let schemaVersion = 0;
let widths: number[] | null = null;

// The page's outstanding request, and what it was last answered.
let want: { first: number; count: number } | null = null;
let answered = { first: -1, count: -1, schema: -1 };
let news = true;
let lastReconcile = 0;
let answerTimer: number | null = null;

const BIG_VIEW = 20_000;
const BIG_VIEW_EVERY_MS = 150;
const RECENT_MS = 400;

function post(m: FromWorker) {
  self.postMessage(m);
}

function setSchema(columns: string[], keyCols: string[]) {
  set.reset(columns, keyCols);
  widths = null;
  schemaVersion++;
  news = true;
}

function applyRecord(rec: Record<string, unknown>, now: number) {
  switch (rec.type) {
    case 'schema': {
      // Every (re)connection starts here, and the snapshot follows.
      const cols = (rec.columns as (string | { name: string })[]).map((c) => (typeof c === 'string' ? c : c.name));
      setSchema(cols, (rec.key_columns ?? []) as string[]);
      set.loading = true;
      break;
    }
    case 'snapshot':
      set.upsert(rec.key as Row, rec.row as Row, 0);
      break;
    case 'snapshot_end':
      set.loading = false;
      break;
    case 'change':
      if (rec.op === 'delete') set.delete(rec.key as Row, null, now);
      else set.upsert(rec.key as Row, rec.row as Row, now);
      changes++;
      break;
    case 'watermark': {
      const w = typeof rec.watermark === 'string' ? Date.parse(rec.watermark) : NaN;
      if (!Number.isNaN(w) && (watermark === null || w > watermark)) watermark = w;
      const c = typeof rec.closed_before === 'string' ? Date.parse(rec.closed_before) : NaN;
      if (!Number.isNaN(c) && (closedBefore === null || c > closedBefore)) closedBefore = c;
      break;
    }
    case 'checkpoint':
      checkpoint = Number(rec.id);
      break;
    case 'lagged':
      problem = 'the console fell behind the change log; reloading the rows';
      break;
    case 'error':
      problem = String(rec.detail ?? rec.title ?? 'error');
      break;
    default:
      return;
  }
  news = true;
}

async function problemText(r: Response): Promise<string> {
  const t = await r.text();
  try {
    const p = JSON.parse(t);
    return `${r.status}: ${p.detail ?? p.title ?? t}`;
  } catch {
    return `${r.status}: ${t.trim() || r.statusText}`;
  }
}

// stream reads /changes until it ends, then (unless stopped) reconnects.
async function stream() {
  while (!stopped && mode !== 'polling') {
    abort = new AbortController();
    let got = false;
    try {
      const r = await fetch(changesURL, { credentials: 'same-origin', headers: { Accept: 'application/x-ndjson' }, signal: abort.signal });
      if (r.status === 401) {
        post({ t: 'auth' });
        return; // the page logs in and starts the worker again
      }
      if (!r.ok || !r.body) {
        if (r.status === 404 || r.status === 409) {
          // No change stream for this query: poll its results.
          problem = '';
          startPolling();
          return;
        }
        problem = `cannot read changes: ${await problemText(r)}`;
      } else {
        mode = 'changes';
        problem = '';
        news = true;
        const reader = r.body.pipeThrough(new TextDecoderStream()).getReader();
        let buf = '';
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          got = true;
          buf += value;
          const now = performance.now();
          let start = 0;
          for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n', start)) {
            const line = buf.slice(start, nl);
            start = nl + 1;
            if (!line) continue;
            try {
              applyRecord(JSON.parse(line), now);
            } catch {
              /* not a record */
            }
          }
          buf = buf.slice(start);
          maybeAnswer();
        }
      }
    } catch (e) {
      if (stopped) return;
      problem = `changes stream: ${e instanceof Error ? e.message : e}`;
    }
    news = true;
    maybeAnswer();
    // The stream ended (a restart, a lagged reader): start over, with a
    // fresh snapshot.
    if (!stopped) await new Promise((r) => setTimeout(r, got ? 200 : 1000));
  }
}

function startPolling() {
  mode = 'polling';
  const tick = async () => {
    try {
      const r = await fetch(resultsURL, { credentials: 'same-origin' });
      if (r.status === 401) {
        post({ t: 'auth' });
        return;
      }
      if (!r.ok) throw new Error(await problemText(r));
      const body = (await r.json()) as { columns: string[]; rows: Row[] };
      replaceAll(body.columns, body.rows);
      problem = '';
    } catch (e) {
      problem = `cannot read results: ${e instanceof Error ? e.message : e}`;
    }
    news = true;
    maybeAnswer();
  };
  tick();
  pollTimer = self.setInterval(tick, 1000);
}

// replaceAll shows a full result set (polling).
function replaceAll(cols: string[], rows: Row[]) {
  if (cols.join('\u0000') !== set.columns.join('\u0000')) setSchema(cols, set.keyCols);
  const now = performance.now();
  const seen = new Set<string>();
  for (const r of rows) {
    const key = JSON.stringify(set.keyCols.length ? set.keyCols.map((k) => r[k]) : Object.values(r));
    seen.add(key);
    const old = set.rows.get(key);
    if (old && !old.dead && JSON.stringify(old.row) === JSON.stringify(r)) continue;
    set.upsert(null, r, now);
  }
  for (const e of set.rows.values()) if (!seen.has(e.key)) set.delete(null, e.row, now);
}

function computeWidths(): number[] {
  const sample: Row[] = [];
  for (const e of set.rows.values()) {
    sample.push(e.row);
    if (sample.length >= 200) break;
  }
  return set.columns.map((c) => {
    let n = c.length + 2;
    for (const r of sample) n = Math.max(n, display(r[c]).length);
    return Math.round(Math.min(Math.max(n * 7.6 + 22, 70), 380));
  });
}

// maybeAnswer answers the page's outstanding request when there is
// something new for it: at once, or, while a big view was re-placed a
// moment ago, a little later.
function maybeAnswer() {
  if (!want || answerTimer !== null) return;
  const moved = want.first !== answered.first || want.count !== answered.count || schemaVersion !== answered.schema;
  if (!moved && !news && !set.pending) return;
  const now = performance.now();
  if (set.pending && set.view.length >= BIG_VIEW && now - lastReconcile < BIG_VIEW_EVERY_MS && !moved) {
    answerTimer = self.setTimeout(() => {
      answerTimer = null;
      maybeAnswer();
    }, BIG_VIEW_EVERY_MS - (now - lastReconcile));
    return;
  }
  answer(now);
}

function answer(now: number) {
  const w = want!;
  want = null;
  if (set.pending) {
    set.reconcile();
    lastReconcile = now;
  }
  news = false;
  if (!widths && set.rows.size > 0) widths = computeWidths();
  const total = set.view.length;
  const first = Math.min(w.first, Math.max(0, total - w.count));
  const rows: RowMsg[] = [];
  for (let i = Math.max(0, first); i < Math.min(total, first + w.count); i++) {
    const e = set.view[i];
    rows.push({
      key: e.key,
      version: e.version,
      updates: e.updates,
      vals: set.columns.map((c) => e.row[c]),
      closed: e.windowEnd !== null && closedBefore !== null && e.windowEnd <= closedBefore,
      dead: e.dead,
      recent: e.changedAt > 0 && now - e.changedAt < RECENT_MS,
    });
  }
  answered = { first: w.first, count: w.count, schema: schemaVersion };
  post({
    t: 'view', schema: schemaVersion, columns: set.columns, keyCols: set.keyCols, widths: widths ?? set.columns.map((c) => Math.round(Math.max((c.length + 2) * 7.6 + 22, 70))),
    first: Math.max(0, first), total, live: set.live, loading: set.loading, filtered: set.filtered, sort: set.sort,
    rows, watermark, mode, changes, checkpoint, problem,
  });
}

self.onmessage = (ev: MessageEvent<ToWorker>) => {
  const m = ev.data;
  switch (m.t) {
    case 'start':
      changesURL = new URL(m.changes, m.base).href;
      resultsURL = new URL(m.results, m.base).href;
      stopped = false;
      if (pollTimer === null && abort === null) stream();
      else if (mode !== 'polling') {
        abort?.abort();
        abort = null;
        stream();
      }
      break;
    case 'want':
      want = { first: m.first, count: m.count };
      maybeAnswer();
      break;
    case 'sort':
      set.setSort({ col: m.col, desc: m.desc });
      news = true;
      maybeAnswer();
      break;
    case 'filter':
      set.setFilter(m.col, m.text);
      news = true;
      maybeAnswer();
      break;
    case 'stop':
      stopped = true;
      abort?.abort();
      if (pollTimer !== null) clearInterval(pollTimer);
      self.close();
      break;
  }
};

// Deleted rows go after a moment.
self.setInterval(() => {
  set.sweep(performance.now());
  if (set.pending) {
    news = true;
    maybeAnswer();
  }
}, 500);
