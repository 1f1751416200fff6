// Allocations: one table, filtered by state, supplier and buyer, paged with `after`. The
// admin listing filters (GET /admin/v1/allocations?state=&supplier=&buyer=, exact matches):
// each page shown is one page of the listing.
import { h, keyedChildren, statusLine, table } from '../lib/dom.js';
import { int, percent } from '../lib/format.js';
import { pager } from '../lib/pager.js';
import { agreementsOf } from './agreement_cache.js';

const states = ['', 'ready', 'active', 'suspended', 'depleted', 'expired', 'cancelled'];

function miniBar(a, dir) {
  const key = `${dir}_tokens`;
  const used = h('span', { class: 'seg used' });
  const held = h('span', { class: 'seg held' });
  used.style.width = `${percent(a.used[key], a.allowance[key])}%`;
  held.style.width = `${Math.min(100 - percent(a.used[key], a.allowance[key]), percent(a.held[key], a.allowance[key]))}%`;
  return h('div', { class: 'mini' },
    h('div', { class: 'bar small', role: 'img',
      'aria-label': `${dir}: ${int(a.used[key])} used, ${int(a.held[key])} held of ${int(a.allowance[key])}` }, used, held),
    h('span', { class: 'num' }, `${int(a.used[key])} / ${int(a.allowance[key])}`));
}

function cells(a, agr) {
  return [
    h('td', {}, h('a', { href: `#/allocations/${a.id}` }, a.id)),
    h('td', {}, agr?.supplier ?? '–'),
    h('td', {}, agr?.buyer ?? '–'),
    h('td', {}, h('span', { class: `state state-${a.state}` }, a.state)),
    h('td', {}, miniBar(a, 'input')),
    h('td', {}, miniBar(a, 'output')),
    h('td', { class: 'num' }, `${int(a.current.requests_last_minute)} / ${int(a.limits.requests_per_minute)}`),
    h('td', { class: 'num' }, `${int(a.current.in_flight)} / ${int(a.limits.max_concurrency)}`),
    h('td', { class: 'num' }, int(a.current.usage_pending)),
  ];
}

export function allocationsPage({ api }) {
  const state = h('select', { id: 'f-state', name: 'state' }, states.map((s) => h('option', { value: s }, s || 'any')));
  const supplier = h('input', { id: 'f-supplier', name: 'supplier', type: 'search', autocomplete: 'off' });
  const buyer = h('input', { id: 'f-buyer', name: 'buyer', type: 'search', autocomplete: 'off' });
  const size = h('select', { id: 'f-size', name: 'size' }, [25, 50, 100].map((n) => h('option', { value: n }, n)));
  const status = statusLine();
  const { wrap, tbody } = table('Allocations',
    ['Allocation', 'Supplier', 'Buyer', 'State', 'Input', 'Output', 'Req/min', 'In flight', 'Pending'],
    { class: 'allocations' });

  async function load(after, stale) {
    const page = await api.get('/admin/v1/allocations', {
      after, limit: Number(size.value), state: state.value, supplier: supplier.value.trim(), buyer: buyer.value.trim(),
    });
    const agrs = await agreementsOf(api, page.data.map((a) => a.agreement_id));
    const shown = page.data.map((a) => ({ a, agr: agrs.get(a.agreement_id) }));
    const more = page.has_more === true && page.data.length > 0;
    if (stale()) return null;
    keyedChildren(tbody, shown, (x) => x.a.id,
      (x) => h('tr', {}, cells(x.a, x.agr)),
      (row, x) => row.replaceChildren(...cells(x.a, x.agr)));
    status.say(shown.length === 0 ? 'No allocation matches.' : '');
    return { next: more ? page.data[page.data.length - 1].id : undefined };
  }

  const pages = pager(load);
  const refilter = () => pages.reset().catch((e) => status.say(e.message, 'error'));
  // A supplier or buyer matches exactly: the filter applies once the name is entered.
  for (const input of [state, size, supplier, buyer]) input.addEventListener('change', refilter);

  const el = h('section', { class: 'page' },
    h('h1', {}, 'Allocations'),
    h('form', { class: 'filters', role: 'search', onsubmit: (ev) => { ev.preventDefault(); refilter(); } },
      h('label', {}, 'State ', state),
      h('label', {}, 'Supplier ', supplier),
      h('label', {}, 'Buyer ', buyer),
      h('label', {}, 'Per page ', size)),
    wrap, status, pages);
  return {
    el, title: 'Allocations',
    refresh: () => pages.reload().catch((e) => status.say(e.message, 'error')),
  };
}
