// Where a key may be used from, as the dashboard edits it: the five lists (origins,
// addresses, pages, contracts, user agents) as labelled text areas, each with a hint
// and its own error line; read into the lists the API takes, filled from a key, shown
// in the key list, edited in a dialog; an error the API names by field is shown
// beside that field.

import { el, $ } from './common.js';

export const FIELDS = [
  {
    name: 'origins',
    label: 'Allowed origins',
    short: 'Origins',
    hint: 'Pages that may call with this key, one per line: https://app.example.com or https://*.example.com. Set this for any key used in a browser.',
    placeholder: 'https://app.example.com',
  },
  {
    name: 'ips',
    label: 'Allowed IP addresses and ranges',
    short: 'Addresses',
    hint: 'For servers: 203.0.113.7, 10.0.0.0/8, 2001:db8::/32.',
    placeholder: '203.0.113.0/24',
  },
  {
    name: 'referrers',
    label: 'Allowed pages (Referer prefixes)',
    short: 'Pages',
    hint: 'https://app.example.com/ — browsers send only the origin to other sites unless the page’s referrer policy says more.',
    placeholder: 'https://app.example.com/',
  },
  {
    name: 'contracts',
    label: 'Allowed contracts (EVM)',
    short: 'Contracts',
    hint: '0x… addresses: contract calls, gas estimates, log queries and log subscriptions may only target these.',
    placeholder: '0x5FbDB2315678afecb367f032d93F642f64180aa3',
  },
  {
    name: 'userAgents',
    label: 'Allowed user agents',
    short: 'User agents',
    hint: 'Patterns of the whole User-Agent, one per line; * stands for any text: MyApp/*',
    placeholder: 'MyApp/*',
  },
];

const id = (prefix, name) => `${prefix}-${name}`;

/** The five fields of a form, their ids starting with `prefix-`. Empty lists: no restriction. */
export function restrictionFields(prefix) {
  return FIELDS.map((f) =>
    el(
      'div',
      { class: 'field' },
      el('label', { for: id(prefix, f.name), text: f.label }),
      el('textarea', {
        id: id(prefix, f.name),
        name: f.name,
        rows: 2,
        spellcheck: 'false',
        autocomplete: 'off',
        placeholder: f.placeholder,
        'aria-describedby': `${id(prefix, f.name)}-hint ${id(prefix, f.name)}-error`,
      }),
      el('p', { id: `${id(prefix, f.name)}-hint`, class: 'muted small', text: f.hint }),
      el('p', { id: `${id(prefix, f.name)}-error`, class: 'error field-error', role: 'alert' }),
    ),
  );
}

/** The lists as typed: one entry a line (commas too, but not for user agents, which hold commas). */
export function readRestrictions(prefix) {
  const out = {};
  for (const f of FIELDS) {
    const text = $(id(prefix, f.name)).value;
    out[f.name] = text
      .split(f.name === 'userAgents' ? /\n/ : /[\n,]/)
      .map((s) => s.trim())
      .filter((s) => s !== '');
  }
  return out;
}

export function fillRestrictions(prefix, key) {
  for (const f of FIELDS) $(id(prefix, f.name)).value = ((key && key.restrictions[f.name]) || []).join('\n');
  clearFieldErrors(prefix);
}

export function clearFieldErrors(prefix) {
  for (const f of FIELDS) {
    $(`${id(prefix, f.name)}-error`).textContent = '';
    $(id(prefix, f.name)).removeAttribute('aria-invalid');
  }
}

/** Show an API error beside its field; false when it names no field of these. */
export function showFieldError(prefix, err) {
  const f = FIELDS.find((x) => x.name === err.field);
  if (!f) return false;
  const box = $(id(prefix, f.name));
  $(`${id(prefix, f.name)}-error`).textContent = err.message.replace(`${f.name}: `, '');
  box.setAttribute('aria-invalid', 'true');
  box.focus();
  return true;
}

/**
 * The dialog editing one key's restrictions (its markup is in index.html).
 * `save(key, lists)` sends them and resolves with `{ record }`; `saved(record)` follows;
 * `failed(node, err)` shows an error that names no field.
 */
export function restrictDialog({ save, saved, failed }) {
  let editing = null;
  const dialog = $('restrict-dialog');
  $('restrict-cancel').addEventListener('click', () => dialog.close());
  $('restrict-form').addEventListener('submit', async (event) => {
    event.preventDefault();
    if (!editing) return;
    $('restrict-error').textContent = '';
    clearFieldErrors('edit');
    $('restrict-save').disabled = true;
    try {
      // Every list is sent: an emptied one lifts that restriction.
      const { record } = await save(editing, readRestrictions('edit'));
      dialog.close();
      await saved(record);
    } catch (err) {
      if (err.status === 401 || !showFieldError('edit', err)) failed($('restrict-error'), err);
    } finally {
      $('restrict-save').disabled = false;
    }
  });
  return {
    open(k) {
      editing = k;
      if ($('restrict-fields').childElementCount === 0) $('restrict-fields').append(...restrictionFields('edit'));
      $('restrict-title').textContent = `Where key ${k.prefix}… may be used from`;
      $('restrict-error').textContent = '';
      fillRestrictions('edit', k);
      dialog.showModal();
      $('edit-origins').focus();
    },
  };
}

/** The key list's cell: each restriction in short, or that the key works from anywhere. */
export function restrictionsCell(key) {
  const set = FIELDS.filter((f) => key.restrictions[f.name].length > 0);
  if (set.length === 0)
    return el('td', { 'data-label': 'Restrictions' }, el('span', { class: 'muted', text: 'None: works from anywhere' }));
  return el(
    'td',
    { 'data-label': 'Restrictions' },
    el(
      'ul',
      { class: 'restrictions' },
      set.map((f) => el('li', {}, `${f.short}: `, el('code', { text: key.restrictions[f.name].join(', ') }))),
    ),
  );
}

/** Would the gateway take a call from `origin` with this key's origins list (as src/auth/origin-patterns.ts matches)? */
export function originAllowed(origins, origin) {
  if (origins.length === 0) return true;
  const o = origin.toLowerCase();
  return origins.some((p) => {
    const star = p.indexOf('://*.');
    if (star < 0) return p === o;
    const prefix = p.slice(0, star + 3);
    const suffix = p.slice(star + 4);
    if (!o.startsWith(prefix) || !o.endsWith(suffix) || o.length <= prefix.length + suffix.length) return false;
    return /^([a-z0-9-]+\.)*[a-z0-9-]+$/.test(o.slice(prefix.length, o.length - suffix.length));
  });
}
