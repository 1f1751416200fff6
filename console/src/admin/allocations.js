// Allocations: one table, filtered by state, supplier and buyer, paged with `after`.
// The admin listing filters nothing itself, so the filters apply here while following
// the listing's pages until a page of matches is full.
import { h, keyedChildren, statusLine, table } from '../lib/dom.js';
import { int, percent } from '../lib/format.js';
import { pager } from '../lib/pager.js';
import { agreementsOf } from './agreement_cache.js';

const states = ['', 'ready', 'active', 'suspended', 'depleted', 'expired', 'cancelled'];
// Listing pages fetched per page shown when a filter matches rarely: a bound on one load.
const listing_pages_per_load_max = 20;

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

  const matches = (a, agr) => (!state.value || a.state === state.value) &&
    (!supplier.value.trim() || agr?.supplier.toLowerCase().includes(supplier.value.trim().toLowerCase())) &&
    (!buyer.value.trim() || agr?.buyer.toLowerCase().includes(buyer.value.trim().toLowerCase()));

  async function load(after, stale) {
    const want = Number(size.value);
    const shown = [];
    let cursor = after;
    let more = true;
    for (let i = 0; i < listing_pages_per_load_max && more && shown.length < want; i++) {
      const page = await api.get('/admin/v1/allocations', { after: cursor, limit: 100 });
      const agrs = await agreementsOf(api, page.data.map((a) => a.agreement_id));
      // has_more is SPEC-CONSOLE §1's; a listing without it answered everything at once.
      more = page.has_more === true;
      for (const a of page.data) {
        cursor = a.id;
        if (!matches(a, agrs.get(a.agreement_id))) continue;
        shown.push({ a, agr: agrs.get(a.agreement_id) });
        if (shown.length === want) {
          more = more || a !== page.data[page.data.length - 1];
          break;
        }
      }
      if (page.data.length === 0) more = false;
    }
    if (stale()) return null;
    keyedChildren(tbody, shown, (x) => x.a.id,
      (x) => h('tr', {}, cells(x.a, x.agr)),
      (row, x) => row.replaceChildren(...cells(x.a, x.agr)));
    status.say(shown.length === 0 ? 'No allocation matches.' : '');
    return { next: more ? cursor : undefined };
  }

  const pages = pager(load);
  const refilter = () => pages.reset().catch((e) => status.say(e.message, 'error'));
  for (const input of [state, size]) input.addEventListener('change', refilter);
  for (const input of [supplier, buyer]) input.addEventListener('input', refilter);

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
