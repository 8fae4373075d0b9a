// The console: a hash router over two pages (the overview and one query),
// each refreshed by polling while it is shown, and the login form that
// --token needs.

import './style.css';
import * as api from './api';
import { h, clear } from './dom';
import { overview } from './overview';
import { queryPage } from './query';

export interface Page {
  refresh(): Promise<void>;
  interval: number;
  dispose?(): void;
}

const app = document.getElementById('app')!;
const main = h('main', { id: 'main' });
const conn = h('span', { class: 'conn', id: 'conn' });
app.append(
  h('header', { class: 'top' }, h('a', { href: '#/', class: 'brand' }, 'streamsql'), h('nav', {}, h('a', { href: '#/' }, 'Overview')), conn),
  main,
);

let page: Page | null = null;
let timer: number | null = null;
let generation = 0;

function go(hash: string) {
  if (location.hash === hash) route();
  else location.hash = hash;
}

async function tick(gen: number) {
  if (gen !== generation || !page) return;
  try {
    await page.refresh();
    conn.textContent = '';
    conn.className = 'conn';
  } catch (e) {
    if (gen !== generation) return;
    console.error('refresh failed', e);
    conn.textContent = e instanceof api.APIError ? `${e.problem.status}: ${e.message}` : e instanceof TypeError && /fetch/i.test(e.message) ? 'server unreachable' : `console error: ${e}`;
    conn.className = 'conn err';
  }
  if (gen === generation && page) timer = window.setTimeout(() => tick(gen), page.interval);
}

function route() {
  page?.dispose?.();
  if (timer !== null) clearTimeout(timer);
  const gen = ++generation;
  const parts = location.hash.replace(/^#\/?/, '').split('/').map(decodeURIComponent);
  if (parts[0] === 'query' && parts[1]) {
    page = queryPage(main, parts[1], parts[2] ?? 'results', go);
    document.title = `${parts[1]} · streamsql`;
  } else {
    page = overview(main, go);
    document.title = 'streamsql console';
  }
  tick(gen);
}

// The login form, shown once when the server asks for its token; the
// server answers with a session cookie.
api.onLoginNeeded(
  () =>
    new Promise<void>((resolve) => {
      const input = h('input', { type: 'password', id: 'token', autocomplete: 'current-password', placeholder: 'token', required: true }) as HTMLInputElement;
      const msg = h('div', { class: 'err', id: 'login-error' });
      const form = h('form', { class: 'login', id: 'login' },
        h('h2', {}, 'streamsql'),
        h('p', {}, 'This server was started with --token. Enter it once: the console keeps a session cookie until the browser closes.'),
        input, h('button', { type: 'submit', class: 'primary' }, 'Log in'), msg);
      const overlay = h('div', { class: 'overlay' }, form);
      form.addEventListener('submit', async (ev) => {
        ev.preventDefault();
        try {
          await api.login(input.value);
          overlay.remove();
          resolve();
        } catch (e) {
          clear(msg, e instanceof api.APIError && e.problem.status === 401 ? 'Wrong token.' : String(e));
          input.select();
        }
      });
      document.body.append(overlay);
      input.focus();
    }),
);

window.addEventListener('hashchange', route);
route();
