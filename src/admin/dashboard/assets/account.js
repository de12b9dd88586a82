// The account dashboard page: sign-in (a one-time link, exchanged by a click so link
// scanners cannot use it up), then three views chosen by the URL fragment: API keys
// (create, restrict, rotate, revoke; a new value shown once, copied by a click),
// limits and usage (with the chart), and endpoints (curl lines with the key's prefix
// as a placeholder, and a browser snippet). A key value lives only in `secret` below
// until dismissed. Restriction fields are restrictions.js; the snippet snippet.js.

import {
  $,
  announce,
  apiClient,
  confirmDialog,
  copyText,
  el,
  fmtLimit,
  fmtNumber,
  keyAction,
  keyCells,
  matchesPattern,
  revokeKey,
  stateBadge,
  timeEl,
} from './common.js';
import { drawChart, fillChartTable } from './chart.js';
import {
  clearFieldErrors,
  fillRestrictions,
  readRestrictions,
  restrictDialog,
  restrictionFields,
  restrictionsCell,
  showFieldError,
} from './restrictions.js';
import { showSnippet } from './snippet.js';

const api = apiClient('/dashboard/api');
const state = { account: null, keys: [], endpoints: null };
/** The one key value on the page, between create/rotate and "hide". */
let secret = '';

const VIEWS = ['keys', 'usage', 'endpoints'];

function show(id, on) {
  $(id).hidden = !on;
}

function fail(node, err) {
  if (err.status === 401) return signedOut('Your session has ended: sign in again.');
  node.textContent = err.message;
}

/** An error naming a restriction field goes beside it; anything else to `node`. */
function failForm(prefix, node, err) {
  if (err.status !== 401 && showFieldError(prefix, err)) return;
  fail(node, err);
}

// ---- sign-in ---------------------------------------------------------------

function signedOut(message) {
  state.account = null;
  hideSecret();
  show('app', false);
  show('who', false);
  show('signout', false);
  show('loading', false);
  show('signin-view', true);
  $('signin-error').textContent = message || '';
  document.title = 'Sign in · noderouter dashboard';
}

async function start() {
  const params = new URLSearchParams(location.search);
  const token = location.pathname.endsWith('/signin') ? params.get('token') : null;
  if (token) {
    // Out of the address bar and history at once; kept in memory for the one click.
    history.replaceState(null, '', '/dashboard/signin');
    signedOut();
    show('signin-with-link', true);
    show('signin-without-link', false);
    $('signin-button').addEventListener('click', async () => {
      $('signin-button').disabled = true;
      try {
        const session = await api.call('/signin', { method: 'POST', body: { token } });
        history.replaceState(null, '', '/dashboard#keys');
        await signedIn(session);
      } catch (err) {
        $('signin-error').textContent = err.message;
        show('signin-with-link', false);
        show('signin-without-link', true);
      }
    });
    $('signin-button').focus();
    return;
  }
  try {
    await signedIn(await api.call('/session'));
  } catch (err) {
    if (err.status === 401) signedOut();
    else {
      show('loading', false);
      $('signin-error').textContent = err.message;
      show('signin-view', true);
    }
  }
}

async function signedIn(session) {
  api.setCsrf(session.csrfToken);
  state.account = session.account;
  if (location.pathname.endsWith('/signin')) history.replaceState(null, '', `/dashboard${location.hash}`);
  show('signin-view', false);
  $('who').textContent = session.account.name;
  show('who', true);
  show('signout', true);
  fillCreateForm();
  await loadKeys();
  // Shown once there is something to show: no empty view while the keys load.
  show('loading', false);
  show('app', true);
  route();
}

$('signout').addEventListener('click', async () => {
  await api.signOut();
  signedOut('You are signed out.');
});

// ---- views -----------------------------------------------------------------

function route() {
  if (!state.account) return;
  const view = VIEWS.includes(location.hash.slice(1)) ? location.hash.slice(1) : 'keys';
  for (const v of VIEWS) {
    show(`${v}-view`, v === view);
    const tab = $(`tab-${v}`);
    if (v === view) tab.setAttribute('aria-current', 'page');
    else tab.removeAttribute('aria-current');
  }
  const titles = { keys: 'API keys', usage: 'Limits and usage', endpoints: 'Endpoints' };
  document.title = `${titles[view]} · noderouter dashboard`;
  if (view === 'usage') void loadUsage();
  if (view === 'endpoints') void loadEndpoints();
}
window.addEventListener('hashchange', route);

