// The buyer's page, served at the public listener's "/": signs in with the buyer's cv_
// key (kept in this tab's sessionStorage only, sent as the Bearer header; no cookies) and
// shows that key's allocation alone, through GET /v1/allocations/current and its usage.
import '../styles.css';
import { h, fill, statusLine } from '../lib/dom.js';
import { makeApi } from '../lib/api.js';
import { allocationPanel } from '../lib/allocation_view.js';
import { usageChart } from '../lib/chart.js';

const key_key = 'cairva.api_key';
const refresh_interval_ms = 3000;

const main = document.getElementById('main');
const signOut = document.getElementById('sign-out');
let view = null;

// A 401 while signed in (the key was revoked): back to signing in.
const api = makeApi(() => sessionStorage.getItem(key_key) ?? '', () => {
  if (!view) return;  // the sign-in form says it itself
  sessionStorage.removeItem(key_key);
  show();
});

function signIn() {
  const input = h('input', { id: 'api-key', name: 'key', type: 'password', required: true, autocomplete: 'off',
    spellcheck: 'false', placeholder: 'cv_…', 'aria-describedby': 'key-help' });
  const status = statusLine();
  const form = h('form', { class: 'card sign-in', onsubmit: async (ev) => {
    ev.preventDefault();
    sessionStorage.setItem(key_key, input.value.trim());
    status.say('Checking…');
    try {
      await api.get('/v1/allocations/current');
      show();
    } catch (e) {
      sessionStorage.removeItem(key_key);
      status.say(e.status === 401 ? 'That key was refused (401 invalid_api_key).' : e.message, 'error');
      input.focus();
    }
  } },
  h('h1', {}, 'Your allocation'),
  h('label', { for: 'api-key' }, 'API key'),
  input,
  h('p', { id: 'key-help', class: 'help' }, 'The cv_ key your supplier gave you. It stays in this tab only.'),
  h('button', { type: 'submit', class: 'primary' }, 'Sign in'),
  status);
  fill(main, form);
  input.focus();
}

function allocationView() {
  const panel = allocationPanel();
  const chart = usageChart((q) => api.get('/v1/allocations/current/usage', q));
  const status = statusLine();
  const title = h('code', { 'data-field': 'allocation-id' }, '…');
  const el = h('section', { class: 'page' }, h('h1', {}, 'Allocation ', title), status, panel, chart);
  async function refresh() {
    try {
      const a = await api.get('/v1/allocations/current');
      title.textContent = a.id;
      panel.update(a);
      await chart.refresh();
      status.say('');
    } catch (e) {
      if (e.status !== 401) status.say(`${e.code}: ${e.message}`, 'error');
    }
  }
  return { el, refresh };
}

function show() {
  const signedIn = Boolean(sessionStorage.getItem(key_key));
  signOut.hidden = !signedIn;
  view = null;
  if (!signedIn) { signIn(); return; }
  view = allocationView();
  fill(main, view.el);
  view.refresh();
}

signOut.addEventListener('click', () => {
  sessionStorage.removeItem(key_key);
  show();
});

let refreshing = false;
setInterval(async () => {
  if (!view || refreshing || document.hidden) return;
  refreshing = true;
  try { await view.refresh(); } finally { refreshing = false; }
}, refresh_interval_ms);

show();
