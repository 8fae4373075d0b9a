// Drives the web console in Debian's chromium (playwright-core, never a
// downloaded browser) against a real server; run by e2e/console_test.go.
//
// Environment: BASE_URL (http://127.0.0.1:port), TOKEN (the server's
// --token), DEMO_URL (a second server started with --demo and no token),
// SHOTS (the directory for screenshots), CHROMIUM (the browser). Prints one
// line per step, with the figures it measured; exits 1 at the first failed
// check.

import { chromium } from 'playwright-core';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const BASE = process.env.BASE_URL;
const TOKEN = process.env.TOKEN ?? '';
const DEMO = process.env.DEMO_URL;
const SHOTS = process.env.SHOTS;
const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
if (!BASE || !SHOTS || !DEMO) {
  console.error('BASE_URL, DEMO_URL and SHOTS must be set');
  process.exit(2);
}
mkdirSync(SHOTS, { recursive: true });

const VIEW = 'clicks_per_page';
const T = (s) => `2024-01-01T00:00:${String(s).padStart(2, '0')}.000Z`;

// api calls the server directly, as a client would (bearer token).
async function api(method, path, body, type, base = BASE) {
  const headers = TOKEN && base === BASE ? { Authorization: `Bearer ${TOKEN}` } : {};
  if (type) headers['Content-Type'] = type;
  const r = await fetch(base + path, { method, headers, body });
  const text = await r.text();
  if (!r.ok) throw new Error(`${method} ${path}: ${r.status} ${text}`);
  return text ? JSON.parse(text) : null;
}
const ingestInto = (table, rows) => api('POST', `/v1/tables/${table}/rows`, rows.map((r) => JSON.stringify(r)).join('\n'), 'application/x-ndjson');
const ingest = (rows) => ingestInto('clicks', rows);
const sql = (text) => api('POST', '/v1/sql', text, 'application/sql');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const fmt = (n) => Math.round(n).toLocaleString('en-US');

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

// liveRows reads the rows the live results table holds (those in sight and
// a margin: it is virtualized) as objects, by column name.
const liveRows = () =>
  page.evaluate(() => {
    const t = document.querySelector('#results-table');
    if (!t) return [];
    const cols = [...t.querySelectorAll('thead th')].map((th) => th.textContent);
    return [...t.querySelectorAll('tbody tr:not(.spacer)')].map((tr) => {
      const o = { _closed: tr.classList.contains('closed'), _updates: Number(tr.dataset.updates ?? 0), _deleted: tr.classList.contains('deleted'),
        _index: Number(tr.getAttribute('aria-rowindex')) };
      [...tr.children].forEach((td, i) => cols[i] && (o[cols[i]] = td.textContent));
      return o;
    });
  });

// tableCount is the number of rows the results table has (aria-rowcount
// less the header row).
const tableCount = () => page.evaluate(() => Number(document.querySelector('#results-table')?.getAttribute('aria-rowcount') ?? 1) - 1);

// allTableRows scrolls through the results table from the top and returns
// every row it has, in its order.
async function allTableRows() {
  const byIndex = new Map();
  await page.evaluate(() => (document.querySelector('#results-scroll').scrollTop = 0));
  for (let step = 0; step < 5000; step++) {
    // Wait until the rows in sight are drawn: indexes lo..hi (aria-rowindex
    // counts the header row as 1).
    const span = await page.waitForFunction(() => {
      const sc = document.querySelector('#results-scroll');
      const t = document.querySelector('#results-table');
      const total = Number(t.getAttribute('aria-rowcount')) - 1;
      if (total === 0) return { lo: 0, hi: -1, total };
      const trs = [...t.querySelectorAll('tbody tr:not(.spacer)')];
      if (!trs.length) return false;
      const rowH = trs[0].getBoundingClientRect().height;
      const head = t.tHead.getBoundingClientRect().height;
      const lo = Math.max(0, Math.floor((sc.scrollTop) / rowH));
      const hi = Math.min(total - 1, Math.floor((sc.scrollTop + sc.clientHeight - head - 1) / rowH));
      const have = new Set(trs.map((tr) => Number(tr.getAttribute('aria-rowindex')) - 2));
      for (let i = lo; i <= hi; i++) if (!have.has(i)) return false;
      return { lo, hi, total };
    }, null, { timeout: 10000 }).then((x) => x.jsonValue());
    for (const r of await liveRows()) byIndex.set(r._index - 2, r);
    if (span.hi >= span.total - 1) {
      const out = [];
      for (let i = 0; i < span.total; i++) {
        if (!byIndex.has(i)) throw new Error(`scrolling through the results table never showed row ${i + 1} of ${span.total}`);
        out.push(byIndex.get(i));
      }
      return out;
    }
    await page.evaluate(() => {
      const sc = document.querySelector('#results-scroll');
      sc.scrollTop += sc.clientHeight - 60;
    });
  }
  throw new Error('scrolled through the results table 5000 times');
}

