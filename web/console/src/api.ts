// The HTTP API (docs/http-api.md) as the console uses it. With --token the
// server answers 401 until POST /v1/login has set the session cookie; every
// call here then shows the login form once and retries.

export interface Problem {
  status: number;
  title: string;
  detail: string;
  statement?: number;
  line?: number;
  column?: number;
}

export class APIError extends Error {
  constructor(public problem: Problem) {
    super(problem.detail || problem.title);
  }
}

export interface Column {
  name: string;
  type: string;
  nullable: boolean;
}

export interface TableInfo {
  name: string;
  engine: string;
  columns: Column[];
  primary_key?: string[];
  event_time?: string;
  attributes?: Record<string, unknown>;
  end_offset?: number;
  watermarks?: Record<string, string | null>;
  sql: string;
  // "corrupt" when its ingest log lost acknowledged rows (lost says which).
  state?: string;
  lost?: LostRange[];
  lost_rows?: number;
}

export interface LostRange {
  table?: string;
  from: number;
  to: number;
  rows: number;
  detected: string;
  cause: string;
}

export interface OperatorInfo {
  name: string;
  explain: string;
  rows: number;
  state_bytes?: number;
}

export interface StageInfo {
  id: number;
  parallelism: number;
  inputs: { from: number; partition: string; key?: number[]; kind: string; upsert_key?: number[] }[];
  operators: OperatorInfo[];
  rows_out: number;
  queue_fill: number;
}

export interface QueryInfo {
  name: string;
  sql: string;
  state: string;
  error?: string;
  plan?: string;
  options?: Record<string, unknown>;
  watermark: string | null;
  input_ended?: boolean;
  offsets: Record<string, number>;
  last_checkpoint: number;
  counters: Record<string, number>;
  recent_late_rows: { offset: number; event_time: string }[];
  recent_bad_records?: Record<string, unknown>[];
  state_size?: Record<string, number>;
  lag?: Record<string, number>;
  sinks: Record<string, unknown>;
  created: string;
  key?: string[];
  graph?: { stages: StageInfo[] };
  restore?: { tasks_restored: number; tasks: number };
  lost_rows?: LostRange[];
}

export interface CheckpointStat {
  id: number;
  status: string;
  error?: string;
  started: string;
  duration_ms: number;
  alignment_ms: number;
  bytes: number;
  offsets?: Record<string, number>;
}

export interface StatementResult {
  statement: number;
  kind: string;
  name?: string;
  columns?: string[];
  rows?: Record<string, unknown>[];
}

export interface Example {
  name: string;
  title: string;
  sql: string;
}

export interface MetricSample {
  t: number | string;
  rows_in_per_s?: number;
  rows_out_per_s?: number;
  watermark_lag_s?: number | null;
  checkpoint_ms?: number | null;
  queue_fill?: number;
  state_rows?: number;
}

// loginHook shows the login form and resolves once the token was accepted.
let loginHook: (() => Promise<void>) | null = null;
let loggingIn: Promise<void> | null = null;

export function onLoginNeeded(f: () => Promise<void>) {
  loginHook = f;
}

async function problemOf(r: Response): Promise<Problem> {
  const text = await r.text();
  try {
    const p = JSON.parse(text);
    if (p && typeof p === 'object') return { status: r.status, title: p.title ?? r.statusText, detail: p.detail ?? text, ...p };
  } catch {
    /* not JSON */
  }
  return { status: r.status, title: r.statusText, detail: text.trim() || r.statusText };
}

// request sends a call, logging in on a 401 and retrying once.
export async function request(method: string, path: string, body?: BodyInit, headers: Record<string, string> = {}): Promise<Response> {
  for (let attempt = 0; ; attempt++) {
    const r = await fetch(path, { method, body, headers, credentials: 'same-origin' });
    if (r.status === 401 && attempt < 3 && loginHook && path !== '/v1/login') {
      loggingIn ??= loginHook().finally(() => (loggingIn = null));
      await loggingIn;
      continue;
    }
    if (!r.ok) throw new APIError(await problemOf(r));
    return r;
  }
}

export async function getJSON<T>(path: string): Promise<T> {
  return (await request('GET', path)).json() as Promise<T>;
}

// optionalJSON is getJSON for endpoints that may not exist on this server
// yet: null on a 404.
export async function optionalJSON<T>(path: string): Promise<T | null> {
  try {
    return await getJSON<T>(path);
  } catch (e) {
    if (e instanceof APIError && e.problem.status === 404) return null;
    throw e;
  }
}

export async function runSQL(sql: string): Promise<StatementResult[]> {
  const r = await request('POST', '/v1/sql', sql, { 'Content-Type': 'application/sql' });
  return ((await r.json()) as { results: StatementResult[] }).results;
}

export async function login(token: string): Promise<void> {
  await request('POST', '/v1/login', JSON.stringify({ token }), { 'Content-Type': 'application/json' });
}

export const tables = async () => (await getJSON<{ tables: TableInfo[] }>('/v1/tables')).tables;
export const queries = async () => (await getJSON<{ queries: QueryInfo[] }>('/v1/queries')).queries;
export const query = (name: string) => getJSON<QueryInfo>(`/v1/queries/${encodeURIComponent(name)}`);
export const checkpoints = async (name: string) =>
  (await getJSON<{ checkpoints: CheckpointStat[] }>(`/v1/queries/${encodeURIComponent(name)}/checkpoints`)).checkpoints;
export const metrics = (name: string) =>
  optionalJSON<{ interval_ms: number; samples: MetricSample[] }>(`/v1/queries/${encodeURIComponent(name)}/metrics`);
export const examples = () => optionalJSON<{ tables_sql: string; examples: Example[] }>('/v1/examples');
export const results = (name: string) =>
  getJSON<{ columns: string[]; rows: Record<string, unknown>[] }>(`/v1/queries/${encodeURIComponent(name)}/results?consistency=latest`);
export const dropQuery = (name: string) => request('DELETE', `/v1/queries/${encodeURIComponent(name)}`);
export const stopQuery = (name: string) => request('POST', `/v1/queries/${encodeURIComponent(name)}/stop`);
export const resumeQuery = (name: string) => request('POST', `/v1/queries/${encodeURIComponent(name)}/resume`);
export const csvURL = (name: string) => `/v1/queries/${encodeURIComponent(name)}/results?format=csv&consistency=latest`;
export const resultsURL = (name: string) => `/v1/queries/${encodeURIComponent(name)}/results?consistency=latest`;
export const changesURL = (name: string) => `/v1/queries/${encodeURIComponent(name)}/changes?snapshot=true`;
