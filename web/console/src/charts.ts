// Line charts over time, drawn by uPlot (canvas): one instance per chart,
// kept while its tab is shown and fed new samples with setData, so a
// refresh redraws without rebuilding anything.

import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { h, clear } from './dom';

export interface SeriesSpec {
  name: string;
  color: string;
}

function nice(max: number): number {
  if (max <= 0) return 1;
  const p = Math.pow(10, Math.floor(Math.log10(max)));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= max) return m * p;
  return 10 * p;
}

export class LineChart {
  readonly el: HTMLElement;
  private u: uPlot;
  private legend: HTMLElement;
  private t1 = Date.now() / 1000;

  // floor is the least top of the y axis; spanMs how much time it shows.
  constructor(id: string, title: string, private series: SeriesSpec[], private fmt: (v: number) => string, private floor = 0, private spanMs = 120_000) {
    this.legend = h('div', { class: 'legend' });
    const plot = h('div', { class: 'chart' });
    this.el = h('figure', { class: 'chart-box', id, 'data-points': 0 }, h('figcaption', {}, title), plot, this.legend);
    const opts: uPlot.Options = {
      width: 470,
      height: 170,
      legend: { show: false },
      cursor: { drag: { x: false, y: false } },
      scales: {
        x: { time: true, range: () => [this.t1 - this.spanMs / 1000, this.t1] },
        y: { range: (_u, _min, max) => [0, nice(Math.max(this.floor, Number.isFinite(max) ? max : 0))] },
      },
      axes: [
        { stroke: '#7a8190', grid: { stroke: '#eceff3' }, ticks: { stroke: '#eceff3' }, font: '10px system-ui, sans-serif',
          values: (_u, splits) => splits.map((t) => {
            const ago = Math.round(this.t1 - t);
            return ago <= 0 ? 'now' : `-${ago}s`;
          }) },
        { stroke: '#7a8190', grid: { stroke: '#eceff3' }, ticks: { stroke: '#eceff3' }, font: '10px system-ui, sans-serif', size: 74,
          values: (_u, splits) => splits.map((v) => this.fmt(v)) },
      ],
      series: [{}, ...series.map((x) => ({ label: x.name, stroke: x.color, width: 1.8, points: { show: false }, spanGaps: false }))],
    };
    this.u = new uPlot(opts, [[], ...series.map(() => [])], plot);
  }

  // update draws samples: times in ms, and per series its values at them
  // (null: no value then).
  update(times: number[], values: (number | null)[][]) {
    this.t1 = Math.max(Date.now(), ...times) / 1000;
    const t0 = this.t1 - this.spanMs / 1000;
    const xs = times.map((t) => t / 1000);
    const ys = values.map((v) => v.map((x) => (x === null || !Number.isFinite(x) ? null : x)));
    let points = 0;
    for (const y of ys) y.forEach((v, i) => v !== null && xs[i] >= t0 && points++);
    this.u.setData([xs, ...ys] as uPlot.AlignedData);
    this.el.dataset.points = String(points);
    clear(this.legend, this.series.map((x, k) => {
      const last = [...ys[k]].reverse().find((v) => v !== null);
      return h('span', {}, h('i', { style: `background:${x.color}` }), `${x.name}: ${last === undefined || last === null ? '–' : this.fmt(last)}`);
    }));
  }

  destroy() {
    this.u.destroy();
  }
}
