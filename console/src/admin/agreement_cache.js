// Agreements by id, for the supplier and buyer of each allocation. An agreement's parties
// and numbers never change (SPEC §2), so one fetch per agreement and tab is enough; its
// state is read again where it is shown.
const cache = new Map();
// Fetches at a time when a page of allocations names agreements not seen yet.
const concurrent_fetches_max = 8;

export function agreementOf(api, id) {
  if (!cache.has(id)) {
    const p = api.get(`/admin/v1/agreements/${encodeURIComponent(id)}`);
    cache.set(id, p);
    p.catch(() => cache.delete(id));
  }
  return cache.get(id);
}

export async function agreementsOf(api, ids) {
  const out = new Map();
  const todo = [...new Set(ids)];
  async function worker() {
    while (todo.length) {
      const id = todo.pop();
      try { out.set(id, await agreementOf(api, id)); } catch { out.set(id, null); }
    }
  }
  await Promise.all(Array.from({ length: concurrent_fetches_max }, worker));
  return out;
}
