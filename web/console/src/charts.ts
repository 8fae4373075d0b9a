// Small SVG line charts over time.

import { s, h } from './dom';

export interface Series {
  name: string;
  color: string;
  points: [number, number | null][]; // [time ms, value]
}

function nice(max: number): number {
  if (max <= 0) return 1;
  const p = Math.pow(10, Math.floor(Math.log10(max)));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= max) return m * p;
  return 10 * p;
}

export function lineChart(id: string, title: string, series: Series[], fmt: (v: number) => string, floor = 0, spanMs = 120_000): HTMLElement {
  const W = 470, H = 170, L = 68, R = 10, T = 12, B = 22;
  const now = Math.max(Date.now(), ...series.flatMap((x) => x.points.map((p) => p[0])));
  const t0 = now - spanMs;
  let max = floor;
  for (const x of series) for (const [t, v] of x.points) if (t >= t0 && v !== null && Number.isFinite(v)) max = Math.max(max, v);
  const ymax = nice(max);
  const X = (t: number) => L + ((t - t0) / spanMs) * (W - L - R);
  const Y = (v: number) => T + (1 - v / ymax) * (H - T - B);
  const svg = s('svg', { class: 'chart', width: W, height: H, viewBox: `0 0 ${W} ${H}` });
  for (let i = 0; i <= 4; i++) {
    const v = (ymax * i) / 4;
    svg.append(
      s('line', { x1: L, x2: W - R, y1: Y(v), y2: Y(v), stroke: i ? '#eceff3' : '#aab', 'stroke-width': 1 }),
      s('text', { x: L - 6, y: Y(v) + 4, 'text-anchor': 'end', class: 'axis' }, fmt(v)),
    );
  }
  for (let sec = 0; sec <= spanMs / 1000; sec += 30) {
    const x = X(now - sec * 1000);
    svg.append(s('text', { x, y: H - 6, 'text-anchor': 'middle', class: 'axis' }, sec ? `-${sec}s` : 'now'));
  }
  let points = 0;
  for (const x of series) {
    let d = '';
    let pen = false;
    for (const [t, v] of x.points) {
      if (t < t0 || v === null || !Number.isFinite(v)) {
        pen = false;
        continue;
      }
      d += `${pen ? 'L' : 'M'} ${X(t).toFixed(1)} ${Y(v).toFixed(1)} `;
      pen = true;
      points++;
    }
    if (d) svg.append(s('path', { d, fill: 'none', stroke: x.color, 'stroke-width': 1.8, 'stroke-linejoin': 'round', class: 'series' }));
  }
  const legend = h('div', { class: 'legend' }, series.map((x) => {
    const last = [...x.points].reverse().find((p) => p[1] !== null);
    return h('span', {}, h('i', { style: `background:${x.color}` }), `${x.name}: ${last && last[1] !== null ? fmt(last[1]) : '–'}`);
  }));
  return h('figure', { class: 'chart-box', id, 'data-points': points }, h('figcaption', {}, title), svg, legend);
}
