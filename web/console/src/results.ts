// The live results table. A worker (resultsworker.ts) reads the query's
// /changes?snapshot=true stream (the schema, the current rows, then
// changes) and keeps the rows; this page only draws the ones in sight: it
// asks the worker for them, draws its answer in the next animation frame,
// and asks again, so the DOM changes at most once per frame however fast
// the query publishes.
//
// The table is virtualized: it holds the rows in sight plus a margin,
// between two spacer rows as tall as the rows above and below, so 500,000
// rows cost what 50 do. It stays a <table> whose header cells are the
// result's column names (with aria-rowcount and aria-rowindex), so screen
// readers and tests read it. A header sorts by its column (ascending,
// descending, then back to key order); the box under it filters. Rows that
// changed while shown flash; rows whose window the watermark closed
// (window_end at or before the stream's closed_before) are marked final
// (✓); deleted rows are struck through, then go.

import * as api from './api';
import { h, fmtInt } from './dom';
import { display } from './resultset';
import type { FromWorker, RowMsg, ToWorker } from './resultsproto';

// Rows drawn beyond the visible ones, above and below.
const OVERSCAN = 12;
// Until the first row is measured.
const DEFAULT_ROW_H = 27;
// The scroller's max-height (style.css, .results-scroll).
const MAX_VIEWPORT_H = 640;

type View = Extract<FromWorker, { t: 'view' }>;

interface Slot {
  tr: HTMLTableRowElement;
  tds: HTMLTableCellElement[];
  key: string;
  version: number;
  closed: boolean;
  index: number; // its aria-rowindex
}

export class LiveResults {
  readonly el: HTMLElement;
  private worker: Worker | null = null;
  private table: HTMLTableElement;
  private colgroup: HTMLElement;
  private headRow: HTMLTableRowElement;
  private tbody: HTMLTableSectionElement;
  private top: HTMLTableRowElement;
  private bottom: HTMLTableRowElement;
  private scroller: HTMLElement;
  private status: HTMLElement;
  private wmText: HTMLElement;
  private slots: Slot[] = [];
  private rowH = DEFAULT_ROW_H;
  private measured = false;
  private scrollTop = 0;
  private viewportH = MAX_VIEWPORT_H;
  private frame: number | null = null;
  private latest: View | null = null; // the worker's last answer, not drawn yet
  private asked = false; // a request is with the worker
  private schema = -1;
  private columns: string[] = [];
  private widths = '';
  private statusWM: number | null = null; // from the query's status
  private streamWM: number | null = null;
  private stopped = false;
  private resize: ResizeObserver | null = null;

  constructor(private name: string) {
    this.status = h('span', { class: 'muted', id: 'results-status', role: 'status' }, 'connecting…');
    this.wmText = h('span', { id: 'results-watermark', class: 'watermark' }, 'watermark: none yet');
    this.colgroup = h('colgroup');
    this.headRow = h('tr', { 'aria-rowindex': 1 }) as HTMLTableRowElement;
    this.top = h('tr', { class: 'spacer', 'aria-hidden': 'true' }) as HTMLTableRowElement;
    this.bottom = h('tr', { class: 'spacer', 'aria-hidden': 'true' }) as HTMLTableRowElement;
    this.tbody = h('tbody', {}, this.top, this.bottom) as HTMLTableSectionElement;
    this.table = h('table', { class: 'data live', id: 'results-table', 'aria-rowcount': 1, 'aria-label': `results of ${name}` },
      this.colgroup, h('thead', {}, this.headRow), this.tbody) as HTMLTableElement;
    this.scroller = h('div', { class: 'scroll results-scroll', id: 'results-scroll' }, this.table);
    this.scroller.addEventListener('scroll', () => {
      this.scrollTop = this.scroller.scrollTop;
      this.ask(true);
    }, { passive: true });
    this.el = h('div', { class: 'live-results' }, h('div', { class: 'toolbar' }, this.wmText, this.status), this.scroller);
    if (typeof ResizeObserver !== 'undefined') {
      this.resize = new ResizeObserver((entries) => {
        for (const e of entries) {
          if (e.target === this.scroller) this.viewportH = Math.max(e.contentRect.height, MAX_VIEWPORT_H);
          else if (!this.measured && e.borderBoxSize?.[0]?.blockSize) {
            this.rowH = e.borderBoxSize[0].blockSize;
            this.measured = true;
            this.resize!.unobserve(e.target);
          }
        }
        this.ask(true);
      });
      this.resize.observe(this.scroller);
    }
  }

