// A few DOM helpers. Text always goes in as text nodes (never innerHTML), and styles only
// through classes or the CSSOM, so the console runs under a CSP without 'unsafe-inline'.

// h('tr', {class: 'x', onclick: f, 'aria-label': 'y'}, child, 'text', [more]) → element.
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs ?? {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith('on') && typeof value === 'function') {
      el.addEventListener(name.slice(2), value);
    } else if (name === 'class') {
      el.className = value;
    } else if (name === 'dataset') {
      Object.assign(el.dataset, value);
    } else if (name in el && typeof value !== 'string') {
      el[name] = value;  // properties such as checked, disabled, value
    } else {
      el.setAttribute(name, value === true ? '' : String(value));
    }
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === undefined || c === null || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

// Replaces an element's children.
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

// Keeps `container`'s children in step with `items`, one child per key: new items get
// create(item), existing ones update(el, item) in place, gone ones are removed. A row the
// operator is typing in survives a refresh.
export function keyedChildren(container, items, key, create, update = () => {}) {
  const existing = new Map();
  for (const el of [...container.children]) {
    if (el.dataset.key !== undefined) existing.set(el.dataset.key, el);
    else el.remove();
  }
  let previous = null;
  for (const item of items) {
    const k = key(item);
    let el = existing.get(k);
    if (el) {
      existing.delete(k);
      update(el, item);
    } else {
      el = create(item);
      el.dataset.key = k;
    }
    const wanted = previous ? previous.nextSibling : container.firstChild;
    if (wanted !== el) container.insertBefore(el, wanted);
    previous = el;
  }
  for (const el of existing.values()) el.remove();
}

// An aria-live status line: say(text, 'error' | 'ok' | '').
export function statusLine(attrs = {}) {
  const el = h('p', { class: 'status', role: 'status', 'aria-live': 'polite', ...attrs });
  el.say = (text, kind = '') => {
    el.textContent = text ?? '';
    el.className = 'status' + (kind ? ' ' + kind : '');
  };
  return el;
}

// A table with a caption and headers, in a wrapper that scrolls sideways when it must. Each
// cell gets its column's name as data-label, which the phone layout shows beside the value
// (styles.css, table.stack) when rows become stacked cards.
export function table(caption, headers, attrs = {}) {
  const tbody = h('tbody');
  new MutationObserver(() => {
    for (const tr of tbody.children) {
      [...tr.children].forEach((td, i) => { if (!td.dataset.label && headers[i]) td.dataset.label = headers[i]; });
    }
  }).observe(tbody, { childList: true, subtree: true });
  const wrap = h('div', { class: 'table-wrap', tabindex: '0', role: 'region', 'aria-label': caption },
    h('table', { ...attrs, class: `stack ${attrs.class ?? ''}`.trim() },
      h('caption', {}, caption),
      h('thead', {}, h('tr', {}, headers.map((t) => h('th', { scope: 'col' }, t)))),
      tbody));
  return { wrap, tbody };
}

// A modal confirmation (<dialog>: focus is trapped, Escape cancels). Resolves true when
// the operator confirms.
export function confirmDialog(title, text, confirmLabel) {
  return new Promise((resolve) => {
    const yes = h('button', { type: 'submit', value: 'yes', class: 'danger' }, confirmLabel);
    const no = h('button', { type: 'submit', value: 'no', formnovalidate: true }, 'Keep as it is');
    const form = h('form', { method: 'dialog' }, h('h2', {}, title), h('p', {}, text),
      h('div', { class: 'actions' }, no, yes));
    const dialog = h('dialog', { class: 'confirm', 'aria-label': title }, form);
    dialog.addEventListener('close', () => {
      resolve(dialog.returnValue === 'yes');
      dialog.remove();
    });
    document.body.append(dialog);
    dialog.showModal();
    no.focus();
  });
}
