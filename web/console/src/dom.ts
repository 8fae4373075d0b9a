// A few DOM helpers: the console is plain TypeScript.

type Child = Node | string | number | null | undefined | false | Child[];
type Attrs = Record<string, string | number | boolean | EventListener | null | undefined>;

function append(el: Element, c: Child) {
  if (c === null || c === undefined || c === false) return;
  if (Array.isArray(c)) c.forEach((x) => append(el, x));
  else el.append(c instanceof Node ? c : String(c));
}

function setAttrs(el: Element, attrs: Attrs) {
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
}

// h builds an HTML element: h('div', {class: 'x'}, 'text', child).
export function h(tag: string, attrs: Attrs = {}, ...children: Child[]): HTMLElement {
  const el = document.createElement(tag);
  setAttrs(el, attrs);
  append(el, children);
  return el;
}

const SVGNS = 'http://www.w3.org/2000/svg';

// s builds an SVG element.
export function s(tag: string, attrs: Attrs = {}, ...children: Child[]): SVGElement {
  const el = document.createElementNS(SVGNS, tag);
  setAttrs(el, attrs);
  append(el, children);
  return el;
}

export function clear(el: Element, ...children: Child[]) {
  el.replaceChildren();
  append(el, children);
}

export function fmtInt(n: number | undefined | null): string {
  if (n === undefined || n === null || Number.isNaN(n)) return '–';
  return Math.round(n).toLocaleString('en-US');
}

export function fmtRate(n: number | undefined | null): string {
  if (n === undefined || n === null || !Number.isFinite(n)) return '–';
  if (n >= 1e6) return (n / 1e6).toFixed(1) + 'M/s';
  if (n >= 1e4) return (n / 1e3).toFixed(1) + 'k/s';
  return (n >= 100 ? Math.round(n) : Math.round(n * 10) / 10) + '/s';
}

export function fmtBytes(n: number | undefined | null): string {
  if (n === undefined || n === null) return '–';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) {
    n /= 1024;
    i++;
  }
  return (i === 0 ? n : n.toFixed(1)) + ' ' + units[i];
}

// fmtDuration renders seconds compactly: 850ms, 12.5s, 4m 10s, 3h 2m, 2d 4h.
export function fmtDuration(sec: number | undefined | null): string {
  if (sec === undefined || sec === null || !Number.isFinite(sec)) return '–';
  const neg = sec < 0;
  sec = Math.abs(sec);
  let out: string;
  if (sec < 1) out = Math.round(sec * 1000) + 'ms';
  else if (sec < 60) out = (Math.round(sec * 10) / 10) + 's';
  else if (sec < 3600) out = `${Math.floor(sec / 60)}m ${Math.floor(sec % 60)}s`;
  else if (sec < 86400) out = `${Math.floor(sec / 3600)}h ${Math.floor((sec % 3600) / 60)}m`;
  else out = `${Math.floor(sec / 86400)}d ${Math.floor((sec % 86400) / 3600)}h`;
  return (neg ? '-' : '') + out;
}

export function fmtValue(v: unknown): string {
  if (v === null || v === undefined) return 'NULL';
  if (typeof v === 'number') return Number.isInteger(v) ? String(v) : String(Math.round(v * 1e6) / 1e6);
  return String(v);
}

export function stateBadge(state: string): HTMLElement {
  return h('span', { class: `badge state-${state}` }, state);
}

// csv renders rows as RFC 4180 CSV.
export function csv(columns: string[], rows: Record<string, unknown>[]): string {
  const cell = (v: unknown) => {
    if (v === null || v === undefined) return '';
    const t = String(v);
    return /[",\r\n]/.test(t) ? '"' + t.replace(/"/g, '""') + '"' : t;
  };
  return [columns.map(cell).join(','), ...rows.map((r) => columns.map((c) => cell(r[c])).join(','))].join('\r\n') + '\r\n';
}

export function download(filename: string, text: string, type = 'text/csv') {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const a = h('a', { href: url, download: filename });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

// table renders rows with a header; rows may carry a class.
export function dataTable(columns: string[], rows: Record<string, unknown>[], attrs: Attrs = {}): HTMLElement {
  return h(
    'table',
    { class: 'data', ...attrs },
    h('thead', {}, h('tr', {}, columns.map((c) => h('th', {}, c)))),
    h(
      'tbody',
      {},
      rows.map((r) => h('tr', {}, columns.map((c) => h('td', { class: r[c] === null ? 'null' : null }, fmtValue(r[c]))))),
    ),
  );
}
