// Shared by the account and operator pages: the JSON API client (sends the session's
// CSRF token on every change), DOM helpers, formatting, copying to the clipboard
// with a visible confirmation, the confirmation dialog, and the pieces of a key's
// table row. No secret is ever put in storage: values live in memory only.

/** A JSON API below `base`, with the session's CSRF token once known. */
export function apiClient(base) {
  let csrf = '';
  const client = {
    setCsrf(token) {
      csrf = token;
    },
    /** End the session; signed out either way (cookie cleared, or the session had already ended). */
    async signOut() {
      try {
        await client.call('/signout', { method: 'POST' });
      } catch {
        // Nothing to do: the page shows the sign-in view regardless.
      }
      csrf = '';
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
        // The input field at fault, for forms that show the message beside it.
        err.field = data && data.error ? data.error.field : undefined;
        throw err;
      }
      return data;
    },
  };
  return client;
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

/** The page's one confirmation dialog, made on first use. */
function dialogElement() {
  let dialog = $('confirm-dialog');
  if (dialog) return dialog;
  dialog = el(
    'dialog',
    { id: 'confirm-dialog', 'aria-labelledby': 'confirm-title', 'aria-describedby': 'confirm-text' },
    el(
      'form',
      { method: 'dialog' },
      el('h2', { id: 'confirm-title' }),
      el('p', { id: 'confirm-text' }),
      el(
        'div',
        { class: 'dialog-actions' },
        el('button', { type: 'submit', value: 'cancel', id: 'confirm-cancel', text: 'Cancel' }),
        el('button', { type: 'submit', value: 'ok', id: 'confirm-ok', class: 'danger' }),
      ),
    ),
  );
  document.body.append(dialog);
  return dialog;
}

/** A modal confirmation; resolves true when confirmed. */
export function confirmDialog({ title, text, ok }) {
  const dialog = dialogElement();
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

/** Ask, then revoke (it cannot be undone); true when revoked. API errors are thrown. */
export async function revokeKey(api, k) {
  const ok = await confirmDialog({
    title: `Revoke key ${k.prefix}…?`,
    text: `Calls with this key${k.label ? ` (${k.label})` : ''} fail from now on. This cannot be undone.`,
    ok: 'Revoke',
  });
  if (!ok) return false;
  await api.call(`/keys/${encodeURIComponent(k.id)}/revoke`, { method: 'POST' });
  announce(`Key ${k.prefix} is revoked.`);
  return true;
}

/** Cells both key tables start with: prefix, label, tier. */
export function keyCells(k) {
  return [
    el('td', { 'data-label': 'Prefix' }, el('code', { text: `${k.prefix}…` })),
    el('td', { 'data-label': 'Label', text: k.label || '—' }),
    el('td', { 'data-label': 'Tier', text: k.tier }),
  ];
}

export function stateBadge(state) {
  return el('span', { class: `state state-${state}`, text: state });
}

/** A row action on a key, named for screen readers ("Revoke key nrk_AbC1"). */
export function keyAction(action, k, onclick, cls = 'danger') {
  return el('button', { type: 'button', class: cls, 'aria-label': `${action} key ${k.prefix}`, text: action, onclick });
}

/** `*` matches any run of characters, like the gateway's key permissions (and as there, no regex: linear). */
export function matchesPattern(pattern, value) {
  if (pattern === '*') return true;
  const parts = pattern.split('*');
  if (parts.length === 1) return value === pattern;
  const head = parts[0];
  const tail = parts[parts.length - 1];
  if (value.length < head.length + tail.length || !value.startsWith(head) || !value.endsWith(tail)) return false;
  let at = head.length;
  const end = value.length - tail.length;
  for (const segment of parts.slice(1, -1)) {
    const found = value.indexOf(segment, at);
    if (found < 0 || found + segment.length > end) return false;
    at = found + segment.length;
  }
  return true;
}

export function announce(text) {
  $('announce').textContent = text;
}
