// The messages between the results table (results.ts, the page) and its
// worker (resultsworker.ts).

import type { Sort } from './resultset';

export type ToWorker =
  | { t: 'start'; base: string; changes: string; results: string }
  // want asks for the rows first..first+count of the view; the worker
  // answers once, when it has something new (at once if the window moved).
  | { t: 'want'; first: number; count: number }
  | { t: 'sort'; col: string | null; desc: boolean }
  | { t: 'filter'; col: string; text: string }
  | { t: 'stop' };

export interface RowMsg {
  key: string;
  version: number;
  updates: number;
  vals: unknown[]; // in column order
  closed: boolean; // its window is closed: the row is final
  dead: boolean; // deleted, shown struck through for a moment
  recent: boolean; // changed a moment ago
}

export type FromWorker =
  | {
      t: 'view';
      schema: number; // bumped when the columns change or the stream starts over
      columns: string[];
      keyCols: string[];
      widths: number[]; // px per column
      first: number;
      total: number; // rows in the view (matching the filters)
      live: number; // rows (not deleted)
      loading: boolean; // snapshot rows still arriving
      filtered: boolean;
      sort: Sort;
      rows: RowMsg[];
      watermark: number | null;
      mode: 'connecting' | 'changes' | 'polling';
      changes: number;
      checkpoint: number | null;
      problem: string;
    }
  // auth: the server asked for the token (the session ended).
  | { t: 'auth' };
