// The landing page: the SQL editor, the tables and the queries.

import * as api from './api';
import { createEditor, type SQLEditor } from './editor';
import { h, clear, fmtInt, fmtRate, fmtDuration, stateBadge, dataTable, csv, download } from './dom';
import { rate, lagSeconds } from './rates';
import type { Page } from './main';

const STORE = 'streamsql.editor';
const START = `-- Ctrl+Enter runs every statement; pick an example above to start.
SHOW TABLES;
`;

let editor: SQLEditor | null = null;
let editorBox: HTMLElement | null = null;
let exampleList: api.Example[] = [];
let exampleTables = '';

function exampleView(name: string) {
  return (name.split('/').pop() ?? name).replace(/[^A-Za-z0-9_]/g, '_');
}

function exampleText(ex: api.Example) {
  return `-- ${ex.title}\n-- The Nexmark tables it reads (created once, generating 1000 events/s):\n${exampleTables};\n\nCREATE VIEW ${exampleView(ex.name)} AS\n${ex.sql};\n`;
}

export function overview(root: HTMLElement, go: (hash: string) => void): Page {
  const status = h('span', { class: 'status', id: 'sql-status' });
  const errorBox = h('div', { class: 'sql-error', id: 'sql-error', hidden: true });
  const output = h('div', { class: 'sql-output', id: 'sql-output' });
  const examplesSel = h('select', { id: 'examples', title: 'Example queries (queries/examples)' }, h('option', { value: '' }, 'Examples…')) as HTMLSelectElement;
  const runBtn = h('button', { id: 'run', class: 'primary', title: 'Run every statement (Ctrl+Enter)' }, 'Run ▶');

  async function run() {
    if (!editor) return;
    const text = editor.text();
    localStorage.setItem(STORE, text);
    editor.clearErrors();
    errorBox.hidden = true;
    clear(output);
    status.textContent = 'running…';
    runBtn.setAttribute('disabled', '');
    const t0 = performance.now();
    try {
      const results = await api.runSQL(text);
      status.textContent = `${results.length} statement${results.length === 1 ? '' : 's'} in ${fmtDuration((performance.now() - t0) / 1000)}`;
      for (const r of results) output.append(statementResult(r));
      refresh();
    } catch (e) {
      status.textContent = '';
      const p = e instanceof api.APIError ? e.problem : { status: 0, title: 'error', detail: String(e) };
      const where = p.line ? `line ${p.line}, column ${p.column}` : p.statement !== undefined ? `statement ${p.statement}` : '';
      clear(errorBox, h('strong', {}, p.title), where ? h('span', { class: 'where' }, ` at ${where}`) : null, h('div', {}, p.detail));
      errorBox.hidden = false;
      if (p.line) editor.markError(p.line, p.column ?? 1, p.detail);
      if (p.statement !== undefined && p.statement > 0) refresh(); // earlier statements were applied
    } finally {
      runBtn.removeAttribute('disabled');
    }
  }
  runBtn.addEventListener('click', run);
  examplesSel.addEventListener('change', () => {
    const ex = exampleList.find((e) => e.name === examplesSel.value);
    if (ex && editor) {
      editor.set(exampleText(ex));
      editor.view.focus();
    }
    examplesSel.value = '';
  });
  for (const ex of exampleList) examplesSel.append(h('option', { value: ex.name, title: ex.title }, ex.name));
  if (exampleList.length === 0) {
    api.examples().then((r) => {
      if (!r) return;
      exampleList = r.examples;
      exampleTables = r.tables_sql;
      for (const ex of exampleList) examplesSel.append(h('option', { value: ex.name, title: ex.title }, ex.name));
    }, () => {});
  }

  if (!editorBox) {
    editorBox = h('div', { class: 'editor', id: 'editor' });
    editor = createEditor(editorBox, localStorage.getItem(STORE) ?? START, () => run(), () => ({}));
  }
  const tablesBox = h('div', { id: 'tables' }, h('p', { class: 'muted' }, 'loading…'));
  const queriesBox = h('div', { id: 'queries' }, h('p', { class: 'muted' }, 'loading…'));
  clear(
    root,
    h(
      'section',
      { class: 'panel' },
      h('div', { class: 'toolbar' }, h('h2', {}, 'SQL'), runBtn, examplesSel, status),
      editorBox,
      errorBox,
      output,
    ),
    h('section', { class: 'panel' }, h('h2', {}, 'Queries'), queriesBox),
    h('section', { class: 'panel' }, h('h2', {}, 'Tables'), tablesBox),
  );

  async function refresh() {
    const [ts, qs] = await Promise.all([api.tables(), api.queries()]);
    clear(tablesBox, ts.length ? tablesTable(ts) : h('p', { class: 'muted' }, 'No tables yet: CREATE TABLE … ENGINE=http.'));
    clear(queriesBox, qs.length ? queriesTable(qs, go, refresh) : h('p', { class: 'muted' }, 'No queries yet: CREATE VIEW v AS SELECT …'));
  }
  return { refresh, interval: 1000 };
}

