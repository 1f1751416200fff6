// Agreements: a create form that checks what the admin API checks (SPEC §7) before
// sending, and the paged list of agreements.
import { h, fill, keyedChildren, statusLine, table } from '../lib/dom.js';
import { int, utc, localInputToIso, toLocalInput } from '../lib/format.js';
import { pager } from '../lib/pager.js';
import { isMissingRoute } from '../lib/api.js';

// The admin API's bounds (src/admin/limits.h).
const name_bytes_max = 256;
const models_max = 256;
const service_tiers_max = 16;
const quantity_max = 2 ** 53;
const default_duration_days = 30;

const bytes = (s) => new TextEncoder().encode(s).length;

function field(name, label, attrs = {}, help) {
  const input = h('input', { id: `agr-${name}`, name, 'aria-describedby': help ? `agr-${name}-help` : undefined, ...attrs });
  return h('div', { class: 'field' }, h('label', { for: `agr-${name}` }, label), input,
    help ? h('p', { id: `agr-${name}-help`, class: 'help' }, help) : null);
}

// The request body the form describes, or the problems that the API would answer 400 for.
export function readAgreementForm(values, now = new Date()) {
  const problems = [];
  const body = {};
  for (const k of ['supplier', 'buyer', 'provider']) {
    const v = (values[k] ?? '').trim();
    if (!v || bytes(v) > name_bytes_max || v.includes('\0')) {
      problems.push([k, `${k}: must be a non-empty string of at most ${name_bytes_max} bytes`]);
    }
    body[k] = v;
  }
  for (const [k, max] of [['models', models_max], ['service_tiers', service_tiers_max]]) {
    const list = (values[k] ?? '').split(',').map((x) => x.trim()).filter(Boolean);
    if (list.length > max || list.some((x) => bytes(x) > name_bytes_max)) {
      problems.push([k, `${k}: must be an array of at most ${max} non-empty strings of at most ${name_bytes_max} bytes`]);
    }
    if (list.length) body[k] = list;
  }
  for (const k of ['input_tokens', 'output_tokens', 'requests_per_minute', 'tokens_per_minute', 'max_concurrency']) {
    const text = String(values[k] ?? '').trim();
    const n = Number(text);
    if (!/^\d+$/.test(text) || !Number.isSafeInteger(n) || n < 1 || n > quantity_max) {
      problems.push([k, `${k}: must be an integer between 1 and ${quantity_max}, got ${text || 'nothing'}`]);
    }
    body[k] = n;
  }
  const starts = localInputToIso(values.starts_at);
  const ends = localInputToIso(values.ends_at);
  if (starts === null) problems.push(['starts_at', 'starts_at: must be a time']);
  if (!ends) problems.push(['ends_at', 'ends_at: required']);
  if (starts) body.starts_at = starts;
  if (ends) body.ends_at = ends;
  if (ends && starts !== null && Date.parse(ends) <= (starts ? Date.parse(starts) : now.getTime())) {
    problems.push(['ends_at', 'ends_at must be later than starts_at']);
  }
  return { body, problems };
}