// ---- API keys --------------------------------------------------------------

function tierOf(name) {
  return state.account.tiers.find((t) => t.name === name);
}

function describeTier(t) {
  return `${fmtLimit(t.rate)} calls/s (burst ${fmtLimit(t.burst)}), ${fmtLimit(t.daily)} a day, ${fmtLimit(t.monthly)} a month, archive ${t.archive ? 'included' : 'not included'}. ${describeAccountLimits(t)}`;
}

/** What all of the account's keys on a tier get together (more keys never mean more calls). */
function accountLimits(t) {
  const a = t.account;
  return `${fmtLimit(a.rate)} calls/s, ${fmtLimit(a.daily)} a day, ${fmtLimit(a.monthly)} a month`;
}

function describeAccountLimits(t) {
  return `All your keys on ${t.name} together: ${accountLimits(t)}.`;
}

function fillCreateForm() {
  if ($('create-restrictions').childElementCount === 0) $('create-restrictions').append(...restrictionFields('create'));
  const select = $('create-tier');
  select.replaceChildren(
    ...state.account.tiers.map((t) => el('option', { value: t.name, selected: t.name === state.account.defaultTier, text: t.name })),
  );
  onTierChange();
}

function onTierChange() {
  const t = tierOf($('create-tier').value);
  if (!t) return;
  $('tier-limits').textContent = describeTier(t);
  const box = $('create-archive');
  box.disabled = !t.archive;
  box.checked = t.archive;
  $('archive-note').textContent = t.archive
    ? 'Untick to keep this key away from archive state.'
    : `The ${t.name} tier has no archive access.`;
}
$('create-tier').addEventListener('change', onTierChange);

async function loadChains() {
  if (state.endpoints) return state.endpoints;
  state.endpoints = (await api.call('/endpoints')).endpoints;
  return state.endpoints;
}

async function fillChainList() {
  const list = $('chain-list');
  if (list.childElementCount > 0) return;
  const endpoints = await loadChains();
  list.replaceChildren(
    ...endpoints.map((e) =>
      el(
        'label',
        { class: 'check' },
        el('input', { type: 'checkbox', name: 'chain', value: e.chain, checked: true, disabled: $('chains-all').checked }),
        ` ${e.chain}${e.archiveOnly ? ' (archive nodes)' : ''}`,
      ),
    ),
  );
}

$('chains-all').addEventListener('change', () => {
  for (const box of $('chain-list').querySelectorAll('input')) box.disabled = $('chains-all').checked;
});

$('create-form').addEventListener('submit', async (event) => {
  event.preventDefault();
  $('create-error').textContent = '';
  clearFieldErrors('create');
  const body = { label: $('create-label').value.trim(), tier: $('create-tier').value };
  for (const [name, list] of Object.entries(readRestrictions('create'))) if (list.length > 0) body[name] = list;
  if (!$('chains-all').checked) {
    body.chains = [...$('chain-list').querySelectorAll('input:checked')].map((b) => b.value);
    if (body.chains.length === 0) {
      $('create-error').textContent = 'Pick at least one chain, or all chains.';
      return;
    }
  }
  if (!$('create-archive').checked) body.archive = false;
  $('create-submit').disabled = true;
  try {
    const created = await api.call('/keys', { method: 'POST', body });
    showSecret(created.key, created.record, 'Your new key');
    $('create-form').reset();
    fillRestrictions('create', undefined);
    $('create-restrictions-box').open = false;
    $('chains-all').dispatchEvent(new Event('change'));
    fillCreateForm();
    await loadKeys();
  } catch (err) {
    if (err.field) $('create-restrictions-box').open = true;
    failForm('create', $('create-error'), err);
  } finally {
    $('create-submit').disabled = false;
  }
});

function showSecret(value, record, title) {
  secret = value;
  $('secret-title').textContent = `${title}: ${record.label || record.prefix}`;
  $('secret-text').textContent = value;
  $('copied').textContent = '';
  const grace = $('secret-grace');
  const retired = record.retired[record.retired.length - 1];
  if (title.startsWith('Your rotated') && retired) {
    grace.replaceChildren(`The previous value (${retired.prefix}…) keeps working until `, timeEl(retired.until), '.');
    grace.hidden = false;
  } else {
    grace.hidden = true;
  }
  show('secret-box', true);
  $('secret-value').focus();
}

