// Bulk reconciliation (SPEC-CONSOLE §4): paste or upload a provider's metering as CSV,
// see the dry run's outcome per item, then apply exactly what was dry-run, the whole file or
// nothing of it (bulk_import.js).
import { h, fill, statusLine, table, confirmDialog } from '../lib/dom.js';
import { int } from '../lib/format.js';
import { parseCsv } from '../lib/csv.js';
import { isMissingRoute } from '../lib/api.js';
import { importItems } from './bulk_import.js';

const quantity_max = 2 ** 53;
const outcomes = ['booked', 'already_booked', 'conflict', 'not_found', 'not_pending'];

// The items of a CSV text, or the problems that make the API refuse it (by line).
export function readItems(text) {
  const { rows, fields, errors } = parseCsv(text);
  const problems = [...errors];
  const idField = fields.includes('request_id') ? 'request_id' : fields.includes('provider_request_id') ? 'provider_request_id' : null;
  if (!idField) problems.push('the header row must name request_id or provider_request_id');
  for (const f of ['input_tokens', 'output_tokens']) if (!fields.includes(f)) problems.push(`the header row must name ${f}`);
  const items = [];
  if (problems.length) return { items, problems };
  rows.forEach((r, i) => {
    const line = i + 2;
    const id = (r[idField] ?? '').trim();
    const item = { [idField]: id };
    if (!id) problems.push(`line ${line}: ${idField} is empty`);
    for (const f of ['input_tokens', 'output_tokens']) {
      const v = (r[f] ?? '').trim();
      const n = Number(v);
      if (!/^\d+$/.test(v) || n > quantity_max) problems.push(`line ${line}: ${f} must be an integer ≥ 0, got "${v}"`);
      item[f] = n;
    }
    items.push(item);
  });
  if (items.length === 0 && problems.length === 0) problems.push('no item: the CSV has a header row only');
  return { items, problems };
}

export function reconcilePage({ api }) {
  const status = statusLine();
  const evidence = h('textarea', { id: 'bulk-evidence', name: 'evidence', rows: 2, required: true, maxlength: 65536,
    placeholder: 'e.g. OpenAI usage export for December 2026, downloaded 2026-12-02' });
  const csv = h('textarea', { id: 'bulk-csv', name: 'csv', rows: 10, required: true, spellcheck: 'false',
    placeholder: 'request_id,input_tokens,output_tokens\nreq_…,1200,340' });
  const file = h('input', { id: 'bulk-file', type: 'file', accept: '.csv,text/csv' });
  const dry = h('button', { type: 'button', class: 'primary', 'data-action': 'dry-run' }, 'Dry run');
  const apply = h('button', { type: 'button', class: 'danger', disabled: true, 'data-action': 'apply' }, 'Apply');
  const summary = h('p', { class: 'summary', 'data-field': 'bulk-summary' });
  const results = table('Outcome per item', ['Line', 'Request', 'Outcome', 'Event']);
  let dryRunOf = null;  // the input whose dry run was shown: Apply sends exactly that

  const current = () => JSON.stringify([evidence.value.trim(), csv.value]);
  for (const el of [evidence, csv]) el.addEventListener('input', () => { apply.disabled = current() !== dryRunOf; });
  file.addEventListener('change', async () => {
    const f = file.files?.[0];
    if (!f) return;
    csv.value = await f.text();
    apply.disabled = true;
    status.say(`Loaded ${f.name}. Dry run it first.`);
  });

  async function send(dryRun) {
    const { items, problems } = readItems(csv.value);
    const ev = evidence.value.trim();
    if (!ev) problems.unshift('evidence: required (what the counts come from)');
    if (problems.length) {
      status.say(problems.slice(0, 10).join('; ') + (problems.length > 10 ? `; and ${problems.length - 10} more` : ''), 'error');
      return null;
    }
    return importItems(api, ev, items, dryRun);
  }

  function show(out, dryRun) {
    const counts = Object.fromEntries(outcomes.map((o) => [o, 0]));
    for (const x of out) counts[x.outcome] = (counts[x.outcome] ?? 0) + 1;
    fill(summary, `${dryRun ? 'Dry run (nothing booked)' : 'Applied'}: ` +
      Object.entries(counts).filter(([, n]) => n).map(([o, n]) => `${int(n)} ${o}`).join(', ') + '.');
    summary.dataset.mode = dryRun ? 'dry-run' : 'applied';
    fill(results.tbody, out.map((x) => h('tr', { class: `outcome-${x.outcome}` },
      h('td', { class: 'num' }, x.item + 2), h('td', {}, h('code', {}, x.id)),
      h('td', {}, x.outcome), h('td', {}, x.event?.id ?? ''))));
  }

  async function run(dryRun) {
    dry.disabled = true;
    apply.disabled = true;
    const input = current();
    try {
      status.say(dryRun ? 'Dry run…' : 'Applying…');
      const out = await send(dryRun);
      if (!out) return;
      show(out, dryRun);
      status.say('');
      dryRunOf = dryRun ? input : null;
    } catch (e) {
      const booked = dryRun ? '' : e.applied
        ? ` — ${int(e.applied)} items were booked before it; import the same file again to book the rest.`
        : ' — nothing was booked.';
      status.say(isMissingRoute(e)
        ? 'Bulk reconciliation is not served by this gateway yet (POST /admin/v1/reconciliations answered 404).'
        : `${e.code}: ${e.message}${booked}`, 'error');
    } finally {
      dry.disabled = false;
      apply.disabled = current() !== dryRunOf;
    }
  }

  dry.addEventListener('click', () => run(true));
  apply.addEventListener('click', async () => {
    const n = readItems(csv.value).items.length;
    if (await confirmDialog(`Book ${int(n)} items?`, 'Each item the dry run showed as booked is booked now with this evidence.', 'Apply')) {
      await run(false);
    }
  });

  const el = h('section', { class: 'page' }, h('h1', {}, 'Bulk reconciliation'),
    h('p', { class: 'help' }, 'Book usage_pending requests from a provider\'s metering: a CSV with a header row naming ',
      h('code', {}, 'request_id'), ' or ', h('code', {}, 'provider_request_id'), ', ', h('code', {}, 'input_tokens'), ' and ',
      h('code', {}, 'output_tokens'), '. A dry run shows what would happen; Apply books it, the whole file or nothing of it when any item is refused. Importing the same file again books nothing new.'),
    h('div', { class: 'card' },
      h('label', { for: 'bulk-evidence' }, 'Evidence'), evidence,
      h('label', { for: 'bulk-csv' }, 'CSV'), csv,
      h('label', { for: 'bulk-file' }, 'Or upload a file'), file,
      h('div', { class: 'actions' }, dry, apply), status),
    summary, results.wrap);
  return { el, title: 'Bulk reconciliation' };
}