  start() {
    const w = new Worker(new URL('./resultsworker.ts', import.meta.url), { type: 'module', name: `results of ${this.name}` });
    this.worker = w;
    w.onmessage = (ev: MessageEvent<FromWorker>) => this.onMessage(ev.data);
    w.onerror = (ev) => {
      this.status.textContent = `the results worker failed: ${ev.message}`;
    };
    this.send({ t: 'start', base: location.href, changes: api.changesURL(this.name), results: api.resultsURL(this.name) });
    this.ask(true);
  }

  stop() {
    this.stopped = true;
    this.send({ t: 'stop' });
    this.worker = null;
    if (this.frame !== null) cancelAnimationFrame(this.frame);
    this.resize?.disconnect();
  }

  // setWatermark takes the query's watermark from its status (polled every
  // second by the page, whether or not the stream reports it too).
  setWatermark(wm: string | null) {
    const t = wm ? Date.parse(wm) : NaN;
    if (Number.isNaN(t) || (this.statusWM !== null && t <= this.statusWM)) return;
    this.statusWM = t;
    this.renderWatermark();
  }

  private send(m: ToWorker) {
    this.worker?.postMessage(m);
  }

  private async onMessage(m: FromWorker) {
    if (this.stopped) return;
    if (m.t === 'auth') {
      // The session ended: log in (api shows the form), then start over.
      try {
        await api.query(this.name);
      } catch {
        /* shown by the page */
      }
      this.send({ t: 'start', base: location.href, changes: api.changesURL(this.name), results: api.resultsURL(this.name) });
      return;
    }
    this.asked = false;
    this.latest = m;
    if (this.frame === null) this.frame = requestAnimationFrame(() => this.render());
  }

  // ask sends the worker the window of rows in sight, unless a request is
  // already with it (force: a new one, e.g. after scrolling).
  private ask(force = false) {
    if (!this.worker || (this.asked && !force)) return;
    const first = Math.max(0, Math.floor(this.scrollTop / this.rowH) - OVERSCAN);
    const count = Math.ceil(this.viewportH / this.rowH) + 2 * OVERSCAN;
    this.asked = true;
    this.send({ t: 'want', first, count });
  }

  private setColumns(v: View) {
    this.columns = v.columns;
    for (const s of this.slots) s.tr.remove();
    this.slots = [];
    this.headRow.replaceChildren(h('th', { class: 'rowstate', scope: 'col' }, ''));
    for (const c of v.columns) {
      const btn = h('button', { class: 'sort', type: 'button', title: `sort by ${c}` }, c);
      btn.addEventListener('click', () => this.toggleSort(c));
      const input = h('input', { class: 'filter', type: 'search', placeholder: 'filter', 'aria-label': `filter ${c}`, 'data-col': c }) as HTMLInputElement;
      input.addEventListener('input', () => {
        this.send({ t: 'filter', col: c, text: input.value });
        this.ask(true);
      });
      this.headRow.append(h('th', { scope: 'col', 'data-col': c, class: v.keyCols.includes(c) ? 'key' : null }, btn, input));
    }
    this.widths = '';
  }

  private sort = { col: null as string | null, desc: false };

  private toggleSort(c: string) {
    const s = this.sort;
    // By this column ascending, then descending, then back to key order.
    this.sort = s.col !== c ? { col: c, desc: false } : !s.desc ? { col: c, desc: true } : { col: null, desc: false };
    this.send({ t: 'sort', ...this.sort });
    this.ask(true);
  }