function hideSecret() {
  secret = '';
  $('secret-text').textContent = '';
  $('copied').textContent = '';
  show('secret-box', false);
}

$('secret-value').addEventListener('click', () => {
  if (secret !== '') void copyText(secret, $('copied'), $('secret-text'));
});
$('secret-done').addEventListener('click', () => {
  hideSecret();
  announce('The key is hidden.');
});

async function loadKeys() {
  try {
    state.keys = (await api.call('/keys')).keys;
  } catch (err) {
    return fail($('create-error'), err);
  }
  const body = $('keys-table').querySelector('tbody');
  body.replaceChildren(...state.keys.map(keyRow));
  show('keys-empty', state.keys.length === 0);
  show('keys-table', state.keys.length > 0);
  fillKeySelects();
  void fillChainList().catch(() => undefined);
}

function keyRow(k) {
  const active = k.state === 'active';
  const grace =
    k.retired.length > 0
      ? el('div', { class: 'small muted' }, 'previous value until ', timeEl(k.retired[k.retired.length - 1].until))
      : null;
  return el(
    'tr',
    { 'data-key-id': k.id },
    keyCells(k),
    restrictionsCell(k),
    el('td', { 'data-label': 'Created' }, timeEl(k.createdAt)),
    el('td', { 'data-label': 'Last used' }, timeEl(k.lastUsedAt)),
    el('td', { 'data-label': 'State' }, stateBadge(k.state), grace),
    el(
      'td',
      { class: 'actions' },
      active ? keyAction('Restrict', k, () => restrictions.open(k), 'secondary') : null,
      active ? keyAction('Rotate', k, () => rotate(k), 'secondary') : null,
      active ? keyAction('Revoke', k, () => revoke(k)) : null,
    ),
  );
}

// ---- restrictions ------------------------------------------------------------

const restrictions = restrictDialog({
  save: (k, lists) => api.call(`/keys/${encodeURIComponent(k.id)}/restrict`, { method: 'POST', body: lists }),
  saved: async (record) => {
    announce(`The restrictions of key ${record.prefix} are saved.`);
    await loadKeys();
  },
  failed: (node, err) => fail(node, err),
});

/** Restrict a key to one origin from the browser snippet. */
async function restrictToOrigin(k, origin) {
  try {
    await api.call(`/keys/${encodeURIComponent(k.id)}/restrict`, { method: 'POST', body: { origins: [origin] } });
    announce(`Key ${k.prefix} now accepts calls from ${origin} only.`);
    await loadKeys();
    await loadEndpoints();
  } catch (err) {
    fail($('snippet-note'), err);
  }
}

async function rotate(k) {
  const ok = await confirmDialog({
    title: `Rotate key ${k.prefix}…?`,
    text: 'A new value is issued and shown once. The current value keeps working for a grace period, so you can switch without downtime.',
    ok: 'Rotate',
  });
  if (!ok) return;
  try {
    const rotated = await api.call(`/keys/${encodeURIComponent(k.id)}/rotate`, { method: 'POST' });
    showSecret(rotated.key, rotated.record, 'Your rotated key');
    await loadKeys();
  } catch (err) {
    fail($('create-error'), err);
  }
}

async function revoke(k) {
  try {
    if (await revokeKey(api, k)) await loadKeys();
  } catch (err) {
    fail($('create-error'), err);
  }
}

function fillKeySelects() {
  const usage = $('usage-key');
  const chosenUsage = usage.value;
  usage.replaceChildren(
    el('option', { value: '', text: 'All keys' }),
    ...state.keys.map((k) => el('option', { value: k.id, selected: k.id === chosenUsage, text: `${k.prefix}… ${k.label}`.trim() })),
  );
  const ep = $('endpoint-key');
  const chosen = ep.value;
  const active = state.keys.filter((k) => k.state === 'active');
  ep.replaceChildren(
    ...(active.length === 0
      ? [el('option', { value: '', text: 'No active key: create one first' })]
      : active.map((k) => el('option', { value: k.id, selected: k.id === chosen, text: `${k.prefix}… ${k.label}`.trim() }))),
  );
}

// ---- limits and usage --------------------------------------------------------

function meter(used, limit, label) {
  if (limit === null) return el('span', {}, `${fmtNumber(used)} `, el('span', { class: 'muted', text: '(unlimited)' }));
  return el(
    'span',
    { class: 'quota-cell' },
    el('span', { text: `${fmtNumber(used)} of ${fmtNumber(limit)}` }),
    el('meter', { min: 0, max: limit, value: Math.min(used, limit), high: limit * 0.8, 'aria-label': label }),
  );
}

