// Small DOM helpers. Every text the API returns is set as text, never parsed as HTML, so a
// push's alert or an installation's field cannot inject markup into the console.

// h builds an element: attrs may hold class, text, on<event> handlers, boolean attributes
// (true sets, false/null skips) and plain attributes; children are nodes, strings or arrays.
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === false || v === null || v === undefined) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.className = v;
    else if (k === 'text') el.textContent = v;
    else if (k === 'value') el.value = v;
    else if (v === true) el.setAttribute(k, '');
    else el.setAttribute(k, String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

// fmtTime shows an ISO time in the browser's zone as "2026-11-25 14:03:09": short enough for a
// table cell, and unambiguous in every locale.
export function fmtTime(iso) {
  if (!iso) return '';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  const p = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

export function fmtNum(n) {
  return typeof n === 'number' ? n.toLocaleString() : (n ?? '');
}

let toastTimer;
// toast shows a short message in the page's polite live region.
export function toast(msg) {
  const t = document.getElementById('toast');
  t.textContent = msg;
  t.classList.add('show');
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => t.classList.remove('show'), 4000);
}

// replaceKeepingFocus replaces container's children with nodes, and gives the focus back to the
// new element matching the one that had it (same id, link target or label): a view that
// re-renders every second must not throw a keyboard user back to the top of the page.
export function replaceKeepingFocus(container, ...nodes) {
  const a = document.activeElement;
  let sel = null;
  if (a && a !== container && container.contains(a)) {
    const attr = (name) => `${a.tagName.toLowerCase()}[${name}="${CSS.escape(a.getAttribute(name))}"]`;
    if (a.id) sel = `#${CSS.escape(a.id)}`;
    else if (a.getAttribute('href')) sel = attr('href');
    else if (a.getAttribute('aria-label')) sel = attr('aria-label');
  }
  container.replaceChildren(...nodes);
  const next = sel && container.querySelector(sel);
  if (next) next.focus({ preventScroll: true });
}
