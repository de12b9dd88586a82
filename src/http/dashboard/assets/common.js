// Shared by the account and operator pages: the JSON API client (sends the session's
// CSRF token on every change), DOM helpers, formatting, copying to the clipboard
// with a visible confirmation, and the confirmation dialog. No secret is ever put
// in storage: values live in memory only.

/** A JSON API below `base`, with the session's CSRF token once known. */
export function apiClient(base) {
  let csrf = '';
  return {
    setCsrf(token) {
      csrf = token;
    },
    async call(path, { method = 'GET', body } = {}) {
      const headers = { accept: 'application/json' };
      if (body !== undefined) headers['content-type'] = 'application/json';
      if (method !== 'GET' && csrf !== '') headers['x-csrf-token'] = csrf;
      const res = await fetch(base + path, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        credentials: 'same-origin',
        cache: 'no-store',
      });
      const text = await res.text();
      let data = null;
      try {
        data = text === '' ? null : JSON.parse(text);
      } catch {
        data = null;
      }
      if (!res.ok) {
        const err = new Error((data && data.error && data.error.message) || `Request failed (HTTP ${res.status})`);
        err.status = res.status;
        err.code = data && data.error ? data.error.code : undefined;
        throw err;
      }
      return data;
    },
  };
}

export const $ = (id) => document.getElementById(id);

/** An element with attributes and children (strings become text: never HTML). */
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'text') node.textContent = v;
    else if (k === 'class') node.className = v;
    else if (k.startsWith('on')) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) if (c !== undefined && c !== null) node.append(c);
  return node;
}

const number = new Intl.NumberFormat('en');
export const fmtNumber = (n) => number.format(n);

/** A limit from the API: null is unlimited. */
export const fmtLimit = (n) => (n === null ? 'unlimited' : fmtNumber(n));

const dateTime = new Intl.DateTimeFormat('en', { dateStyle: 'medium', timeStyle: 'short' });

/** A <time> element: readable text, the exact instant in `datetime`. */
export function timeEl(iso) {
  if (!iso) return el('span', { class: 'muted', text: 'never' });
  return el('time', { datetime: iso, title: iso, text: dateTime.format(new Date(iso)) });
}

/** Copy text; the confirmation is visible and announced. Falls back to selecting the text. */
export async function copyText(text, statusNode, selectNode) {
  try {
    await navigator.clipboard.writeText(text);
    statusNode.textContent = 'Copied to the clipboard.';
  } catch {
    if (selectNode) {
      const range = document.createRange();
      range.selectNodeContents(selectNode);
      const sel = window.getSelection();
      sel.removeAllRanges();
      sel.addRange(range);
    }
    statusNode.textContent = 'Copying is not allowed here: the text is selected, press Ctrl+C (⌘C) to copy it.';
  }
  statusNode.classList.remove('flash');
  void statusNode.offsetWidth;
  statusNode.classList.add('flash');
}

/** A modal confirmation; resolves true when confirmed. */
export function confirmDialog({ title, text, ok }) {
  const dialog = $('confirm-dialog');
  $('confirm-title').textContent = title;
  $('confirm-text').textContent = text;
  $('confirm-ok').textContent = ok;
  return new Promise((resolve) => {
    const done = () => {
      dialog.removeEventListener('close', done);
      resolve(dialog.returnValue === 'ok');
    };
    dialog.returnValue = '';
    dialog.addEventListener('close', done);
    dialog.showModal();
    $('confirm-cancel').focus();
  });
}

/** `*` matches any run of characters, like the gateway's key permissions. */
export function matchesPattern(pattern, value) {
  if (pattern === '*') return true;
  const body = pattern
    .split('*')
    .map((p) => p.replace(/[.+?^${}()|[\]\\/]/g, '\\$&'))
    .join('.*');
  return new RegExp(`^${body}$`).test(value);
}

export function announce(text) {
  $('announce').textContent = text;
}