// cellText is how the console shows a value.
const cellText = (v) => (v === null || v === undefined ? 'NULL' : typeof v === 'object' ? JSON.stringify(v) : String(v));
const rowText = (cols, r) => JSON.stringify(cols.map((c) => cellText(r[c])));

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
    if (!u.startsWith(BASE) && !u.startsWith(DEMO) && !u.startsWith('data:') && !u.startsWith('blob:')) failures.push(`request outside the server (the console must work offline): ${u}`);
  });

  // The operator graph of every demo view: its edges are the plan's (one
  // per stage input, from the producer's last operator to the consumer's
  // first), each starts and ends on those operators' boxes and runs through
  // no other operator's box.
  const DEMO_VIEWS = ['bids_per_channel', 'hot_auctions', 'highest_bid', 'bids_on_new_auctions'];
  await step('operator graphs of the demo views', async () => {
    for (const v of DEMO_VIEWS) {
      let q;
      for (let i = 0; i < 100; i++) {
        q = await api('GET', `/v1/queries/${v}`, undefined, undefined, DEMO);
        if (q.state === 'running' && q.graph?.stages?.length) break;
        await sleep(100);
      }
      check(q.graph?.stages?.length, `demo view ${v} is ${q.state} with no graph`);
      const stages = q.graph.stages;
      const want = stages.flatMap((st) => st.inputs.map((e) => `${e.from}->${st.id}`)).sort();
      await page.goto(`${DEMO}/#/query/${v}/graph`);
      await page.waitForSelector('#dag .dag-op', { state: 'attached' });
      const got = await page.evaluate(() => {
        const boxes = {};
        for (const g of document.querySelectorAll('#dag .dag-op')) {
          const r = g.querySelector('rect');
          boxes[g.dataset.id] = { x: +r.getAttribute('x'), y: +r.getAttribute('y'), w: +r.getAttribute('width'), h: +r.getAttribute('height') };
        }
        const edges = [...document.querySelectorAll('#dag path.dag-edge')].map((p) => {
          const len = p.getTotalLength();
          const pts = [];
          for (let d = 0; d <= len; d += 3) pts.push(p.getPointAtLength(d));
          pts.push(p.getPointAtLength(len));
          return { from: p.dataset.from, to: p.dataset.to, fromOp: p.dataset.fromOp, toOp: p.dataset.toOp, pts: pts.map((q) => ({ x: q.x, y: q.y })) };
        });
        return { boxes, edges };
      });
      const edges = got.edges.map((e) => `${e.from}->${e.to}`).sort();
      check(JSON.stringify(edges) === JSON.stringify(want), `${v}: the graph draws edges ${edges}, the plan has ${want}`);
      const onBorder = (p, b) => p.x >= b.x - 1.5 && p.x <= b.x + b.w + 1.5 && p.y >= b.y - 1.5 && p.y <= b.y + b.h + 1.5 &&
        (Math.abs(p.x - b.x) < 1.5 || Math.abs(p.x - b.x - b.w) < 1.5 || Math.abs(p.y - b.y) < 1.5 || Math.abs(p.y - b.y - b.h) < 1.5);
      const inside = (p, b) => p.x > b.x + 1 && p.x < b.x + b.w - 1 && p.y > b.y + 1 && p.y < b.y + b.h - 1;
      for (const e of got.edges) {
        const from = stages.find((st) => String(st.id) === e.from), to = stages.find((st) => String(st.id) === e.to);
        check(e.fromOp === `${from.id}.${from.operators.length - 1}` && e.toOp === `${to.id}.0`,
          `${v}: edge ${e.from}->${e.to} runs from operator ${e.fromOp} to ${e.toOp}, not from stage ${from.id}'s last operator to stage ${to.id}'s first`);
        const a = e.pts[0], z = e.pts[e.pts.length - 1];
        check(onBorder(a, got.boxes[e.fromOp]), `${v}: edge ${e.from}->${e.to} starts at (${a.x}, ${a.y}), not on operator ${e.fromOp}'s box ${JSON.stringify(got.boxes[e.fromOp])}`);
        check(onBorder(z, got.boxes[e.toOp]), `${v}: edge ${e.from}->${e.to} ends at (${z.x}, ${z.y}), not on operator ${e.toOp}'s box ${JSON.stringify(got.boxes[e.toOp])}`);
        for (const [id, b] of Object.entries(got.boxes)) {
          const p = e.pts.find((q) => inside(q, b));
          check(!p, `${v}: edge ${e.from}->${e.to} runs through operator ${id} (${stages.flatMap((st) => st.operators)[Object.keys(got.boxes).indexOf(id)]?.name}) at (${p?.x}, ${p?.y})`);
        }
      }
      const file = join(SHOTS, `${String(++shot).padStart(2, '0')}-graph-${v}.png`);
      // The page redraws the graph as its figures refresh (every poll),
      // which may replace #dag while a slow machine takes the shot.
      for (let i = 0; ; i++) {
        try {
          await page.locator('#dag').screenshot({ path: file, timeout: 10000 });
          break;
        } catch (err) {
          if (i === 4 || !String(err).includes('not attached')) throw err;
        }
      }
      console.log(`  ${v}: ${got.edges.length} edges as in the plan; screenshot ${file}`);
    }
    // The demo's load ends here, before the timed steps.
    for (const v of DEMO_VIEWS) await api('POST', `/v1/queries/${v}/stop`, undefined, undefined, DEMO);
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

  // A view whose rows are all stored before the Results tab opens, and no
  // input after: the tab must show them from the stream's snapshot.
  await step('results tab shows the stored rows before any change', async () => {
    await sql(`CREATE TABLE orders (id BIGINT NOT NULL, customer VARCHAR(16), amount BIGINT, ts TIMESTAMP(3) NOT NULL)
  ENGINE=http ENGINE_ATTRIBUTE='{"event_time": "ts"}';
CREATE VIEW per_customer AS SELECT customer, COUNT(*) AS orders, SUM(amount) AS total FROM orders GROUP BY customer;`);
    const rows = [];
    for (let i = 0; i < 300; i++) rows.push({ id: i, customer: i % 7 === 0 ? null : `c${String(i % 60).padStart(2, '0')}`, amount: i, ts: T(i % 60) });
    await ingestInto('orders', rows);
    await api('POST', '/v1/checkpoints');
    let want;
    for (let i = 0; i < 100; i++) {
      want = await api('GET', '/v1/queries/per_customer/results');
      if (want.rows.reduce((a, r) => a + r.orders, 0) === 300) break;
      await sleep(100);
    }
    const customers = new Set(rows.map((r) => r.customer)).size;
    check(want.rows.length === customers, `GET /results of per_customer has ${want.rows.length} rows, want ${customers}`);
    await page.goto(`${BASE}/#/query/per_customer/results`);
    await page.waitForSelector('#results-table', { state: 'attached' });
    // No change comes: every row shown is from the snapshot.
    const deadline = Date.now() + 10000;
    let n = 0;
    while (Date.now() < deadline && (n = (await liveRows()).length) === 0) await sleep(100);
    check(n > 0, `the Results tab of per_customer shows 0 rows; GET /results has ${want.rows.length}`);
    await page.waitForFunction((k) => Number(document.querySelector('#results-table').getAttribute('aria-rowcount')) - 1 === k, want.rows.length, { timeout: 10000 })
      .catch(async () => { throw new Error(`the Results tab shows ${await tableCount()} rows, GET /results ${want.rows.length}`); });
    const cols = want.columns;
    const shown = (await allTableRows()).map((r) => rowText(cols, r));
    const expect = want.rows.map((r) => rowText(cols, r));
    check(JSON.stringify([...shown].sort()) === JSON.stringify([...expect].sort()), `rows shown ${shown.join(' ')}\nGET /results ${expect.join(' ')}`);
    const status = await page.textContent('#results-status');
    check(/ 0 changes/.test(status), `changes arrived, so the test proves nothing: ${status}`);
    // In key order (customer, NULL first) by default; a header sorts.
    check(shown[0] === rowText(cols, want.rows.find((r) => r.customer === null)) && JSON.parse(shown[1])[0] === 'c00', `first rows: ${shown.slice(0, 2)}`);
    await page.evaluate(() => (document.querySelector('#results-scroll').scrollTop = 0));
    await page.click('th[data-col="total"] button.sort');
    await page.click('th[data-col="total"] button.sort');
    const maxTotal = want.rows.reduce((m, r) => Math.max(m, r.total), -Infinity);
    await page.waitForFunction((m) => document.querySelector('#results-table tbody tr[aria-rowindex="2"] td:nth-child(4)')?.textContent === String(m), maxTotal);
    check(await page.getAttribute('th[data-col="total"]', 'aria-sort') === 'descending', 'the total header is not marked sorted descending');
    await page.fill('th[data-col="customer"] input.filter', 'c1');
    await page.waitForFunction(() => Number(document.querySelector('#results-table').getAttribute('aria-rowcount')) - 1 === 10);
    const filtered = (await allTableRows()).map((r) => r.customer);
    check(JSON.stringify(filtered) === JSON.stringify(want.rows.filter((r) => r.customer?.startsWith('c1')).sort((a, b) => b.total - a.total || (a.customer < b.customer ? 1 : -1)).map((r) => r.customer)),
      `filtered to customers containing c1, sorted by total descending: ${filtered}`);
    await screenshot('results-snapshot-sorted-filtered');
    console.log(`  ${shown.length} stored rows shown before any change; sort and filter checked`);
    await page.goto(`${BASE}/#/`);
    await page.waitForSelector('.cm-editor');
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

  // An edge that carries changes says so on its label: the PRIMARY KEY
  // table's side of a join is upsert[key], as the API and EXPLAIN say.
  await step('operator graph labels what an edge carries', async () => {
    await sql(`CREATE TABLE pages (page VARCHAR(32) NOT NULL, title VARCHAR(64), PRIMARY KEY (page)) ENGINE=http;
      CREATE VIEW clicks_titled AS SELECT c.user_id, p.title FROM clicks c JOIN pages p ON c.page = p.page`);
    const q = await api('GET', '/v1/queries/clicks_titled');
    const inputs = q.graph.stages.flatMap((st) => st.inputs.map((e) => ({ ...e, to: st.id })));
    const up = inputs.filter((e) => e.kind === 'upsert');
    check(up.length === 1 && JSON.stringify(up[0].upsert_key) === '[0]', `inputs of the join's stages: ${JSON.stringify(inputs)}`);
    await page.goto(`${BASE}/#/query/clicks_titled/graph`);
    await page.waitForSelector('#dag path.dag-edge', { state: 'attached' });
    const labels = await page.evaluate(() => Object.fromEntries([...document.querySelectorAll('#dag path.dag-edge')].map((p) =>
      [`${p.dataset.from}->${p.dataset.to}`, p.parentElement.querySelector('text.dag-edge-label')?.textContent ?? ''])));
    for (const e of inputs) {
      const label = labels[`${e.from}->${e.to}`] ?? '';
      const want = e.kind === 'upsert' ? ` · upsert[${e.upsert_key.join(',')}]` : e.kind === 'retract' ? ' · retract' : '';
      check(want ? label.endsWith(want) : !label.includes(' · '), `edge ${e.from}->${e.to} (${e.kind}) is labelled ${JSON.stringify(label)}`);
    }
    await screenshot('graph-upsert-edge');
    await sql('DROP VIEW clicks_titled; DROP TABLE pages');
    // Back to the view the steps below look at.
    await page.goto(`${BASE}/#/query/${VIEW}/graph`);
    await page.waitForSelector('#dag .dag-op', { state: 'attached' });
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

  // A query publishing thousands of changes a second: the page keeps
  // answering, its watermark keeps moving, and it ends with GET /results.
  await step('results tab of a busy query stays responsive', async () => {
    const EPS = 8000; // events/s, 92% of them bids
    const EVENTS = EPS * 34; // ends soon after the 30 s measured
    await sql(`CREATE TABLE fastbid (auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR(64), url VARCHAR(256), date_time TIMESTAMP(3), extra VARCHAR(256))
  ENGINE=nexmark ENGINE_ATTRIBUTE='{"kind": "bid", "event_time": "date_time", "events_per_second": ${EPS}, "events": ${EVENTS}}';
CREATE VIEW fast_bids AS SELECT auction, bidder, price, date_time FROM fastbid;`);
    await page.goto(`${BASE}/#/query/fast_bids/results`);
    await page.waitForSelector('#results-table', { state: 'attached' });
    const blank = await page.context().newPage();
    await blank.goto('about:blank');
    const timed = async (f) => {
      const t = performance.now();
      const v = await f();
      return [performance.now() - t, v];
    };
    const out = async () => (await api('GET', '/v1/queries/fast_bids')).counters.rows_out ?? 0;
    while ((await out()) === 0) await sleep(50);
    const samples = [];
    const outs = [{ t: Date.now(), n: await out() }];
    const t0 = Date.now();
    let nextOut = t0 + 1000;
    while (Date.now() - t0 < 30000) {
      const at = Date.now();
      const [[cms, wm], [bms]] = await Promise.all([
        timed(() => page.evaluate(() => document.querySelector('#results-watermark')?.textContent ?? null)),
        timed(() => blank.evaluate(() => 1)),
      ]);
      samples.push({ t: at - t0, cms, bms, wm });
      if (Date.now() >= nextOut) {
        outs.push({ t: Date.now(), n: await out() });
        nextOut += 1000;
      }
      await sleep(150);
    }
    outs.push({ t: Date.now(), n: await out() });
    await blank.close();
    const span = (outs[outs.length - 1].t - outs[0].t) / 1000;
    const rate = (outs[outs.length - 1].n - outs[0].n) / span;
    const q = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(p * xs.length))];
    const cs = samples.map((x) => x.cms), bs = samples.map((x) => x.bms);
    console.log(`  ${fmt(rate)} changes/s over ${span.toFixed(1)} s; ${samples.length} samples: console p50 ${cs.length && q(cs, 0.5).toFixed(1)} ms, p99 ${q(cs, 0.99).toFixed(1)} ms, max ${Math.max(...cs).toFixed(1)} ms; blank page p50 ${q(bs, 0.5).toFixed(1)} ms, p99 ${q(bs, 0.99).toFixed(1)} ms, max ${Math.max(...bs).toFixed(1)} ms`);
    // The console is blamed only when the blank page answered quickly at
    // the same moment (a busy machine slows both). On 2 loaded cores the
    // OS may still deschedule one renderer and not the other for a few
    // hundred ms, so one such sample alone is not a freeze; two in a row,
    // one over 500 ms, or more than 1% of them are.
    const slowAt = samples.map((x) => x.cms > 200 && x.bms <= 50);
    const slow = samples.filter((_, i) => slowAt[i]);
    const frozen = samples.filter((x, i) => slowAt[i] && (x.cms > 500 || slowAt[i - 1] || slowAt[i + 1]));
    check(frozen.length === 0 && slow.length <= samples.length / 100,
      `the page took over 200 ms to answer while a blank page answered in 50 ms or less (${slow.length} of ${samples.length} samples; two in a row, over 500 ms or over 1% fail): ${JSON.stringify((frozen.length ? frozen : slow).slice(0, 5))}`);
    // The load was what the test is about.
    check(span >= 29.5 && rate >= 5000, `the query published ${fmt(rate)} changes/s over ${span.toFixed(1)} s: the test needs 5,000/s for 30 s`);
    for (let from = 0; from + 5000 <= 30000; from += 5000) {
      const wms = new Set(samples.filter((x) => x.t >= from && x.t < from + 5000).map((x) => x.wm));
      check(wms.size >= 2, `the watermark shown did not move between ${from / 1000} s and ${from / 1000 + 5} s: ${[...wms]}`);
    }
    // Quiesce: the generator stops at EVENTS; then the table equals GET /results.
    let last = -1, n;
    while ((n = await out()) !== last) {
      last = n;
      await sleep(1000);
    }
    const want = await api('GET', '/v1/queries/fast_bids/results');
    check(want.rows.length === n, `GET /results has ${want.rows.length} rows, the query emitted ${n}`);
    await page.waitForFunction((k) => Number(document.querySelector('#results-table').getAttribute('aria-rowcount')) - 1 === k && document.querySelector('#results-status').dataset.rows === String(k), want.rows.length, { timeout: 20000 })
      .catch(async () => { throw new Error(`the Results tab shows ${await tableCount()} rows, GET /results ${want.rows.length}`); });
    const cols = want.columns;
    const expect = new Map();
    for (const r of want.rows) expect.set(rowText(cols, r), (expect.get(rowText(cols, r)) ?? 0) + 1);
    // Every row of one auction, through the console's filter, scrolled through.
    const perAuction = new Map();
    for (const r of want.rows) perAuction.set(r.auction, (perAuction.get(r.auction) ?? 0) + 1);
    const [auction] = [...perAuction].filter(([, k]) => k <= 300).sort((a, b) => b[1] - a[1])[0];
    const one = want.rows.filter((r) => r.auction === auction).map((r) => rowText(cols, r)).sort();
    await page.fill('th[data-col="auction"] input.filter', `=${auction}`);
    await page.waitForFunction((k) => Number(document.querySelector('#results-table').getAttribute('aria-rowcount')) - 1 === k, one.length);
    const shownOne = (await allTableRows()).map((r) => rowText(cols, r)).sort();
    check(JSON.stringify(shownOne) === JSON.stringify(one), `auction ${auction}: the console shows ${shownOne.length} rows, GET /results has ${one.length}`);
    // And the highest prices, sorted by the console.
    await page.fill('th[data-col="auction"] input.filter', '');
    await page.click('th[data-col="price"] button.sort');
    await page.click('th[data-col="price"] button.sort');
    await page.waitForFunction((k) => Number(document.querySelector('#results-table').getAttribute('aria-rowcount')) - 1 === k && document.querySelector('th[data-col="price"]').getAttribute('aria-sort') === 'descending', want.rows.length);
    const maxPrice = want.rows.reduce((m, r) => Math.max(m, r.price), -Infinity);
    await page.evaluate(() => (document.querySelector('#results-scroll').scrollTop = 0));
    await page.waitForFunction((m) => document.querySelector('#results-table tbody tr[aria-rowindex="2"] td:nth-child(4)')?.textContent === String(m), maxPrice);
    const top = (await liveRows()).filter((r) => r._index - 2 < 20).sort((a, b) => a._index - b._index);
    const prices = want.rows.map((r) => r.price).sort((a, b) => b - a).slice(0, top.length).map(String);
    check(top.length >= 10 && JSON.stringify(top.map((r) => r.price)) === JSON.stringify(prices), `top prices shown ${top.map((r) => r.price)}, GET /results ${prices}`);
    for (const r of top) check(expect.has(rowText(cols, r)), `row ${rowText(cols, r)} shown is not in GET /results`);
    await screenshot('results-busy');
    console.log(`  ${fmt(want.rows.length)} rows shown, as GET /results; ${one.length} rows of auction ${auction} compared one by one`);
    await page.goto(`${BASE}/#/`);
    await sql('DROP VIEW fast_bids; DROP TABLE fastbid;');
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
