// The operators' console, served at the admin listener's "/". Signs in with the admin
// token (kept in this tab's sessionStorage only, sent as the Bearer header; no cookies)
// and works through the admin API alone. Pages are chosen by the URL's #fragment.
import '../styles.css';
import { h, fill, statusLine } from '../lib/dom.js';
import { makeApi } from '../lib/api.js';
import { allocationsPage } from './allocations.js';
import { allocationPage } from './allocation.js';
import { agreementsPage } from './agreements.js';
import { eventsPage, conflictsPage } from './ledger.js';
import { reconcilePage } from './reconcile.js';

const token_key = 'cairva.admin_token';
// Numbers refresh by themselves this often (SPEC-CONSOLE §5: every few seconds).
const refresh_interval_ms = 3000;

const main = document.getElementById('main');
const nav = document.getElementById('nav');
const signOut = document.getElementById('sign-out');
let page = null;

// A 401 while signed in (the token was changed under the gateway): back to signing in.
const api = makeApi(() => sessionStorage.getItem(token_key) ?? '', () => {
  if (!page) return;  // the sign-in form says it itself
  sessionStorage.removeItem(token_key);
  route();
});

const routes = [
  { re: /^\/allocations\/([^/]+)$/, page: allocationPage, nav: 'allocations' },
  { re: /^\/(allocations)?$/, page: allocationsPage, nav: 'allocations' },
  { re: /^\/agreements$/, page: agreementsPage, nav: 'agreements' },
  { re: /^\/events$/, page: eventsPage, nav: 'events' },
  { re: /^\/conflicts$/, page: conflictsPage, nav: 'conflicts' },
  { re: /^\/reconcile$/, page: reconcilePage, nav: 'reconcile' },
];

function signInPage() {
  const input = h('input', { id: 'token', name: 'token', type: 'password', required: true, autocomplete: 'off',
    spellcheck: 'false', 'aria-describedby': 'token-help' });
  const status = statusLine();
  const form = h('form', { class: 'card sign-in', onsubmit: async (ev) => {
    ev.preventDefault();
    sessionStorage.setItem(token_key, input.value.trim());
    status.say('Checking…');
    try {
      await api.get('/admin/v1/allocations', { limit: 1 });
      route();
    } catch (e) {
      sessionStorage.removeItem(token_key);
      status.say(e.status === 401 ? 'That token was refused (401 invalid_admin_token).' : e.message, 'error');
      input.focus();
    }
  } },
  h('h1', {}, 'Cairva operators'),
  h('label', { for: 'token' }, 'Admin token'),
  input,
  h('p', { id: 'token-help', class: 'help' },
    'The value of the gateway\'s admin token variable (CAIRVA_ADMIN_TOKEN). It stays in this tab only.'),
  h('button', { type: 'submit', class: 'primary' }, 'Sign in'),
  status);
  return { el: form, focus: input };
}

function route() {
  const signedIn = Boolean(sessionStorage.getItem(token_key));
  nav.hidden = !signedIn;
  signOut.hidden = !signedIn;
  page?.dispose?.();
  page = null;
  if (!signedIn) {
    const p = signInPage();
    fill(main, p.el);
    p.focus.focus();
    document.title = 'Sign in · Cairva';
    return;
  }
  const hash = decodeURIComponent(location.hash.replace(/^#/, '')) || '/';
  const [path, query] = hash.split('?');
  const params = new URLSearchParams(query ?? '');
  const r = routes.find((x) => x.re.test(path));
  for (const a of nav.querySelectorAll('a')) {
    if (a.dataset.nav === r?.nav) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  if (!r) {
    fill(main, h('p', { class: 'status error' }, `No page at #${path}.`));
    return;
  }
  const m = path.match(r.re);
  page = r.page({ api, params, id: m[1] });
  fill(main, page.el);
  document.title = `${page.title} · Cairva`;
  main.focus({ preventScroll: true });
  page.refresh?.();
}

signOut.addEventListener('click', () => {
  sessionStorage.removeItem(token_key);
  location.hash = '';
  route();
});
window.addEventListener('hashchange', route);

let refreshing = false;
setInterval(async () => {
  if (!page?.refresh || refreshing || document.hidden) return;
  refreshing = true;
  try { await page.refresh(); } finally { refreshing = false; }
}, refresh_interval_ms);

route();