/** A percentile's bucket bound: the calls took at most this long (null: past the last bound, or no calls). */
function fmtLatency(ms, calls) {
  if (calls === 0) return '–';
  return ms === null ? 'over 30 s' : `≤ ${fmtNumber(ms)} ms`;
}

function methodRow(m) {
  return el(
    'tr',
    { 'data-method': m.method },
    el('th', { scope: 'row', 'data-label': 'Method' }, el('code', { text: m.method })),
    el('td', { 'data-label': 'Calls', text: fmtNumber(m.calls) }),
    el('td', { 'data-label': 'Failed', text: fmtNumber(m.errors) }),
    el('td', { 'data-label': 'Error rate', text: m.errorRate === null ? '–' : `${(m.errorRate * 100).toFixed(1)} %` }),
    el('td', { 'data-label': 'Refused', text: fmtNumber(m.limited + m.invalid) }),
    el('td', { 'data-label': 'Latency p50', text: fmtLatency(m.p50Ms, m.calls) }),
    el('td', { 'data-label': 'p95', text: fmtLatency(m.p95Ms, m.calls) }),
    el('td', { 'data-label': 'p99', text: fmtLatency(m.p99Ms, m.calls) }),
  );
}

async function loadUsage() {
  const key = $('usage-key').value;
  let report;
  try {
    report = await api.call(`/usage${key ? `?key=${encodeURIComponent(key)}` : ''}`);
  } catch (err) {
    return fail($('usage-today'), err);
  }
  $('usage-today').textContent = fmtNumber(report.totals.today.calls);
  $('usage-month').textContent = fmtNumber(report.totals.month.calls);
  $('usage-limited').textContent = fmtNumber(report.totals.last30.limited);
  $('usage-errors').textContent = fmtNumber(report.totals.last30.errors);
  $('usage-lag').textContent = `Figures are written every ${fmtNumber(report.lagSeconds)} s, so the last calls may not show yet.`;
  $('quota-table')
    .querySelector('tbody')
    .replaceChildren(
      ...report.keys.map((k) =>
        el(
          'tr',
          { 'data-key-id': k.id },
          el(
            'th',
            { scope: 'row', 'data-label': 'Key' },
            el('code', { text: `${k.prefix}…` }),
            k.label ? ` ${k.label}` : '',
            k.state !== 'active' ? el('span', { class: 'muted', text: ` (${k.state})` }) : '',
          ),
          el('td', { 'data-label': 'Tier', text: k.tier }),
          el('td', { 'data-label': 'Today' }, meter(k.today.units, k.quota.daily, `Key ${k.prefix} today`)),
          el('td', { 'data-label': 'This month' }, meter(k.month.units, k.quota.monthly, `Key ${k.prefix} this month`)),
          el('td', { 'data-label': 'Refused today', text: fmtNumber(k.today.limited) }),
        ),
      ),
      // Every key of the account on a tier, revoked ones included, against what they may use together.
      ...(report.byTier || []).map((t) =>
        el(
          'tr',
          { 'data-tier-total': t.tier, class: 'total' },
          el('th', { scope: 'row', 'data-label': 'Key', text: `All keys on ${t.tier}` }),
          el('td', { 'data-label': 'Tier', text: t.tier }),
          el('td', { 'data-label': 'Today' }, meter(t.today.units, t.quota.daily, `All keys on ${t.tier} today`)),
          el('td', { 'data-label': 'This month' }, meter(t.month.units, t.quota.monthly, `All keys on ${t.tier} this month`)),
          el('td', { 'data-label': 'Refused today', text: fmtNumber(t.today.limited) }),
        ),
      ),
    );
  drawChart($('chart'), report.series);
  fillChartTable($('chart-table'), report.series);
  $('methods-table')
    .querySelector('tbody')
    .replaceChildren(...report.methods.map(methodRow));
  $('limits-table')
    .querySelector('tbody')
    .replaceChildren(
      ...report.tiers.map((t) =>
        el(
          'tr',
          { 'data-tier': t.name },
          el('th', { scope: 'row', 'data-label': 'Tier', text: t.name }),
          el('td', { 'data-label': 'Calls per second', text: fmtLimit(t.rate) }),
          el('td', { 'data-label': 'Burst', text: fmtLimit(t.burst) }),
          el('td', { 'data-label': 'Per day', text: fmtLimit(t.daily) }),
          el('td', { 'data-label': 'Per month', text: fmtLimit(t.monthly) }),
          el('td', { 'data-label': 'Batch size', text: fmtLimit(t.maxBatch) }),
          el('td', { 'data-label': 'Archive', text: t.archive ? 'yes' : 'no' }),
          el('td', { 'data-label': 'WebSockets', text: fmtLimit(t.wsConnections) }),
          el('td', { 'data-label': 'All keys together', text: accountLimits(t) }),
        ),
      ),
    );
}
$('usage-key').addEventListener('change', () => void loadUsage());

