// The live results table: fed by GET /v1/queries/{name}/changes (Server-Sent
// Events, current rows first) and, where the server has no /changes, by
// polling the latest results every second. Updated rows flash; rows whose
// window the watermark has passed are shown closed.

import * as api from './api';
import { h, clear, fmtValue, fmtInt } from './dom';

const MAX_ROWS = 1000;

interface Entry {
  row: Record<string, unknown>;
  tr: HTMLTableRowElement;
  text: string;
}

export class LiveResults {
  readonly el: HTMLElement;
  private table: HTMLTableElement;
  private tbody: HTMLTableSectionElement;
  private status: HTMLElement;
  private columns: string[] = [];
  private keyCols: string[] = [];
  private rows = new Map<string, Entry>();
  private watermark: number | null = null;
  private es: EventSource | null = null;
  private timer: number | null = null;
  private mode: 'connecting' | 'changes' | 'polling' = 'connecting';
  private changes = 0;
  private lastCheckpoint: number | null = null;
  private stopped = false;

  constructor(private name: string) {
    this.status = h('span', { class: 'muted', id: 'results-status' }, 'connecting…');
    this.table = h('table', { class: 'data live', id: 'results-table' }) as HTMLTableElement;
    this.tbody = h('tbody') as HTMLTableSectionElement;
    this.table.append(h('thead'), this.tbody);
    this.el = h('div', { class: 'live-results' }, h('div', { class: 'toolbar' }, this.status), h('div', { class: 'scroll tall' }, this.table));
  }

  async start() {
    // The upsert key identifies a row across polls (the /changes stream
    // names it itself).
    try {
      this.keyCols = (await api.query(this.name)).key ?? [];
    } catch {
      /* shown by the page */
    }
    if (this.stopped) return;
    if (typeof EventSource === 'undefined') return this.poll();
    const es = new EventSource(api.changesURL(this.name), { withCredentials: true });
    this.es = es;
    let opened = false;
    es.onopen = () => {
      opened = true;
      this.mode = 'changes';
      this.renderStatus();
    };
    const onData = (ev: MessageEvent) => {
      opened = true;
      try {
        this.apply(JSON.parse(ev.data));
      } catch {
        /* a heartbeat or a comment */
      }
    };
    es.onmessage = onData;
    for (const t of ['schema', 'change', 'watermark', 'checkpoint', 'heartbeat']) es.addEventListener(t, onData as EventListener);
    es.onerror = () => {
      if (!opened || es.readyState === EventSource.CLOSED) {
        // No /changes on this server (404) or it refused the stream: poll.
        es.close();
        this.es = null;
        if (!this.stopped && this.mode !== 'polling') this.poll();
      }
    };
  }

  stop() {
    this.stopped = true;
    this.es?.close();
    if (this.timer !== null) clearInterval(this.timer);
  }

  // setWatermark takes the query's watermark from its status (polled
  // every second, whether or not the stream reports it too).
  setWatermark(wm: string | null) {
    if (!wm) return;
    this.updateWatermark(Date.parse(wm));
  }

  private poll() {
    this.mode = 'polling';
    const tick = async () => {
      try {
        const r = await api.results(this.name);
        this.replaceAll(r.columns, r.rows);
      } catch (e) {
        this.status.textContent = `cannot read results: ${e instanceof Error ? e.message : e}`;
      }
    };
    tick();
    this.timer = window.setInterval(tick, 1000);
  }

  private apply(rec: Record<string, unknown>) {
    switch (rec.type) {
      case 'schema': {
        const cols = (rec.columns as (string | { name: string })[]).map((c) => (typeof c === 'string' ? c : c.name));
        const key = rec.key as (string | { name: string })[] | undefined;
        if (key) this.keyCols = key.map((c) => (typeof c === 'string' ? c : c.name));
        this.setColumns(cols);
        break;
      }
      case 'change': {
        const key = JSON.stringify(rec.key ?? rec.row);
        if (rec.op === 'delete') this.remove(key);
        else this.upsert(key, rec.row as Record<string, unknown>, true);
        this.changes++;
        break;
      }
      case 'watermark': {
        const w = rec.watermark ?? rec.value ?? rec.wm;
        if (typeof w === 'string') this.updateWatermark(Date.parse(w));
        else if (typeof w === 'number') this.updateWatermark(w);
        break;
      }
      case 'checkpoint':
        this.lastCheckpoint = Number(rec.id);
        break;
    }
    this.renderStatus();
  }

