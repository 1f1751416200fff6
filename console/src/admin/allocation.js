// One allocation: its agreement, numbers, usage chart, in-flight and usage_pending
// requests (a reconcile form each), keys, and suspend / resume / cancel.
import { h, fill, keyedChildren, statusLine, table, confirmDialog } from '../lib/dom.js';
import { int, utc } from '../lib/format.js';
import { allocationPanel } from '../lib/allocation_view.js';
import { usageChart } from '../lib/chart.js';
import { isMissingRoute } from '../lib/api.js';

// Requests of each state shown here; the rest are a click away in the requests listing.
const requests_shown_max = 200;

function agreementBlock(agr) {
  const models = agr.models?.length ? agr.models.join(', ') : 'any model';
  return h('dl', { class: 'agreement' },
    h('div', {}, h('dt', {}, 'Agreement'), h('dd', {}, agr.id, ' ', h('span', { class: `state state-${agr.state}`, 'data-field': 'agreement-state' }, agr.state))),
    h('div', {}, h('dt', {}, 'Supplier → buyer'), h('dd', { 'data-field': 'parties' }, `${agr.supplier} → ${agr.buyer}`)),
    h('div', {}, h('dt', {}, 'Provider'), h('dd', {}, agr.provider)),
    h('div', {}, h('dt', {}, 'Models'), h('dd', {}, models)),
    agr.service_tiers?.length ? h('div', {}, h('dt', {}, 'Service tiers'), h('dd', {}, agr.service_tiers.join(', '))) : null);
}

function numberInput(name, label, value) {
  const id = `${name}-${Math.random().toString(36).slice(2, 8)}`;
  return [h('label', { for: id }, label),
    h('input', { id, name, type: 'number', min: 0, step: 1, required: true, inputmode: 'numeric', value: value ?? '' })];
}

// A usage_pending request with its reconcile form (POST /admin/v1/requests/{id}/reconcile).
function pendingRow(api, r, onBooked) {
  const status = statusLine();
  const evidenceId = `evidence-${r.id}`;
  const reported = r.reported_usage;
  const force = h('input', { type: 'checkbox', name: 'force' });
  const form = h('form', { class: 'reconcile', 'aria-label': `Reconcile ${r.id}`, onsubmit: async (ev) => {
    ev.preventDefault();
    const f = new FormData(form);
    const body = { input_tokens: Number(f.get('input_tokens')), output_tokens: Number(f.get('output_tokens')),
      evidence: String(f.get('evidence')).trim() };
    if (force.checked) body.force = true;
    if (!body.evidence) { status.say('evidence: required (what the counts come from)', 'error'); return; }
    const button = form.querySelector('button[type=submit]');
    button.disabled = true;
    try {
      const res = await api.post(`/admin/v1/requests/${encodeURIComponent(r.id)}/reconcile`, body);
      status.say(`Booked as ${res.event.id}.`, 'ok');
      form.querySelectorAll('input, textarea, button').forEach((x) => { x.disabled = true; });
      form.closest('li')?.classList.add('done');
      onBooked();
    } catch (e) {
      status.say(`${e.code}: ${e.message}`, 'error');
      button.disabled = false;
    }
  } },
  h('div', { class: 'fields' },
    h('div', {}, ...numberInput('input_tokens', 'Input tokens', reported?.input_tokens)),
    h('div', {}, ...numberInput('output_tokens', 'Output tokens', reported?.output_tokens)),
    h('div', { class: 'wide' }, h('label', { for: evidenceId }, 'Evidence'),
      h('textarea', { id: evidenceId, name: 'evidence', rows: 2, required: true, maxlength: 65536,
        placeholder: 'e.g. provider usage export 2026-12-01, line 4411' }))),
  h('label', { class: 'check' }, force, ' Force (counts above 10× the hold)'),
  h('button', { type: 'submit', class: 'primary' }, 'Book these counts'),
  status);
  return h('li', { class: 'pending card', 'data-request': r.id },
    h('p', {}, h('code', {}, r.id), ` · ${r.model} · started ${utc(r.started_at)} · hold ${int(r.hold.input_tokens)} in / ${int(r.hold.output_tokens)} out`,
      reported ? ` · the provider reported ${int(reported.input_tokens)} / ${int(reported.output_tokens)}` : ''),
    form);
}