// ---- endpoints ---------------------------------------------------------------

function shellQuote(s) {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

function curlLine(e, placeholder) {
  const header = `-H ${shellQuote(`apikey: ${placeholder}`)}`;
  if (e.url.startsWith('grpc://')) {
    // gRPC: grpcurl needs the service's .proto files (the gateway relays without reflection).
    const authority = e.authority ? ` -authority ${e.authority}` : '';
    return `grpcurl -plaintext ${header}${authority} -import-path PROTOS -proto cosmos/auth/v1beta1/query.proto ${e.url.slice(7)} cosmos.auth.v1beta1.Query/Params`;
  }
  const sample = e.sample;
  if (!sample) return `curl -s ${header} ${e.url}`;
  const url = `${e.url}${sample.path === '/' ? '' : sample.path}`;
  if (sample.method === 'GET') return `curl -s ${header} ${url}`;
  return `curl -s ${header} -H 'content-type: application/json' -d ${shellQuote(sample.body ?? '')} ${url}`;
}

/** Why the gateway would refuse this key here ('' when it would not): its chains, or archive-only nodes. */
function whyRefused(key, e) {
  if (!key.permissions.chains.some((p) => matchesPattern(p, e.chain))) return 'This key is not permitted on this chain.';
  const archive = key.permissions.archive ?? tierOf(key.tier)?.archive ?? false;
  if (e.archiveOnly && !archive) return 'This endpoint is served by archive nodes: this key has no archive access.';
  return '';
}

async function loadEndpoints() {
  let endpoints;
  try {
    endpoints = await loadChains();
  } catch (err) {
    return fail($('endpoint-status'), err);
  }
  const key = state.keys.find((k) => k.id === $('endpoint-key').value);
  const placeholder = key ? `${key.prefix}…` : 'YOUR_KEY';
  renderSnippet();
  $('endpoint-list').replaceChildren(
    ...endpoints.map((e) => {
      const line = curlLine(e, placeholder);
      const refusal = key ? whyRefused(key, e) : '';
      const code = el('code', { text: line });
      return el(
        'li',
        { class: 'endpoint', 'data-chain': e.chain },
        el(
          'h2',
          { class: 'endpoint-name' },
          e.chain,
          el('span', { class: 'muted small', text: ` ${e.plugin}${e.archiveOnly ? ', archive nodes' : ''}` }),
        ),
        el('p', {}, el('span', { class: 'visually-hidden', text: 'URL: ' }), el('code', { class: 'url', text: e.url })),
        e.ws ? el('p', {}, el('span', { class: 'muted small', text: 'WebSocket: ' }), el('code', { class: 'url', text: e.ws })) : null,
        e.authority ? el('p', { class: 'muted small', text: `gRPC :authority ${e.authority}; the key goes in metadata apikey.` }) : null,
        refusal === '' ? null : el('p', { class: 'warning small', text: refusal }),
        el('pre', { class: 'curl' }, code),
        el('button', {
          type: 'button',
          class: 'secondary',
          'aria-label': `Copy the curl line for ${e.chain}`,
          text: 'Copy curl line',
          onclick: () => copyText(line, $('endpoint-status'), code),
        }),
      );
    }),
  );
}
$('endpoint-key').addEventListener('change', () => void loadEndpoints());
/** The browser snippet for the chosen key, origin and endpoint (endpoints are loaded by then). */
function renderSnippet() {
  const key = state.keys.find((k) => k.id === $('endpoint-key').value);
  showSnippet({
    key,
    endpoints: (state.endpoints || []).filter((e) => e.url.startsWith('http')),
    restrict: (origin) => void restrictToOrigin(key, origin),
  });
}
$('snippet-endpoint').addEventListener('change', renderSnippet);
$('snippet-origin').addEventListener('input', renderSnippet);

void start();
