// The usage chart: calls per day, stacked by chain, as inline SVG drawn here (no
// library), with a legend, a text summary for screen readers, and the same numbers
// as a table. Input is the `series` of GET /dashboard/api/usage.

import { el, fmtNumber } from './common.js';

const SVG = 'http://www.w3.org/2000/svg';
// Okabe–Ito: told apart with the common kinds of colour blindness.
const COLOURS = ['#0072B2', '#E69F00', '#009E73', '#CC79A7', '#56B4E9', '#D55E00', '#999933', '#332288', '#882255', '#44AA99'];

export const colourOf = (i) => COLOURS[i % COLOURS.length];

function svg(tag, attrs = {}, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  if (text !== undefined) node.textContent = text;
  return node;
}

/** A round, even upper bound for the axis, so the middle gridline is a whole number of calls. */
function niceMax(n) {
  if (n <= 2) return 2;
  const p = 10 ** Math.floor(Math.log10(n));
  for (const m of [1, 2, 4, 6, 8, 10]) if (n <= m * p && (m * p) % 2 === 0) return m * p;
  return 10 * p;
}

function swatch(colour) {
  const s = svg('svg', { width: 12, height: 12, viewBox: '0 0 12 12', 'aria-hidden': 'true', focusable: 'false' });
  s.append(svg('rect', { width: 12, height: 12, rx: 2, fill: colour }));
  return s;
}

export function drawChart(figure, series) {
  const days = series.days;
  const totals = days.map((_, i) => series.chains.reduce((sum, c) => sum + c.calls[i], 0));
  const total = totals.reduce((a, b) => a + b, 0);
  const top = niceMax(Math.max(...totals, 0));
  const W = 640;
  const H = 240;
  const left = 48;
  const right = 8;
  const topPad = 10;
  const bottom = 28;
  const plotH = H - topPad - bottom;
  const step = (W - left - right) / days.length;
  const barW = Math.max(2, step * 0.72);
  const y = (v) => topPad + plotH - (v / top) * plotH;

  const busiest = totals.indexOf(Math.max(...totals));
  const summary =
    total === 0
      ? 'No calls in the last 30 days.'
      : `${fmtNumber(total)} calls in the last 30 days over ${series.chains.length} chain(s) (${series.chains
          .map((c) => `${c.chain} ${fmtNumber(c.calls.reduce((a, b) => a + b, 0))}`)
          .join(', ')}); the busiest day was ${days[busiest]} with ${fmtNumber(totals[busiest])}.`;

  const chart = svg('svg', {
    viewBox: `0 0 ${W} ${H}`,
    role: 'img',
    'aria-labelledby': 'chart-svg-title chart-svg-desc',
    class: 'chart-svg',
  });
  chart.append(svg('title', { id: 'chart-svg-title' }, 'Calls per day and chain, last 30 days'));
  chart.append(svg('desc', { id: 'chart-svg-desc' }, summary));

  for (const f of [0, 0.5, 1]) {
    const v = top * f;
    chart.append(svg('line', { x1: left, x2: W - right, y1: y(v), y2: y(v), class: 'grid' }));
    chart.append(svg('text', { x: left - 6, y: y(v) + 4, 'text-anchor': 'end', class: 'axis' }, fmtNumber(v)));
  }
  days.forEach((day, i) => {
    const x = left + i * step + (step - barW) / 2;
    let base = 0;
    series.chains.forEach((c, ci) => {
      const v = c.calls[i];
      if (v === 0) return;
      const rect = svg('rect', { x, y: y(base + v), width: barW, height: Math.max(1, y(base) - y(base + v)), fill: colourOf(ci) });
      rect.append(svg('title', {}, `${day} · ${c.chain}: ${fmtNumber(v)} calls`));
      chart.append(rect);
      base += v;
    });
    if (i % 5 === 4 || i === days.length - 1) {
      chart.append(svg('text', { x: x + barW / 2, y: H - 8, 'text-anchor': 'middle', class: 'axis' }, day.slice(5)));
    }
  });

  const legend = el(
    'ul',
    { class: 'legend', 'aria-label': 'Chains' },
    series.chains.map((c, i) => el('li', {}, swatch(colourOf(i)), ` ${c.chain}`)),
  );
  figure.replaceChildren(
    chart,
    series.chains.length > 0 ? legend : el('p', { class: 'muted', text: 'No calls yet.' }),
    el('figcaption', { class: 'visually-hidden', text: summary }),
  );
}

/** The chart's numbers, newest day first: day, one column per chain, refused calls. */
export function fillChartTable(table, series) {
  const head = el(
    'thead',
    {},
    el(
      'tr',
      {},
      el('th', { scope: 'col', text: 'Day (UTC)' }),
      series.chains.map((c) => el('th', { scope: 'col', text: c.chain })),
      el('th', { scope: 'col', text: 'Refused' }),
    ),
  );
  const rows = series.days
    .map((day, i) =>
      el(
        'tr',
        { 'data-day': day },
        el('th', { scope: 'row', text: day }),
        series.chains.map((c) => el('td', { 'data-chain': c.chain, text: fmtNumber(c.calls[i]) })),
        el('td', { text: fmtNumber(series.limited[i]) }),
      ),
    )
    .reverse();
  table.replaceChildren(head, el('tbody', {}, rows));
}