function createForm(api, onCreated) {
  const status = statusLine();
  const result = h('div', { class: 'card result', hidden: true, 'aria-live': 'polite' });
  const ends = new Date(Date.now() + default_duration_days * 86_400_000);
  const num = () => ({ type: 'number', min: 1, step: 1, required: true, inputmode: 'numeric' });
  const form = h('form', { class: 'card agreement-form', novalidate: true, 'aria-label': 'New agreement' },
    h('h2', {}, 'New agreement'),
    h('div', { class: 'grid' },
      field('supplier', 'Supplier', { required: true, maxlength: name_bytes_max, autocomplete: 'off' }),
      field('buyer', 'Buyer', { required: true, maxlength: name_bytes_max, autocomplete: 'off' }),
      field('provider', 'Provider', { required: true, autocomplete: 'off' }, 'A provider name from the gateway\'s config.'),
      field('models', 'Models (optional)', { autocomplete: 'off' }, 'Comma-separated allow-list; empty allows any.'),
      field('service_tiers', 'Service tiers (optional)', { autocomplete: 'off' }, 'Comma-separated, beyond auto/default.'),
      field('input_tokens', 'Input tokens', num()),
      field('output_tokens', 'Output tokens', num()),
      field('starts_at', 'Starts (optional)', { type: 'datetime-local' }, 'Your local time; empty starts now.'),
      field('ends_at', 'Ends', { type: 'datetime-local', required: true, value: toLocalInput(ends) }, 'Your local time.'),
      field('requests_per_minute', 'Requests per minute', num()),
      field('tokens_per_minute', 'Tokens per minute', num()),
      field('max_concurrency', 'Max concurrency', num())),
    h('button', { type: 'submit', class: 'primary' }, 'Create agreement'),
    status);

  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const values = Object.fromEntries(new FormData(form));
    const { body, problems } = readAgreementForm(values);
    for (const input of form.querySelectorAll('input')) input.removeAttribute('aria-invalid');
    if (problems.length) {
      for (const [name] of problems) form.elements[name]?.setAttribute('aria-invalid', 'true');
      status.say(problems.map((p) => p[1]).join('; '), 'error');
      form.elements[problems[0][0]]?.focus();
      return;
    }
    status.say('Creating…');
    try {
      const r = await api.post('/admin/v1/agreements', body);
      status.say(`Created ${r.agreement.id}.`, 'ok');
      fill(result,
        h('h2', {}, 'Agreement created'),
        h('p', {}, r.agreement.id, ' → allocation ', h('a', { href: `#/allocations/${r.allocation.id}`, 'data-field': 'new-allocation' }, r.allocation.id)),
        h('p', {}, `API key ${r.api_key.id}; its secret is shown this once — give it to the buyer now:`),
        h('p', {}, h('code', { class: 'secret', 'data-field': 'new-secret', 'data-key-id': r.api_key.id }, r.api_key.secret)));
      result.hidden = false;
      result.focus?.();
      onCreated();
    } catch (e) {
      status.say(`${e.code}: ${e.message}`, 'error');
    }
  });
  return h('div', {}, form, result);
}

function row(a) {
  return [h('td', {}, h('code', {}, a.id)), h('td', {}, a.supplier), h('td', {}, a.buyer), h('td', {}, a.provider),
    h('td', {}, h('span', { class: `state state-${a.state}` }, a.state)),
    h('td', { class: 'num' }, int(a.input_tokens)), h('td', { class: 'num' }, int(a.output_tokens)),
    h('td', {}, utc(a.starts_at)), h('td', {}, utc(a.ends_at))];
}

export function agreementsPage({ api }) {
  const status = statusLine();
  const { wrap, tbody } = table('Agreements', ['Agreement', 'Supplier', 'Buyer', 'Provider', 'State', 'Input', 'Output', 'Starts', 'Ends']);
  const pages = pager(async (after, stale) => {
    try {
      const page = await api.get('/admin/v1/agreements', { after, limit: 25 });
      if (stale()) return null;
      keyedChildren(tbody, page.data, (a) => a.id, (a) => h('tr', {}, row(a)), (tr, a) => tr.replaceChildren(...row(a)));
      status.say(page.data.length ? '' : 'No agreement yet.');
      return { next: page.has_more ? page.data[page.data.length - 1].id : undefined };
    } catch (e) {
      status.say(isMissingRoute(e) ? 'Listing agreements is not served by this gateway yet (GET /admin/v1/agreements answered 404); creating works.' : e.message, 'error');
      return {};
    }
  });
  const el = h('section', { class: 'page' }, h('h1', {}, 'Agreements'),
    createForm(api, () => pages.reload()), wrap, status, pages);
  return { el, title: 'Agreements', refresh: () => pages.reload() };
}
