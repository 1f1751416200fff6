// Sending a bulk reconciliation file in batches (SPEC-CONSOLE §4), all or nothing for the
// whole file: the API refuses a malformed item for its own call only, so a file split in
// batches is applied only once every batch has passed a dry run. No DOM here: the page
// (reconcile.js) and the tests call it with an API client.

// Items per POST /admin/v1/reconciliations: well under the API's 10,000 and its 1 MiB body.
export const batch_items_max = 2000;

// The file's items in batches, each with the index of its first item.
export function batchesOf(items, size = batch_items_max) {
  const out = [];
  for (let i = 0; i < items.length; i += size) out.push({ first: i, items: items.slice(i, i + size) });
  return out;
}

// An API error on one batch, placed in the file: the API's "items[3]: …" becomes
// "items[2003]: …" for the batch starting at item 2000.
export class BatchError extends Error {
  constructor(error, batch, applied) {
    super(String(error.message).replace(/items\[(\d+)\]/g, (_, n) => `items[${Number(n) + batch.first}]`));
    this.code = error.code;
    this.status = error.status;
    this.first = batch.first;
    this.applied = applied;  // items booked before it (an apply only: never for malformed input)
  }
}

async function sendAll(api, evidence, batches, dryRun, applied = 0) {
  const out = [];
  for (const batch of batches) {
    let r;
    try {
      r = await api.post('/admin/v1/reconciliations', { evidence, dry_run: dryRun, items: batch.items });
    } catch (e) {
      throw new BatchError(e, batch, dryRun ? 0 : applied);
    }
    for (const x of r.results) {
      const item = batch.items[x.item];
      out.push({ ...x, item: x.item + batch.first, id: item.request_id ?? item.provider_request_id });
    }
    if (!dryRun) applied += batch.items.length;
  }
  return out;
}

// Sends `items` with `evidence`: a dry run answers every batch's results and books nothing.
// An apply first dry-runs every batch and books nothing when any of them is refused (a
// malformed item, a count above the hold ratio…), then books batch by batch; a failure while
// booking (the gateway or its store gone) throws with how many items were booked, and
// importing the same file again books only the rest (already_booked for those).
export async function importItems(api, evidence, items, dryRun) {
  const batches = batchesOf(items);
  if (dryRun) return sendAll(api, evidence, batches, true);
  await sendAll(api, evidence, batches, true);
  return sendAll(api, evidence, batches, false);
}