  private setColumns(cols: string[]) {
    if (cols.join('\u0000') === this.columns.join('\u0000')) return;
    this.columns = cols;
    this.rows.clear();
    this.tbody.replaceChildren();
    const thead = this.table.tHead!;
    clear(thead, h('tr', {}, h('th', { class: 'rowstate' }, ''), cols.map((c) => h('th', { class: this.keyCols.includes(c) ? 'key' : null }, c))));
  }

  private rowKey(row: Record<string, unknown>): string {
    return JSON.stringify(this.keyCols.length ? this.keyCols.map((k) => row[k]) : row);
  }

  private cells(tr: HTMLTableRowElement, row: Record<string, unknown>) {
    clear(tr, h('td', { class: 'rowstate' }), this.columns.map((c) => h('td', { class: row[c] === null ? 'null' : typeof row[c] === 'number' ? 'num' : null }, fmtValue(row[c]))));
    this.markClosed(tr, row);
  }

  private upsert(key: string, row: Record<string, unknown>, flash: boolean, before?: Node | null) {
    const text = JSON.stringify(row);
    let e = this.rows.get(key);
    if (e) {
      if (e.text === text) return;
      e.row = row;
      e.text = text;
      this.cells(e.tr, row);
    } else {
      const tr = h('tr') as HTMLTableRowElement;
      e = { row, tr, text };
      this.rows.set(key, e);
      this.cells(tr, row);
      this.tbody.insertBefore(tr, before === undefined ? this.tbody.firstChild : before);
      while (this.rows.size > MAX_ROWS) {
        const [oldest] = this.rows.keys();
        this.rows.get(oldest)!.tr.remove();
        this.rows.delete(oldest);
      }
    }
    if (flash) {
      e.tr.classList.remove('flash');
      void e.tr.offsetWidth; // restart the animation
      e.tr.classList.add('flash');
      e.tr.dataset.updates = String(Number(e.tr.dataset.updates ?? 0) + 1);
    }
  }

  private remove(key: string) {
    const e = this.rows.get(key);
    if (!e) return;
    this.rows.delete(key);
    e.tr.classList.add('deleted');
    setTimeout(() => e.tr.remove(), 1500);
  }

  // replaceAll shows a full result set (polling), flashing what changed.
  private replaceAll(cols: string[], rows: Record<string, unknown>[]) {
    const first = this.columns.length === 0;
    this.setColumns(cols);
    const keep = new Set<string>();
    for (const r of rows.slice(-MAX_ROWS)) {
      const k = this.rowKey(r);
      keep.add(k);
      this.upsert(k, r, !first, null);
    }
    for (const k of [...this.rows.keys()]) if (!keep.has(k)) this.remove(k);
    // Server order (by key).
    for (const r of rows.slice(-MAX_ROWS)) {
      const e = this.rows.get(this.rowKey(r));
      if (e) this.tbody.append(e.tr);
    }
    this.renderStatus();
  }

  private updateWatermark(wm: number) {
    if (Number.isNaN(wm) || (this.watermark !== null && wm <= this.watermark)) return;
    this.watermark = wm;
    for (const e of this.rows.values()) this.markClosed(e.tr, e.row);
    this.renderStatus();
  }

  private markClosed(tr: HTMLTableRowElement, row: Record<string, unknown>) {
    const end = row.window_end;
    if (this.watermark === null || typeof end !== 'string') return;
    const closed = Date.parse(end) <= this.watermark;
    if (closed === tr.classList.contains('closed')) return;
    tr.classList.toggle('closed', closed);
    const cell = tr.firstElementChild as HTMLElement | null;
    if (cell) {
      cell.textContent = closed ? '✓' : '';
      cell.title = closed ? 'window closed: the watermark passed window_end, this row is final' : '';
    }
  }

  private renderStatus() {
    const parts: string[] = [];
    parts.push(this.mode === 'changes' ? 'live: /changes stream' : this.mode === 'polling' ? 'live: polling latest results every second' : 'connecting…');
    parts.push(`${fmtInt(this.rows.size)} row${this.rows.size === 1 ? '' : 's'}${this.rows.size >= MAX_ROWS ? ` (the ${MAX_ROWS} most recent)` : ''}`);
    if (this.mode === 'changes') parts.push(`${fmtInt(this.changes)} changes`);
    if (this.watermark !== null) {
      let closed = 0;
      for (const e of this.rows.values()) if (e.tr.classList.contains('closed')) closed++;
      parts.push(`watermark ${new Date(this.watermark).toISOString()}`, `${closed} closed window row${closed === 1 ? '' : 's'}`);
    }
    if (this.lastCheckpoint !== null) parts.push(`checkpoint #${this.lastCheckpoint}`);
    this.status.textContent = parts.join(' · ');
  }
}
