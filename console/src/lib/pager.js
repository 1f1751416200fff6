// Previous / next over a cursor-paged list (SPEC-CONSOLE §1: `after` and `has_more`).
// `load(after)` fetches one page and resolves to { next } — the cursor of the page after
// it, or undefined when has_more was false.
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
  el.reload = async () => {
    const r = await load(cursors[index]);
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
