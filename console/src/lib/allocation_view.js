// An allocation's numbers (the shape of GET /v1/allocations/current and
// /admin/v1/allocations/{id}): allowance bars, limits and current use. Shared by the
// operator and buyer consoles; update() is called on every refresh.
import { h } from './dom.js';
import { int, percent, utc } from './format.js';

function allowanceBar(direction, label) {
  const used = h('span', { class: 'seg used' });
  const held = h('span', { class: 'seg held' });
  const bar = h('div', { class: 'bar', role: 'img' }, used, held);
  const value = (field) => h('dd', { 'data-field': `${field}-${direction}` }, '–');
  const dd = { used: value('used'), held: value('held'), remaining: value('remaining'), allowance: value('allowance') };
  const el = h('div', { class: 'allowance', 'data-direction': direction },
    h('h3', {}, label),
    bar,
    h('dl', { class: 'figures' },
      h('div', {}, h('dt', {}, h('span', { class: 'key used' }), 'Used'), dd.used),
      h('div', {}, h('dt', {}, h('span', { class: 'key held' }), 'Held'), dd.held),
      h('div', {}, h('dt', {}, h('span', { class: 'key remaining' }), 'Remaining'), dd.remaining),
      h('div', {}, h('dt', {}, 'Allowance'), dd.allowance)));
  el.update = (a) => {
    const key = `${direction}_tokens`;
    const total = a.allowance[key];
    const u = percent(a.used[key], total);
    const hd = Math.min(100 - u, percent(a.held[key], total));
    used.style.width = `${u}%`;
    held.style.width = `${hd}%`;
    bar.setAttribute('aria-label',
      `${label}: ${int(a.used[key])} used, ${int(a.held[key])} held, ${int(a.remaining[key])} remaining of ${int(total)}`);
    dd.used.textContent = int(a.used[key]);
    dd.held.textContent = int(a.held[key]);
    dd.remaining.textContent = int(a.remaining[key]);
    dd.allowance.textContent = int(total);
  };
  return el;
}

function meterRow(label, field) {
  const now = h('td', { 'data-field': field }, '–');
  const limit = h('td', {}, '–');
  const meter = h('meter', { min: 0, max: 1, value: 0, 'aria-label': label });
  const row = h('tr', {}, h('th', { scope: 'row' }, label), now, limit, h('td', { class: 'meter-cell' }, meter));
  row.set = (current, max) => {
    now.textContent = int(current);
    limit.textContent = max === undefined ? '' : int(max);
    meter.max = max || 1;
    meter.value = current;
    meter.high = (max || 1) * 0.8;
    meter.hidden = max === undefined;
  };
  return row;
}

export function allocationPanel() {
  const input = allowanceBar('input', 'Input tokens');
  const output = allowanceBar('output', 'Output tokens');
  const rows = {
    rpm: meterRow('Requests in the last minute', 'requests-last-minute'),
    tpm: meterRow('Tokens booked in the last minute', 'tokens-last-minute'),
    conc: meterRow('In flight', 'in-flight'),
    pending: meterRow('Usage pending', 'usage-pending'),
  };
  const state = h('span', { class: 'state', 'data-field': 'state' }, '–');
  const window_ = h('span', { 'data-field': 'window' }, '–');
  const el = h('section', { class: 'allocation-panel', 'aria-label': 'Allowance and limits' },
    h('p', { class: 'meta' }, 'State ', state, ' · window ', window_),
    h('div', { class: 'allowances' }, input, output),
    h('div', { class: 'table-wrap' },
      h('table', { class: 'limits' },
        h('caption', {}, 'Limits and current use'),
        h('thead', {}, h('tr', {}, ['', 'Now', 'Limit', ''].map((t) => h('th', { scope: 'col' }, t)))),
        h('tbody', {}, rows.rpm, rows.tpm, rows.conc, rows.pending))));
  el.update = (a) => {
    state.textContent = a.state;
    state.className = `state state-${a.state}`;
    window_.textContent = `${utc(a.window.starts_at)} → ${utc(a.window.ends_at)}`;
    input.update(a);
    output.update(a);
    rows.rpm.set(a.current.requests_last_minute, a.limits.requests_per_minute);
    rows.tpm.set(a.current.tokens_last_minute, a.limits.tokens_per_minute);
    rows.conc.set(a.current.in_flight, a.limits.max_concurrency);
    rows.pending.set(a.current.usage_pending, undefined);
  };
  return el;
}