  private render() {
    this.frame = null;
    const v = this.latest;
    this.latest = null;
    if (!v || this.stopped) return;
    if (v.schema !== this.schema || v.columns.join('\u0000') !== this.columns.join('\u0000')) {
      this.schema = v.schema;
      this.setColumns(v);
    }
    const widths = v.widths.join(',');
    if (widths !== this.widths) {
      this.widths = widths;
      this.colgroup.replaceChildren(h('col', { style: 'width: 28px' }), ...v.widths.map((w) => h('col', { style: `width: ${w}px` })));
      this.table.style.width = `${28 + v.widths.reduce((a, w) => a + w, 0)}px`;
    }
    for (const th of this.headRow.querySelectorAll<HTMLElement>('th[data-col]')) {
      const want = v.sort.col === th.dataset.col ? (v.sort.desc ? 'descending' : 'ascending') : null;
      if (th.getAttribute('aria-sort') !== want) {
        if (want) th.setAttribute('aria-sort', want);
        else th.removeAttribute('aria-sort');
      }
    }
    this.table.setAttribute('aria-rowcount', String(v.total + 1));
    const n = v.rows.length;
    while (this.slots.length < n) this.slots.push(this.newSlot());
    while (this.slots.length > n) this.slots.pop()!.tr.remove();
    this.top.style.height = `${v.first * this.rowH}px`;
    this.bottom.style.height = `${Math.max(0, v.total - v.first - n) * this.rowH}px`;
    for (let i = 0; i < n; i++) this.drawSlot(this.slots[i], v.rows[i], v.first + i + 2);
    if (!this.measured && this.slots.length && this.resize) this.resize.observe(this.slots[0].tr);
    this.renderStatus(v);
    this.ask();
  }

  private newSlot(): Slot {
    const tds = [h('td', { class: 'rowstate' }) as HTMLTableCellElement, ...this.columns.map(() => h('td') as HTMLTableCellElement)];
    const tr = h('tr', {}, tds) as HTMLTableRowElement;
    this.tbody.insertBefore(tr, this.bottom);
    return { tr, tds, key: '', version: -1, closed: false, index: -1 };
  }

  private drawSlot(slot: Slot, r: RowMsg, index: number) {
    if (slot.index !== index) {
      slot.index = index;
      slot.tr.setAttribute('aria-rowindex', String(index));
    }
    if (slot.key === r.key && slot.version === r.version && slot.closed === r.closed) return;
    const fresh = slot.key !== r.key;
    const changed = !r.dead && (fresh ? r.recent : slot.version !== r.version);
    slot.key = r.key;
    slot.version = r.version;
    slot.closed = r.closed;
    const tr = slot.tr;
    tr.dataset.key = r.key;
    tr.dataset.updates = String(r.updates);
    tr.classList.toggle('closed', r.closed);
    tr.classList.toggle('deleted', r.dead);
    if (changed) {
      // Two animations by turns: switching restarts it with no reflow.
      const odd = r.updates % 2 === 1;
      tr.classList.toggle('flash-a', odd);
      tr.classList.toggle('flash-b', !odd);
    } else if (fresh) {
      tr.classList.remove('flash-a', 'flash-b');
    }
    const mark = slot.tds[0];
    mark.textContent = r.closed ? '✓' : '';
    mark.title = r.closed ? 'window closed: the watermark passed window_end, this row is final' : '';
    for (let c = 0; c < r.vals.length; c++) {
      const v = r.vals[c];
      const td = slot.tds[c + 1];
      const text = display(v);
      if (td.textContent !== text) td.textContent = text;
      const cls = v === null || v === undefined ? 'null' : typeof v === 'number' ? 'num' : '';
      if (td.className !== cls) td.className = cls;
    }
  }

  private renderStatus(v: View) {
    const parts: string[] = [];
    parts.push(v.mode === 'changes' ? 'live: /changes stream' : v.mode === 'polling' ? 'live: polling latest results every second' : 'connecting…');
    if (v.loading) parts.push(`loading rows: ${fmtInt(v.live)}…`);
    else parts.push(`${fmtInt(v.live)} row${v.live === 1 ? '' : 's'}` + (v.filtered ? ` (${fmtInt(v.total)} match the filters)` : ''));
    if (v.mode === 'changes') parts.push(`${fmtInt(v.changes)} changes`);
    if (v.checkpoint !== null) parts.push(`checkpoint #${v.checkpoint}`);
    if (v.problem) parts.push(v.problem);
    const text = parts.join(' · ');
    if (this.status.textContent !== text) this.status.textContent = text;
    this.status.dataset.rows = String(v.live);
    this.status.dataset.loading = String(v.loading);
    if (v.watermark !== null && (this.streamWM === null || v.watermark > this.streamWM)) this.streamWM = v.watermark;
    this.renderWatermark();
  }

  private renderWatermark() {
    const wm = Math.max(this.streamWM ?? -Infinity, this.statusWM ?? -Infinity);
    const text = Number.isFinite(wm) ? `watermark: ${new Date(wm).toISOString()}` : 'watermark: none yet';
    if (this.wmText.textContent !== text) this.wmText.textContent = text;
  }
}
