// Drives the web console in Debian's chromium (playwright-core, never a
// downloaded browser) against a real server; run by e2e/console_test.go.
//
// Environment: BASE_URL (http://127.0.0.1:port), TOKEN (the server's
// --token), SHOTS (the directory for screenshots), CHROMIUM (the browser).
// Prints one line per step; exits 1 at the first failed check.

import { chromium } from 'playwright-core';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const BASE = process.env.BASE_URL;
const TOKEN = process.env.TOKEN ?? '';
const SHOTS = process.env.SHOTS;
const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
if (!BASE || !SHOTS) {
  console.error('BASE_URL and SHOTS must be set');
  process.exit(2);
}
mkdirSync(SHOTS, { recursive: true });

const VIEW = 'clicks_per_page';
const T = (s) => `2024-01-01T00:00:${String(s).padStart(2, '0')}.000Z`;

// api calls the server directly, as a client would (bearer token).
async function api(method, path, body, type) {
  const headers = TOKEN ? { Authorization: `Bearer ${TOKEN}` } : {};
  if (type) headers['Content-Type'] = type;
  const r = await fetch(BASE + path, { method, headers, body });
  const text = await r.text();
  if (!r.ok) throw new Error(`${method} ${path}: ${r.status} ${text}`);
  return text ? JSON.parse(text) : null;
}
const ingest = (rows) => api('POST', '/v1/tables/clicks/rows', rows.map((r) => JSON.stringify(r)).join('\n'), 'application/x-ndjson');

function check(cond, msg) {
  if (!cond) throw new Error(msg);
}

