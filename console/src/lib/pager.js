// Previous / next over a cursor-paged list (SPEC-CONSOLE §1: `after` and `has_more`).
// `load(after, stale)` fetches one page and resolves to { next } — the cursor of the page
// after it, or undefined when has_more was false. Loads overlap (a refresh, a filter being
// typed): `stale()` turns true once a later load has started, and a stale load must leave
// the page as it is and resolve to null.
import { h } from './dom.js';

export function pager(load) {
  let cursors = [undefined];  // cursors[i]: the `after` of page i
  let index = 0;
  let next;
  const label = h('span', { class: 'page-label', 'aria-live': 'polite' }, 'Page 1');
  const prev = h('button', { type: 'button', disabled: true, onclick: () => go(index - 1) }, '← Previous');
  const fwd = h('button', { type: 'button', disabled: true, onclick: () => go(index + 1) }, 'Next →');
  const el = h('nav', { class: 'pager', 'aria-label': 'Pages' }, prev, label, fwd);

  async function go(i) {
    if (i > index) cursors[i] = next;
    index = i;
    await el.reload();
  }
  let generation = 0;
  el.reload = async () => {
    const mine = ++generation;
    const r = await load(cursors[index], () => mine !== generation);
    if (r === null || mine !== generation) return;
    next = r.next;
    prev.disabled = index === 0;
    fwd.disabled = next === undefined;
    label.textContent = `Page ${index + 1}`;
  };
  el.reset = async () => {
    cursors = [undefined];
    index = 0;
    await el.reload();
  };
  return el;
}
