// The Endpoints view's browser snippet: for the chosen key, page origin and HTTP
// endpoint, a `fetch` call and (on EVM endpoints) a viem client that work from that
// page, and a note on whether the key accepts calls from that origin, with a button
// to restrict it to that origin when it accepts calls from anywhere.

import { $, el, copyText } from './common.js';
import { originAllowed } from './restrictions.js';

const ORIGIN = /^[a-z][a-z0-9+.-]*:\/\/[^/?#\s@]+$/i;

/** The page's origin as typed, in the form browsers send it; '' when it is not one. */
export function pageOrigin(text) {
  const t = text.trim().replace(/\/$/, '');
  if (!ORIGIN.test(t)) return '';
  try {
    const u = new URL(t);
    return u.origin === 'null' ? t.toLowerCase() : u.origin;
  } catch {
    return '';
  }
}

function fetchSnippet(e, placeholder) {
  const sample = e.sample || { method: 'GET', path: '/' };
  const url = `${e.url}${sample.path === '/' ? '' : sample.path}`;
  const lines = [`const KEY = '${placeholder}'; // your whole key`, `const res = await fetch('${url}', {`];
  if (sample.method === 'POST') {
    lines.push(
      `  method: 'POST',`,
      `  headers: { apikey: KEY, 'content-type': 'application/json' },`,
      `  body: JSON.stringify(${sample.body ?? '{}'}),`,
    );
  } else {
    lines.push(`  headers: { apikey: KEY },`);
  }
  lines.push('});', "console.log(res.status, res.headers.get('RateLimit-Remaining'), await res.json());");
  return lines.join('\n');
}

function viemSnippet(e, placeholder) {
  return [
    "import { createPublicClient, http } from 'viem';",
    '',
    `const KEY = '${placeholder}'; // your whole key`,
    'const client = createPublicClient({',
    `  transport: http('${e.url}', { fetchOptions: { headers: { apikey: KEY } } }),`,
    '});',
    'console.log(await client.getBlockNumber());',
  ].join('\n');
}

function codeBlock(title, text, what) {
  const code = el('code', { text });
  return [
    el('h3', { text: title }),
    el('pre', { class: 'curl' }, code),
    el('button', {
      type: 'button',
      class: 'secondary',
      text: `Copy the ${what} snippet`,
      onclick: () => copyText(text, $('snippet-status'), code),
    }),
  ];
}

/**
 * Fill the snippet section. `key` is the chosen key (or undefined), `endpoints` the
 * HTTP endpoints; `restrict(origin)` restricts the key to that origin.
 */
export function showSnippet({ key, endpoints, restrict }) {
  const select = $('snippet-endpoint');
  const chosen = select.value;
  if (select.childElementCount !== endpoints.length) {
    select.replaceChildren(...endpoints.map((e) => el('option', { value: e.chain, selected: e.chain === chosen, text: e.chain })));
  }
  const e = endpoints.find((x) => x.chain === select.value) || endpoints[0];
  const out = $('snippet-code');
  const note = $('snippet-note');
  note.replaceChildren();
  note.className = 'small';
  if (!e) return out.replaceChildren(el('p', { class: 'muted', text: 'No endpoint takes calls from a browser.' }));
  const placeholder = key ? `${key.prefix}…` : 'YOUR_KEY';
  out.replaceChildren(
    ...codeBlock('fetch', fetchSnippet(e, placeholder), 'fetch'),
    ...(e.plugin === 'evm' ? codeBlock('viem', viemSnippet(e, placeholder), 'viem') : []),
  );
  const typed = $('snippet-origin').value;
  const origin = pageOrigin(typed);
  if (typed.trim() !== '' && origin === '') {
    note.className = 'error small';
    note.textContent = 'Not an origin: write it as scheme://host[:port], like https://app.example.com.';
    return;
  }
  if (!key || origin === '') {
    note.textContent = 'Enter the origin your page is served from to check that this key accepts calls from it.';
    return;
  }
  const origins = key.restrictions.origins;
  if (origins.length === 0) {
    note.className = 'warning small';
    note.append(
      `This key accepts calls from any origin: anyone who reads it in your page can use it elsewhere. `,
      el('button', { type: 'button', class: 'secondary', text: `Allow only ${origin}`, onclick: () => restrict(origin) }),
    );
  } else if (originAllowed(origins, origin)) {
    note.textContent = `This key accepts calls from ${origin}; pages on other origins are refused.`;
  } else {
    note.className = 'warning small';
    note.textContent = `This key does not accept calls from ${origin} (it allows ${origins.join(', ')}): the browser will refuse them.`;
  }
}
