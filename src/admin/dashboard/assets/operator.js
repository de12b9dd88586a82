// The operator view: sign in with the admin token (posted once, never kept), then
// every account with its keys, usage today / this month / 30 days, and revoke.

import { $, apiClient, el, fmtNumber, keyAction, keyCells, revokeKey, stateBadge, timeEl } from './common.js';

const api = apiClient('/dashboard/operator/api');

function show(id, on) {
  $(id).hidden = !on;
}

function only(view) {
  for (const v of ['loading', 'closed-view', 'signin-view', 'accounts-view']) show(v, v === view);
  show('signout', view === 'accounts-view');
}

async function start() {
  try {
    const s = await api.call('/session');
    api.setCsrf(s.csrfToken);
    await loadAccounts();
  } catch (err) {
    if (err.code === 'OPERATOR_CLOSED') return only('closed-view');
    only('signin-view');
    if (err.status !== 401) $('signin-error').textContent = err.message;
    $('admin-token').focus();
  }
}

$('signin-form').addEventListener('submit', async (event) => {
  event.preventDefault();
  $('signin-error').textContent = '';
  const token = $('admin-token').value;
  $('admin-token').value = '';
  try {
    const s = await api.call('/signin', { method: 'POST', body: { token } });
    api.setCsrf(s.csrfToken);
    await loadAccounts();
  } catch (err) {
    $('signin-error').textContent = err.message;
  }
});

$('signout').addEventListener('click', async () => {
  await api.signOut();
  only('signin-view');
  $('signin-error').textContent = 'You are signed out.';
});

const usageText = (u) =>
  `${fmtNumber(u.today.calls)} today · ${fmtNumber(u.month.calls)} this month · ${fmtNumber(u.last30.limited)} refused in 30 days`;

function keyRow(k) {
  const active = k.state === 'active';
  return el(
    'tr',
    { 'data-key-id': k.id },
    keyCells(k),
    el('td', { 'data-label': 'State' }, stateBadge(k.state)),
    el('td', { 'data-label': 'Last used' }, timeEl(k.lastUsedAt)),
    el('td', { 'data-label': 'Today', text: fmtNumber(k.usage.today.calls) }),
    el('td', { 'data-label': 'This month', text: fmtNumber(k.usage.month.calls) }),
    el('td', { 'data-label': 'Refused, 30 days', text: fmtNumber(k.usage.last30.limited) }),
    el('td', { class: 'actions' }, active ? keyAction('Revoke', k, () => revoke(k)) : null),
  );
}

function accountCard(a) {
  const head = el(
    'tr',
    {},
    ['Prefix', 'Label', 'Tier', 'State', 'Last used', 'Today', 'This month', 'Refused, 30 days'].map((h) =>
      el('th', { scope: 'col', text: h }),
    ),
    el('th', { scope: 'col' }, el('span', { class: 'visually-hidden', text: 'Actions' })),
  );
  const titleId = `account-${a.id}`;
  return el(
    'section',
    { class: 'card account', 'data-account-id': a.id, 'aria-labelledby': titleId },
    el('h2', { id: titleId }, a.name, ' ', stateBadge(a.state)),
    el(
      'p',
      { class: 'muted small' },
      `${a.id}${a.email ? ` · ${a.email}` : ''} · tiers ${a.tiers.join(', ')} (default ${a.defaultTier}) · created `,
      timeEl(a.createdAt),
    ),
    el('p', { class: 'account-usage', text: usageText(a.usage) }),
    a.keys.length === 0
      ? el('p', { class: 'muted', text: 'No keys.' })
      : el('table', { class: 'table keys', 'aria-label': `Keys of ${a.name}` }, el('thead', {}, head), el('tbody', {}, a.keys.map(keyRow))),
  );
}

async function loadAccounts() {
  let data;
  try {
    data = await api.call('/accounts');
  } catch (err) {
    if (err.status === 401) return only('signin-view');
    $('accounts-error').textContent = err.message;
    return;
  }
  only('accounts-view');
  $('accounts-window').textContent = `Usage by UTC day: today is ${data.window.today}.`;
  show('accounts-empty', data.accounts.length === 0);
  $('accounts').replaceChildren(...data.accounts.map(accountCard));
}

async function revoke(k) {
  try {
    if (await revokeKey(api, k)) await loadAccounts();
  } catch (err) {
    $('accounts-error').textContent = err.message;
  }
}

void start();
