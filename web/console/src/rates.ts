// Rates from successive polls of monotonic counters (rows ingested, rows
// in and out of a query), when the server's /metrics ring buffer is absent
// or for the overview's lists.

interface Seen {
  v: number;
  t: number;
  rate: number | null;
}

const seen = new Map<string, Seen>();

// rate records counter `key` at value v now and returns its rate per second
// since the previous poll (null at the first).
export function rate(key: string, v: number | undefined | null): number | null {
  if (v === undefined || v === null) return null;
  const now = performance.now();
  const prev = seen.get(key);
  if (!prev || v < prev.v) {
    seen.set(key, { v, t: now, rate: null });
    return null;
  }
  const dt = (now - prev.t) / 1000;
  if (dt < 0.2) return prev.rate; // polled twice in a row: keep the last rate
  const r = (v - prev.v) / dt;
  seen.set(key, { v, t: now, rate: r });
  return r;
}

// lagSeconds is how far a watermark trails the wall clock.
export function lagSeconds(watermark: string | null | undefined): number | null {
  if (!watermark) return null;
  const t = Date.parse(watermark);
  return Number.isNaN(t) ? null : Math.max((Date.now() - t) / 1000, 0);
}
