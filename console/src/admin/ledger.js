// Usage events and conflicts: paged tables with filters, and a CSV download of the whole
// filtered range (every page followed).
import { h, keyedChildren, statusLine, table } from '../lib/dom.js';
import { int, utc, localInputToIso } from '../lib/format.js';
import { pager } from '../lib/pager.js';
import { toCsv, download } from '../lib/csv.js';

// SPEC-CONSOLE §3: the export's columns, in SPEC §2's order, then the event an adjustment
// corrects (as `cairva events export` writes them).
const event_columns = ['id', 'allocation_id', 'request_id', 'provider_request_id', 'input_tokens', 'output_tokens',
  'source', 'finality', 'evidence', 'booked_at', 'corrects'];
const conflict_columns = ['id', 'allocation_id', 'request_id', 'provider_request_id', 'reported_input_tokens',
  'reported_output_tokens', 'booked_input_tokens', 'booked_output_tokens', 'recorded_at'];

function filterInput(name, label, attrs) {
  return h('label', {}, `${label} `, h('input', { id: `f-${name}`, name, autocomplete: 'off', ...attrs }));
}

// A paged, filtered listing page. `spec` names its path, filters, columns and cells.
function ledgerPage({ api, params }, spec) {
  const status = statusLine();
  const { wrap, tbody } = table(spec.title, spec.headers);
  const filters = h('form', { class: 'filters', role: 'search' },
    filterInput('allocation_id', 'Allocation', { type: 'search', value: params.get('allocation_id') ?? '', placeholder: 'alloc_…' }),
    spec.ranged ? [filterInput('from', 'From', { type: 'datetime-local' }), filterInput('to', 'To', { type: 'datetime-local' })] : null,
    h('label', {}, 'Per page ', h('select', { name: 'limit', id: 'f-limit' }, [25, 100, 10].map((n) => h('option', { value: n }, n)))),
    h('button', { type: 'submit' }, 'Apply'),
    h('button', { type: 'button', class: 'download', onclick: () => exportCsv() }, 'Download CSV'));

  function query() {
    const f = Object.fromEntries(new FormData(filters));
    const q = { allocation_id: f.allocation_id?.trim() || undefined };
    if (spec.ranged) {
      q.from = localInputToIso(f.from) ?? undefined;
      q.to = localInputToIso(f.to) ?? undefined;
    }
    return { q, limit: Number(f.limit) };
  }

  const pages = pager(async (after, stale) => {
    const { q, limit } = query();
    try {
      const page = await api.get(spec.path, { ...q, after, limit });
      if (stale()) return null;
      keyedChildren(tbody, page.data, (x) => x.id, (x) => h('tr', {}, spec.cells(x)));
      status.say(page.data.length ? '' : spec.empty);
      return { next: page.has_more ? page.data[page.data.length - 1].id : undefined };
    } catch (e) {
      status.say(`${e.code}: ${e.message}`, 'error');
      return {};
    }
  });

  async function exportCsv() {
    const { q } = query();
    status.say('Fetching every page…');
    try {
      const rows = await api.all(spec.path, q);
      const name = `${spec.file}${q.allocation_id ? '-' + q.allocation_id : ''}.csv`;
      download(name, toCsv(spec.columns, rows.map(spec.flat ?? ((x) => x))));
      status.say(`Downloaded ${int(rows.length)} rows as ${name}.`, 'ok');
    } catch (e) { status.say(`${e.code}: ${e.message}`, 'error'); }
  }

  filters.addEventListener('submit', (ev) => { ev.preventDefault(); pages.reset(); });
  filters.elements.limit.addEventListener('change', () => pages.reset());
  const el = h('section', { class: 'page' }, h('h1', {}, spec.title), filters, wrap, status, pages);
  return { el, title: spec.title, refresh: () => pages.reload() };
}

export function eventsPage(ctx) {
  return ledgerPage(ctx, {
    title: 'Usage events', path: '/admin/v1/events', file: 'usage-events', ranged: true, columns: event_columns,
    empty: 'No usage event matches.',
    headers: ['Event', 'Booked', 'Allocation', 'Request', 'Provider request', 'Input', 'Output', 'Source', 'Finality', 'Evidence'],
    cells: (e) => [h('td', {}, h('code', {}, e.id)), h('td', {}, utc(e.booked_at)),
      h('td', {}, h('a', { href: `#/allocations/${e.allocation_id}` }, e.allocation_id)),
      h('td', {}, h('code', {}, e.request_id)), h('td', {}, e.provider_request_id ?? ''),
      h('td', { class: 'num' }, int(e.input_tokens)), h('td', { class: 'num' }, int(e.output_tokens)),
      h('td', {}, e.source), h('td', {}, e.finality), h('td', { class: 'evidence' }, e.evidence ?? '')],
  });
}

export function conflictsPage(ctx) {
  return ledgerPage(ctx, {
    title: 'Conflicts', path: '/admin/v1/conflicts', file: 'conflicts', ranged: false, columns: conflict_columns,
    empty: 'No conflict: no provider repeated a booked request id with other counts.',
    headers: ['Conflict', 'Recorded', 'Allocation', 'Request', 'Provider request', 'Reported in / out', 'Booked in / out'],
    cells: (c) => [h('td', {}, h('code', {}, c.id)), h('td', {}, utc(c.recorded_at)),
      h('td', {}, h('a', { href: `#/allocations/${c.allocation_id}` }, c.allocation_id)),
      h('td', {}, h('code', {}, c.request_id)), h('td', {}, c.provider_request_id),
      h('td', { class: 'num' }, `${int(c.reported.input_tokens)} / ${int(c.reported.output_tokens)}`),
      h('td', { class: 'num' }, `${int(c.booked.input_tokens)} / ${int(c.booked.output_tokens)}`)],
    flat: (c) => ({ ...c, reported_input_tokens: c.reported.input_tokens, reported_output_tokens: c.reported.output_tokens,
      booked_input_tokens: c.booked.input_tokens, booked_output_tokens: c.booked.output_tokens }),
  });
}