function statementResult(r: api.StatementResult): HTMLElement {
  const head = h('div', { class: 'stmt-head' }, `#${r.statement} ${r.kind.replace(/_/g, ' ')}`, r.name ? ' ' : null,
    r.name && (r.kind === 'create_view' || r.kind === 'insert') ? h('a', { href: `#/query/${encodeURIComponent(r.name)}` }, r.name) : r.name ?? null);
  if (!r.columns) return h('div', { class: 'stmt' }, head);
  const cols = r.columns;
  const rows = r.rows ?? [];
  const dl = h('button', { class: 'small download-csv' }, 'Download CSV');
  dl.addEventListener('click', () => download(`statement-${r.statement}.csv`, csv(cols, rows)));
  return h('div', { class: 'stmt' }, h('div', { class: 'stmt-head' }, head, ` — ${rows.length} row${rows.length === 1 ? '' : 's'} `, dl),
    h('div', { class: 'scroll' }, dataTable(cols, rows, { class: 'data pull-result' })));
}

function tablesTable(ts: api.TableInfo[]): HTMLElement {
  return h('table', { class: 'data list' },
    h('thead', {}, h('tr', {}, ['table', 'engine', 'schema', 'end offset', 'ingest rate', 'watermark (per query)'].map((c) => h('th', {}, c)))),
    h('tbody', {}, ts.map((t) => {
      const r = rate('table:' + t.name, t.end_offset);
      const wms = Object.entries(t.watermarks ?? {});
      const lost = (t.lost ?? []).map((l) => `offsets ${fmtInt(l.from)} to ${fmtInt(l.to - 1)} (${fmtInt(l.rows)} rows): ${l.cause}`).join('\n');
      return h('tr', { 'data-table': t.name },
        h('td', { class: 'name' }, t.name, t.state === 'corrupt'
          ? [' ', h('span', { class: 'badge state-failed table-corrupt', title: lost }, `corrupt: ${fmtInt(t.lost_rows)} acknowledged rows lost`)] : null),
        h('td', {}, t.engine),
        h('td', { class: 'schema' }, t.columns.map((c, i) => [i ? ', ' : '', h('span', { class: c.name === t.event_time ? 'evtime' : null, title: c.name === t.event_time ? 'event time' : null }, c.name), ' ', h('span', { class: 'type' }, c.type + (c.nullable ? '' : ' NOT NULL'))]),
          t.primary_key?.length ? h('div', { class: 'muted' }, `PRIMARY KEY (${t.primary_key.join(', ')})`) : null),
        h('td', { class: 'num' }, t.end_offset === undefined ? '–' : fmtInt(t.end_offset)),
        h('td', { class: 'num' }, t.end_offset === undefined ? '–' : fmtRate(r)),
        h('td', {}, wms.length ? wms.map(([q, w]) => h('div', {}, `${q}: ${w ?? 'none yet'}`)) : '–'),
      );
    })));
}

function queriesTable(qs: api.QueryInfo[], go: (hash: string) => void, refresh: () => void): HTMLElement {
  return h('table', { class: 'data list' },
    h('thead', {}, h('tr', {}, ['query', 'state', 'rows in', 'rows out', 'watermark', 'watermark lag', 'last checkpoint', 'late rows', ''].map((c) => h('th', {}, c)))),
    h('tbody', {}, qs.map((q) => {
      const rin = rate('in:' + q.name, q.counters.rows_in);
      const rout = rate('out:' + q.name, q.counters.rows_out);
      const link = `#/query/${encodeURIComponent(q.name)}`;
      return h('tr', { 'data-query': q.name },
        h('td', { class: 'name' }, h('a', { href: link }, q.name)),
        h('td', {}, stateBadge(q.state), q.restore ? h('span', { class: 'muted' }, ` ${q.restore.tasks_restored}/${q.restore.tasks} tasks`) : null,
          q.error ? h('div', { class: 'err small' }, q.error) : null),
        h('td', { class: 'num' }, fmtInt(q.counters.rows_in), h('div', { class: 'muted' }, fmtRate(rin))),
        h('td', { class: 'num' }, fmtInt(q.counters.rows_out), h('div', { class: 'muted' }, fmtRate(rout))),
        h('td', {}, q.watermark ?? '–'),
        h('td', { class: 'num' }, fmtDuration(lagSeconds(q.watermark))),
        h('td', { class: 'num' }, q.last_checkpoint ? `#${q.last_checkpoint}` : '–'),
        h('td', { class: 'num' }, fmtInt(q.counters.late_rows)),
        h('td', {}, deleteButton(q.name, () => refresh()), ' ', h('button', { class: 'small', onclick: () => go(link) }, 'open')),
      );
    })));
}

// armed: queries whose delete button was clicked once, until when (the
// lists are rebuilt every second, so the state lives here).
const armed = new Map<string, number>();

// deleteButton asks once more before dropping a query with its state.
export function deleteButton(name: string, done: () => void): HTMLElement {
  const isArmed = () => (armed.get(name) ?? 0) > Date.now();
  const b = h('button', { class: 'small danger delete-query', title: `DELETE /v1/queries/${name}: stop and drop it with its state and results` },
    isArmed() ? 'really delete?' : 'delete');
  b.addEventListener('click', async () => {
    if (!isArmed()) {
      armed.set(name, Date.now() + 5000);
      b.textContent = 'really delete?';
      return;
    }
    armed.delete(name);
    b.setAttribute('disabled', '');
    try {
      await api.dropQuery(name);
      done();
    } catch (e) {
      b.textContent = 'failed';
      b.title = String(e);
    }
  });
  return b;
}