function keyCells(api, k, onChange, status) {
  const revoke = h('button', { type: 'button', class: 'danger', disabled: k.revoked, onclick: async () => {
    const ok = await confirmDialog(`Revoke ${k.id}?`,
      'Requests with this key are refused from the next one on. This cannot be undone.', 'Revoke key');
    if (!ok) return;
    try {
      await api.del(`/admin/v1/keys/${encodeURIComponent(k.id)}`);
      status.say(`${k.id} revoked.`, 'ok');
      onChange();
    } catch (e) { status.say(`${e.code}: ${e.message}`, 'error'); }
  } }, k.revoked ? 'Revoked' : 'Revoke');
  return [h('td', {}, h('code', {}, k.id)), h('td', {}, utc(k.created_at)),
    h('td', { 'data-field': 'key-state' }, k.revoked ? 'revoked' : 'active'), h('td', {}, revoke)];
}

export function allocationPage({ api, id }) {
  const panel = allocationPanel();
  const chart = usageChart((q) => api.get(`/admin/v1/allocations/${encodeURIComponent(id)}/usage`, q));
  const status = statusLine();
  const agreementBox = h('div', {}, 'Loading…');
  const actions = h('div', { class: 'actions' });
  const flight = table('In flight', ['Request', 'Started', 'Model', 'Stream', 'Hold in', 'Hold out']);
  const pendingList = h('ul', { class: 'pending-list', 'aria-label': 'Usage pending requests' });
  const pendingEmpty = h('p', { class: 'help' }, 'No request waits for usage.');
  const flightEmpty = h('p', { class: 'help' }, 'No request in flight.');
  const keys = table('API keys', ['Key', 'Created', 'State', '']);
  const keyStatus = statusLine();
  const secretBox = h('div', { class: 'secret-box', hidden: true });
  let agreement = null;

  async function act(label, question, detail, path) {
    if (!await confirmDialog(question, detail, label)) return;
    try {
      await api.post(path, {});
      status.say(`${label}: done.`, 'ok');
      if (agreement) agreement = await api.get(`/admin/v1/agreements/${encodeURIComponent(agreement.id)}`);
      await refresh();
    } catch (e) { status.say(`${label}: ${e.code}: ${e.message}`, 'error'); }
  }
  const enc = encodeURIComponent(id);
  fill(actions,
    h('button', { type: 'button', 'data-action': 'suspend', onclick: () => act('Suspend', `Suspend ${id}?`,
      'New requests are refused (403 allocation_not_active) until it is resumed; requests in flight settle normally.',
      `/admin/v1/allocations/${enc}/suspend`) }, 'Suspend'),
    h('button', { type: 'button', 'data-action': 'resume', onclick: () => act('Resume', `Resume ${id}?`,
      'Requests are admitted again (from the window\'s start).', `/admin/v1/allocations/${enc}/resume`) }, 'Resume'),
    h('button', { type: 'button', class: 'danger', 'data-action': 'cancel', onclick: () => act('Cancel agreement',
      `Cancel agreement ${agreement?.id ?? ''}?`,
      'The agreement is cancelled for good and its allocation refused from now on; requests in flight settle normally.',
      `/admin/v1/agreements/${encodeURIComponent(agreement?.id ?? '')}/cancel`) }, 'Cancel agreement'));

  const createKey = h('button', { type: 'button', onclick: async () => {
    try {
      const res = await api.post(`/admin/v1/allocations/${enc}/keys`, {});
      const secret = res.api_key.secret;
      const copy = h('button', { type: 'button', onclick: async () => {
        try { await navigator.clipboard.writeText(secret); keyStatus.say('Copied.', 'ok'); } catch { keyStatus.say('Select the secret and copy it.', 'error'); }
      } }, 'Copy');
      fill(secretBox, h('p', {}, `New key ${res.api_key.id}. Its secret is shown this once: give it to the buyer now.`),
        h('p', {}, h('code', { class: 'secret', 'data-field': 'new-secret', 'data-key-id': res.api_key.id }, secret), ' ', copy));
      secretBox.hidden = false;
      await loadKeys();
    } catch (e) { keyStatus.say(`${e.code}: ${e.message}`, 'error'); }
  } }, 'Create key');

  async function loadKeys() {
    try {
      const list = await api.all(`/admin/v1/allocations/${enc}/keys`);
      keyedChildren(keys.tbody, list, (k) => k.id, (k) => h('tr', {}, keyCells(api, k, loadKeys, keyStatus)),
        (row, k) => row.replaceChildren(...keyCells(api, k, loadKeys, keyStatus)));
    } catch (e) {
      if (isMissingRoute(e)) keyStatus.say('Listing keys is not served by this gateway yet (GET …/keys answered 404); creating and revoking still work.', 'error');
      else keyStatus.say(`Keys: ${e.message}`, 'error');
    }
  }

  async function loadRequests() {
    const [inFlight, pending] = await Promise.all(['in_flight', 'usage_pending'].map((state) =>
      api.get('/admin/v1/requests', { allocation_id: id, state, limit: requests_shown_max })));
    keyedChildren(flight.tbody, inFlight.data, (r) => r.id, (r) => h('tr', {},
      h('td', {}, h('code', {}, r.id)), h('td', {}, utc(r.started_at)), h('td', {}, r.model),
      h('td', {}, r.stream ? 'yes' : 'no'), h('td', { class: 'num' }, int(r.hold.input_tokens)),
      h('td', { class: 'num' }, int(r.hold.output_tokens))));
    flight.wrap.hidden = inFlight.data.length === 0;
    flightEmpty.hidden = inFlight.data.length > 0;
    // A row just booked stays, showing its event, while the page is open.
    const done = [...pendingList.children].filter((li) => li.classList.contains('done')).map((li) => ({ id: li.dataset.key }));
    const rows = [...pending.data, ...done.filter((d) => !pending.data.some((r) => r.id === d.id))];
    keyedChildren(pendingList, rows, (r) => r.id, (r) => pendingRow(api, r, () => refresh()));
    pendingEmpty.hidden = pending.data.length > 0;
  }

  async function refresh() {
    try {
      const a = await api.get(`/admin/v1/allocations/${enc}`);
      panel.update(a);
      if (!agreement) agreement = await api.get(`/admin/v1/agreements/${encodeURIComponent(a.agreement_id)}`);
      fill(agreementBox, agreementBlock(agreement));
      await Promise.all([loadRequests(), chart.refresh()]);
      status.say('');
    } catch (e) { status.say(`${e.code}: ${e.message}`, 'error'); }
  }

  const el = h('section', { class: 'page' },
    h('p', { class: 'crumbs' }, h('a', { href: '#/allocations' }, 'Allocations'), ' / '),
    h('h1', {}, h('code', { 'data-field': 'allocation-id' }, id)),
    agreementBox, actions, status, panel, chart,
    h('h2', {}, 'Requests in flight'), flightEmpty, flight.wrap,
    h('h2', {}, 'Usage pending'), pendingEmpty, pendingList,
    h('h2', {}, 'Keys'), h('div', { class: 'actions' }, createKey), secretBox, keys.wrap, keyStatus,
    h('p', {}, h('a', { href: `#/events?allocation_id=${enc}` }, 'Usage events'), ' · ',
      h('a', { href: `#/conflicts?allocation_id=${enc}` }, 'Conflicts')));
  loadKeys();
  return { el, title: id, refresh };
}
