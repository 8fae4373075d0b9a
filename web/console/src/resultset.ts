// The live result set of a query, without the DOM: its rows by their
// upsert key (a Map, so a change costs one look-up, never a scan), and the
// view the table shows: the rows that pass the column filters, in the
// chosen order. Changes mark rows dirty; reconcile() moves only those (one
// pass over the view to take them out, a merge to put them back), and only
// when a row entered, left or moved: an update that keeps a row's place
// touches nothing but the row.

export type Row = Record<string, unknown>;

export interface Entry {
  key: string; // the key's JSON: the row's identity
  keyVals: unknown[];
  nk: unknown[]; // keyVals, comparable (norm)
  row: Row;
  dead: boolean; // deleted: shown struck through until swept
  deletedAt: number;
  version: number; // bumped at every change; the table redraws a row when it differs
  updates: number; // changes after the row first appeared
  changedAt: number; // ms (the caller's clock) of the last change
  windowEnd: number | null; // row.window_end in ms, for the closed mark
  // Bookkeeping of the view.
  inView: boolean;
  sk: unknown; // the sort value the row holds its place in the view by
  dirty: boolean;
  leaving: boolean;
}

export interface Sort {
  col: string | null; // null: by key
  desc: boolean;
}

// How long a deleted row stays shown (struck through) before it goes.
export const DELETED_SHOWN_MS = 1500;

type Pred = (v: unknown) => boolean;

const NUMERIC = /^-?\d+(\.\d+)?([eE][-+]?\d+)?$/;

// norm makes a value comparable: numbers, and strings that are decimal
// numbers (DECIMAL, large BIGINTs), compare as numbers; the rest as text
// (timestamps are ISO 8601 in UTC, so as text is in time order).
function norm(v: unknown): unknown {
  if (typeof v === 'string' && NUMERIC.test(v)) return Number(v);
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (v !== null && typeof v === 'object') return JSON.stringify(v);
  return v ?? null;
}

function cmp1(a: unknown, b: unknown): number {
  if (a === b) return 0;
  if (a === null) return -1; // NULL first, as MySQL orders it
  if (b === null) return 1;
  const na = typeof a === 'number', nb = typeof b === 'number';
  if (na && nb) return (a as number) - (b as number);
  if (na !== nb) return na ? -1 : 1;
  return (a as string) < (b as string) ? -1 : 1;
}

function cmpSk(a: unknown, b: unknown): number {
  if (Array.isArray(a) && Array.isArray(b)) {
    for (let i = 0; i < a.length && i < b.length; i++) {
      const c = cmp1(a[i], b[i]);
      if (c !== 0) return c;
    }
    return a.length - b.length;
  }
  return cmp1(a, b);
}