let page;
let shot = 0;
async function screenshot(name) {
  const file = join(SHOTS, `${String(++shot).padStart(2, '0')}-${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  console.log(`  screenshot ${file}`);
}

async function step(name, fn) {
  const t0 = Date.now();
  try {
    await fn();
    console.log(`ok   ${name} (${Date.now() - t0} ms)`);
  } catch (e) {
    console.log(`FAIL ${name} (${Date.now() - t0} ms): ${e.message}`);
    try {
      await page.screenshot({ path: join(SHOTS, `FAILED-${name.replace(/\W+/g, '-')}.png`), fullPage: true });
    } catch {
      /* the page is gone */
    }
    throw e;
  }
}

// typeSQL replaces the editor's text.
async function typeSQL(sql) {
  await page.click('.cm-content');
  await page.keyboard.press('Control+A');
  await page.keyboard.press('Delete');
  await page.keyboard.insertText(sql);
  const got = await page.evaluate(() => document.querySelector('.cm-content').innerText);
  check(got.replace(/\s+/g, ' ').trim() === sql.replace(/\s+/g, ' ').trim(), `the editor holds ${JSON.stringify(got)}, want ${JSON.stringify(sql)}`);
}

async function runSQL() {
  await page.click('#run');
  await page.waitForFunction(() => !document.querySelector('#run').hasAttribute('disabled'));
}

// liveRows reads the live results table as objects.
const liveRows = () =>
  page.evaluate(() => {
    const t = document.querySelector('#results-table');
    if (!t) return [];
    const cols = [...t.querySelectorAll('thead th')].map((th) => th.textContent);
    return [...t.querySelectorAll('tbody tr')].map((tr) => {
      const o = { _closed: tr.classList.contains('closed'), _updates: Number(tr.dataset.updates ?? 0), _deleted: tr.classList.contains('deleted') };
      [...tr.children].forEach((td, i) => cols[i] && (o[cols[i]] = td.textContent));
      return o;
    });
  });

async function waitRows(pred, what, timeout = 15000) {
  const deadline = Date.now() + timeout;
  let rows = [];
  while (Date.now() < deadline) {
    rows = (await liveRows()).filter((r) => !r._deleted);
    if (pred(rows)) return rows;
    await page.waitForTimeout(150);
  }
  throw new Error(`${what}: the results table shows ${JSON.stringify(rows)}`);
}

const browser = await chromium.launch({
  executablePath: CHROMIUM,
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
    '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'],
});
const failures = [];
try {
  const context = await browser.newContext({ acceptDownloads: true, viewport: { width: 1400, height: 900 } });
  page = await context.newPage();
  page.setDefaultTimeout(15000);
  page.on('pageerror', (e) => failures.push(`page error: ${e.message}`));
  // The server's Content-Security-Policy must not block anything the console does.
  page.on('console', (m) => {
    if (m.type() === 'error' && /Content Security Policy/i.test(m.text())) failures.push(`CSP violation: ${m.text()}`);
  });
  page.on('request', (r) => {
    const u = r.url();
    if (!u.startsWith(BASE) && !u.startsWith('data:') && !u.startsWith('blob:')) failures.push(`request outside the server (the console must work offline): ${u}`);
  });

  await step('login', async () => {
    await page.goto(BASE + '/');
    if (!TOKEN) return;
    await page.waitForSelector('#login');
    await screenshot('login');
    await page.fill('#token', 'not-the-token');
    await page.press('#token', 'Enter');
    await page.waitForFunction(() => document.querySelector('#login-error')?.textContent.includes('Wrong token'));
    await page.fill('#token', TOKEN);
    await page.press('#token', 'Enter');
    await page.waitForSelector('#login', { state: 'detached' });
    const cookies = await context.cookies();
    const c = cookies.find((x) => x.name === 'streamsql_session');
    check(c && c.httpOnly && c.sameSite === 'Strict', `session cookie: ${JSON.stringify(cookies)}`);
  });

  await step('overview', async () => {
    await page.waitForSelector('#tables');
    await page.waitForSelector('.cm-editor');
    await page.waitForFunction(() => !document.querySelector('#queries')?.textContent.includes('loading'));
    await screenshot('overview-empty');
  });

  await step('create a table and a view from the editor', async () => {
    await typeSQL(`CREATE TABLE clicks (user_id BIGINT NOT NULL, page VARCHAR(32), ts TIMESTAMP(3) NOT NULL)
  ENGINE=http ENGINE_ATTRIBUTE='{"event_time": "ts", "watermark_delay": "0s"}';
CREATE VIEW ${VIEW} AS
  SELECT window_start, window_end, page, COUNT(*) AS clicks
  FROM clicks GROUP BY TUMBLE(ts, '10s'), page;`);
    await runSQL();
    const out = await page.textContent('#sql-output');
    check(out.includes('create table') && out.includes('create view'), `statement results: ${out}`);
    await page.waitForSelector(`#queries tr[data-query="${VIEW}"]`);
    await page.waitForSelector('#tables tr[data-table="clicks"]');
    await page.waitForFunction((v) => document.querySelector(`#queries tr[data-query="${v}"] .badge`)?.textContent === 'running', VIEW);
    await screenshot('overview-created');
  });

  await step('live results update as rows are ingested', async () => {
    await page.click(`#queries tr[data-query="${VIEW}"] a`);
    await page.waitForSelector('#results-table');
    await ingest([{ user_id: 1, page: 'a', ts: T(1) }, { user_id: 2, page: 'a', ts: T(2) }, { user_id: 3, page: 'b', ts: T(3) }]);
    let rows = await waitRows((rs) => rs.some((r) => r.page === 'a' && r.clicks === '2') && rs.some((r) => r.page === 'b' && r.clicks === '1'), 'after the first rows');
    const before = rows.find((r) => r.page === 'a')._updates;
    await ingest([{ user_id: 4, page: 'a', ts: T(4) }]);
    rows = await waitRows((rs) => rs.some((r) => r.page === 'a' && r.clicks === '3'), 'after a third row for page a');
    const a = rows.find((r) => r.page === 'a');
    check(a._updates > before, `row a was not highlighted as updated (${before} -> ${a._updates})`);
    check(rows.length === 2, `want 2 rows, got ${JSON.stringify(rows)}`);
    await screenshot('results-live');
    // A row 25 s in moves the watermark past the first window's end.
    await ingest([{ user_id: 5, page: 'c', ts: T(25) }]);
    rows = await waitRows((rs) => rs.filter((r) => r._closed).length === 2 && rs.some((r) => r.page === 'c'), 'window [0s, 10s) closing');
    check(!rows.find((r) => r.page === 'c')._closed, 'the open window is shown closed');
    await screenshot('results-window-closed');
  });

  await step('download the results as CSV', async () => {
    const [dl] = await Promise.all([page.waitForEvent('download'), page.click('#download-csv')]);
    const text = readFileSync(await dl.path(), 'utf8');
    const lines = text.trim().split('\n');
    check(lines[0].trim() === 'window_start,window_end,page,clicks' && lines.length === 4, `CSV: ${text}`);
  });

  await step('operator graph', async () => {
    const q = await api('GET', `/v1/queries/${VIEW}`);
    const ops = q.graph.stages.flatMap((s) => s.operators);
    await page.click('#tab-link-graph');
    await page.waitForSelector('#dag');
    const n = await page.locator('#dag .dag-op').count();
    check(n === ops.length, `the graph has ${n} operator nodes, the plan ${ops.length}`);
    const names = await page.locator('#dag .dag-op').evaluateAll((els) => els.map((e) => e.dataset.op));
    check(JSON.stringify(names) === JSON.stringify(ops.map((o) => o.name)), `nodes ${names}, plan ${ops.map((o) => o.name)}`);
    await page.waitForFunction(() => document.querySelector('#dag .dag-op[data-op="Source"] .dag-op-rows')?.textContent === '5 rows');
    await page.locator('#dag .dag-op[data-op="Aggregate"]').click();
    await page.waitForFunction(() => document.querySelector('#op-detail')?.textContent.includes('Aggregate window=TUMBLE'));
    // The aggregation's state, as the API estimates it, on its node and in its detail.
    const agg = ops.find((o) => o.name === 'Aggregate');
    check(agg.state_bytes > 0, `the Aggregate's state_bytes in the API: ${agg.state_bytes}`);
    await page.waitForFunction(() => /state \d/.test(document.querySelector('#dag .dag-op[data-op="Aggregate"] .dag-op-rate')?.textContent ?? ''));
    await page.waitForFunction(() => /state: \d/.test(document.querySelector('#op-detail')?.textContent ?? ''));
    await screenshot('graph');
  });

  await step('checkpoint timeline', async () => {
    await api('POST', '/v1/checkpoints');
    const cps = (await api('GET', `/v1/queries/${VIEW}/checkpoints`)).checkpoints;
    check(cps.length > 0, 'no checkpoints from the API');
    await page.click('#tab-link-checkpoints');
    await page.waitForSelector('#timeline .cp-entry');
    const entries = await page.locator('#timeline .cp-entry.cp-completed').count();
    const rows = await page.locator('#checkpoint-table .cp-row').count();
    check(entries >= 1 && rows >= cps.length, `timeline: ${entries} completed bars, ${rows} table rows; the API has ${cps.length}`);
    await screenshot('checkpoints');
  });

  await step('throughput and latency charts', async () => {
    await page.click('#tab-link-metrics');
    await page.waitForSelector('#chart-throughput');
    await page.waitForFunction(() => Number(document.querySelector('#chart-throughput')?.dataset.points) > 0, null, { timeout: 10000 });
    await screenshot('metrics');
  });

  await step('late rows', async () => {
    await ingest([{ user_id: 6, page: 'a', ts: T(2) }]); // window [0s, 10s) is closed
    await page.click('#tab-link-problems');
    await page.waitForSelector('#late-rows tbody tr', { timeout: 10000 });
    const text = await page.textContent('#late-rows');
    check(text.includes(T(2)), `late rows table: ${text}`);
    await screenshot('late-rows');
  });

  await step('SQL error marked at its line and column', async () => {
    await page.click('header a.brand');
    await page.waitForSelector('.cm-editor');
    await typeSQL(`SHOW TABLES;\nSELECT page,\n  nosuch FROM ${VIEW};`);
    await runSQL();
    await page.waitForSelector('#sql-error:not([hidden])');
    const where = await page.textContent('#sql-error');
    check(where.includes('line 3, column 3') && where.includes('unknown column nosuch'), `error box: ${where}`);
    const mark = await page.evaluate(() => {
      const m = document.querySelector('.cm-content .cm-lintRange-error');
      if (!m) return null;
      const lines = [...document.querySelectorAll('.cm-content .cm-line')];
      return { line: lines.indexOf(m.closest('.cm-line')) + 1, text: m.textContent };
    });
    check(mark && mark.line === 3 && mark.text === 'nosuch', `error marker: ${JSON.stringify(mark)}`);
    check((await page.locator('.cm-gutter-lint .cm-lint-marker-error').count()) === 1, 'no error marker in the gutter');
    await screenshot('sql-error');
  });

  await step('pull query', async () => {
    await typeSQL(`SELECT page, clicks FROM ${VIEW} ORDER BY clicks DESC`);
    await runSQL();
    await page.waitForSelector('.pull-result');
    const cells = await page.locator('.pull-result tbody tr:first-child td').allTextContents();
    check(cells[0] === 'a' && cells[1] === '3', `first row of the pull query: ${cells}`);
    await screenshot('pull-query');
  });

  await step('examples', async () => {
    await page.waitForFunction(() => document.querySelectorAll('#examples option').length > 1);
    await page.selectOption('#examples', 'nexmark/q5');
    const text = await page.evaluate(() => document.querySelector('.cm-content').innerText);
    check(text.includes('CREATE VIEW q5 AS') && text.includes('CREATE TABLE IF NOT EXISTS bid'), `editor after picking q5: ${text.slice(0, 300)}`);
    await screenshot('example');
  });

  await step('delete the query', async () => {
    await page.click(`#queries tr[data-query="${VIEW}"] a`);
    await page.waitForSelector('.query-head .delete-query');
    await page.click('.query-head .delete-query');
    await page.click('.query-head .delete-query');
    await page.waitForFunction(() => location.hash === '#/');
    await page.waitForFunction((v) => !document.querySelector(`#queries tr[data-query="${v}"]`) && !document.querySelector('#queries')?.textContent.includes('loading'), VIEW);
    const qs = (await api('GET', '/v1/queries')).queries;
    check(!qs.some((q) => q.name === VIEW), 'the query is still there');
    await screenshot('deleted');
  });
  if (failures.length) throw new Error(failures.join('\n'));
  console.log('console: all steps passed');
} catch (e) {
  console.error(e.stack ?? String(e));
  if (failures.length) console.error(failures.join('\n'));
  process.exitCode = 1;
} finally {
  await browser.close();
}