// display is how a value reads in the table (and what a filter matches).
export function display(v: unknown): string {
  if (v === null || v === undefined) return 'NULL';
  if (typeof v === 'number') return Number.isInteger(v) ? String(v) : String(Math.round(v * 1e6) / 1e6);
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

// parseFilter reads a column filter: ">10", "<=2.5", "=a" or "!=a"
// compare (as numbers when both sides are), anything else matches the
// cells whose text contains it, ignoring case. Empty: no filter.
export function parseFilter(text: string): Pred | null {
  const t = text.trim();
  if (!t) return null;
  const m = /^(>=|<=|!=|=|>|<)\s*(.*)$/.exec(t);
  if (m) {
    const [, op, rhsText] = m;
    const rhs = norm(rhsText);
    return (v) => {
      const c = cmp1(norm(v), rhs);
      switch (op) {
        case '>': return c > 0;
        case '<': return c < 0;
        case '>=': return c >= 0;
        case '<=': return c <= 0;
        case '=': return c === 0 || display(v) === rhsText;
        default: return !(c === 0 || display(v) === rhsText);
      }
    };
  }
  const needle = t.toLowerCase();
  return (v) => display(v).toLowerCase().includes(needle);
}

export class ResultSet {
  columns: string[] = [];
  keyCols: string[] = [];
  readonly rows = new Map<string, Entry>();
  view: Entry[] = [];
  sort: Sort = { col: null, desc: false };
  // Rows are counted live (not deleted).
  live = 0;
  // Snapshot rows arrive before snapshot_end: they are only stored, and the
  // view is built once at the end.
  loading = false;
  private filters = new Map<string, Pred>();
  private dirty: Entry[] = [];
  private rebuild = true;
  private deleted: Entry[] = []; // in the order they were deleted

  reset(columns: string[], keyCols: string[]) {
    this.columns = columns;
    this.keyCols = keyCols;
    this.rows.clear();
    this.view = [];
    this.dirty = [];
    this.deleted = [];
    this.live = 0;
    this.rebuild = true;
    for (const c of [...this.filters.keys()]) if (!columns.includes(c)) this.filters.delete(c);
    if (this.sort.col !== null && !columns.includes(this.sort.col)) this.sort = { col: null, desc: false };
  }

  // upsert stores a row under its key (the key object of the /changes
  // record, or the key columns' values). It returns the entry.
  upsert(keyObj: Row | null, row: Row, now: number): Entry {
    const keyVals = keyObj ? Object.values(keyObj) : this.keyCols.length ? this.keyCols.map((k) => row[k]) : Object.values(row);
    const key = JSON.stringify(keyVals);
    let e = this.rows.get(key);
    const end = row.window_end;
    const windowEnd = typeof end === 'string' ? Date.parse(end) : null;
    if (e) {
      if (e.dead) {
        e.dead = false;
        this.live++;
      }
      e.row = row;
      e.version++;
      e.updates++;
      e.changedAt = now;
      e.windowEnd = windowEnd;
    } else {
      e = { key, keyVals, nk: keyVals.map(norm), row, dead: false, deletedAt: 0, version: 1, updates: 0, changedAt: now, windowEnd, inView: false, sk: undefined, dirty: false, leaving: false };
      this.rows.set(key, e);
      this.live++;
    }
    this.touch(e);
    return e;
  }

  // delete marks the row under a key deleted; sweep() takes it out later.
  delete(keyObj: Row | null, row: Row | null, now: number) {
    const keyVals = keyObj ? Object.values(keyObj) : row ? (this.keyCols.length ? this.keyCols.map((k) => row[k]) : Object.values(row)) : [];
    const e = this.rows.get(JSON.stringify(keyVals));
    if (!e || e.dead) return;
    e.dead = true;
    e.deletedAt = now;
    e.version++;
    this.live--;
    this.deleted.push(e);
    this.touch(e);
  }

  private touch(e: Entry) {
    if (this.loading || this.rebuild || e.dirty) return;
    e.dirty = true;
    this.dirty.push(e);
  }

  // sweep forgets the rows deleted more than DELETED_SHOWN_MS ago.
  sweep(now: number) {
    let i = 0;
    for (; i < this.deleted.length; i++) {
      const e = this.deleted[i];
      if (now - e.deletedAt < DELETED_SHOWN_MS) break;
      if (!e.dead || this.rows.get(e.key) !== e) continue; // back again, or reset
      this.rows.delete(e.key);
      this.touch(e);
    }
    if (i) this.deleted.splice(0, i);
  }

  setSort(s: Sort) {
    this.sort = s;
    this.rebuild = true;
  }

  // setFilter sets (or, with empty text, clears) a column's filter.
  setFilter(col: string, text: string) {
    const p = parseFilter(text);
    if (p) this.filters.set(col, p);
    else this.filters.delete(col);
    this.rebuild = true;
  }

  get filtered(): boolean {
    return this.filters.size > 0;
  }

  // pending says whether reconcile has work.
  get pending(): boolean {
    return !this.loading && (this.rebuild || this.dirty.length > 0);
  }

  private matches(e: Entry): boolean {
    for (const [c, p] of this.filters) if (!p(e.row[c])) return false;
    return true;
  }

  private sortKey(e: Entry): unknown {
    return this.sort.col === null ? e.nk : norm(e.row[this.sort.col]);
  }

  private order = (a: Entry, b: Entry): number => {
    let c = cmpSk(a.sk, b.sk);
    if (c === 0 && this.sort.col !== null) c = cmpSk(a.nk, b.nk);
    if (c === 0) c = a.key < b.key ? -1 : a.key > b.key ? 1 : 0;
    return this.sort.desc ? -c : c;
  };

  // reconcile brings the view up to date with the changes since the last
  // call; it returns whether the view's rows or their order changed.
  reconcile(): boolean {
    if (this.loading) return false;
    if (this.rebuild) {
      this.rebuild = false;
      for (const e of this.dirty) e.dirty = false;
      this.dirty = [];
      for (const e of this.view) e.inView = false;
      const v: Entry[] = [];
      for (const e of this.rows.values()) {
        if (!this.matches(e)) continue;
        e.sk = this.sortKey(e);
        e.inView = true;
        v.push(e);
      }
      v.sort(this.order);
      this.view = v;
      return true;
    }
    if (this.dirty.length === 0) return false;
    const enter: Entry[] = [];
    let leaving = 0;
    for (const e of this.dirty) {
      e.dirty = false;
      const want = this.rows.get(e.key) === e && this.matches(e);
      const sk = want ? this.sortKey(e) : undefined;
      const moved = e.inView && want && cmpSk(sk, e.sk) !== 0;
      if (e.inView && (!want || moved)) {
        e.leaving = true;
        leaving++;
      }
      if (want && (!e.inView || moved)) {
        e.sk = sk;
        enter.push(e);
      }
    }
    this.dirty = [];
    if (leaving === 0 && enter.length === 0) return false;
    let v = this.view;
    if (leaving) {
      v = v.filter((e) => {
        if (!e.leaving) return true;
        e.leaving = false;
        e.inView = false;
        return false;
      });
    }
    if (enter.length) {
      enter.sort(this.order);
      const out: Entry[] = new Array(v.length + enter.length);
      let i = 0, j = 0, k = 0;
      while (i < v.length && j < enter.length) out[k++] = this.order(v[i], enter[j]) <= 0 ? v[i++] : enter[j++];
      while (i < v.length) out[k++] = v[i++];
      while (j < enter.length) out[k++] = enter[j++];
      for (const e of enter) e.inView = true;
      v = out;
    }
    this.view = v;
    return true;
  }
}
