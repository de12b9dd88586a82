// A small RGB raster with lines, boxes and a 3×5 pixel font, written out as a PNG with
// node:zlib: the soak's plot without a plotting or image dependency. Not a general
// graphics library: what a few line charts with labels need, nothing more.

import { deflateSync } from 'node:zlib';

export type Rgb = readonly [number, number, number];

/** CRC-32 (ISO-HDLC) table, as PNG's chunk checksum requires. */
const CRC_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
})();

function crc32(buf: Uint8Array): number {
  let c = 0xffffffff;
  for (const b of buf) c = (CRC_TABLE[(c ^ b) & 0xff] as number) ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

function chunk(type: string, data: Uint8Array): Buffer {
  const out = Buffer.alloc(12 + data.length);
  out.writeUInt32BE(data.length, 0);
  out.write(type, 4, 'latin1');
  Buffer.from(data).copy(out, 8);
  out.writeUInt32BE(crc32(out.subarray(4, 8 + data.length)), 8 + data.length);
  return out;
}

/** 3×5 glyphs, rows top to bottom, '#' set. Upper case only; lower case is drawn as upper. */
const GLYPHS: Record<string, string> = {
  '0': '###|#.#|#.#|#.#|###',
  '1': '.#.|##.|.#.|.#.|###',
  '2': '###|..#|###|#..|###',
  '3': '###|..#|###|..#|###',
  '4': '#.#|#.#|###|..#|..#',
  '5': '###|#..|###|..#|###',
  '6': '###|#..|###|#.#|###',
  '7': '###|..#|.#.|.#.|.#.',
  '8': '###|#.#|###|#.#|###',
  '9': '###|#.#|###|..#|###',
  A: '.#.|#.#|###|#.#|#.#',
  B: '##.|#.#|##.|#.#|##.',
  C: '.##|#..|#..|#..|.##',
  D: '##.|#.#|#.#|#.#|##.',
  E: '###|#..|##.|#..|###',
  F: '###|#..|##.|#..|#..',
  G: '.##|#..|#.#|#.#|.##',
  H: '#.#|#.#|###|#.#|#.#',
  I: '###|.#.|.#.|.#.|###',
  J: '..#|..#|..#|#.#|.#.',
  K: '#.#|#.#|##.|#.#|#.#',
  L: '#..|#..|#..|#..|###',
  M: '#.#|###|###|#.#|#.#',
  N: '##.|#.#|#.#|#.#|#.#',
  O: '.#.|#.#|#.#|#.#|.#.',
  P: '##.|#.#|##.|#..|#..',
  Q: '.#.|#.#|#.#|.#.|..#',
  R: '##.|#.#|##.|#.#|#.#',
  S: '.##|#..|.#.|..#|##.',
  T: '###|.#.|.#.|.#.|.#.',
  U: '#.#|#.#|#.#|#.#|###',
  V: '#.#|#.#|#.#|#.#|.#.',
  W: '#.#|#.#|###|###|#.#',
  X: '#.#|#.#|.#.|#.#|#.#',
  Y: '#.#|#.#|.#.|.#.|.#.',
  Z: '###|..#|.#.|#..|###',
  '.': '...|...|...|...|.#.',
  ',': '...|...|...|.#.|#..',
  ':': '...|.#.|...|.#.|...',
  '-': '...|...|###|...|...',
  '+': '...|.#.|###|.#.|...',
  '/': '..#|..#|.#.|#..|#..',
  '%': '#.#|..#|.#.|#..|#.#',
  '(': '.#.|#..|#..|#..|.#.',
  ')': '.#.|..#|..#|..#|.#.',
  '>': '#..|.#.|..#|.#.|#..',
  '<': '..#|.#.|#..|.#.|..#',
  '=': '...|###|...|###|...',
  ' ': '...|...|...|...|...',
};

export class Raster {
  readonly px: Uint8Array;

  constructor(
    readonly width: number,
    readonly height: number,
    background: Rgb = [255, 255, 255],
  ) {
    this.px = new Uint8Array(width * height * 3);
    this.fill(0, 0, width, height, background);
  }

  set(x: number, y: number, c: Rgb): void {
    x = Math.round(x);
    y = Math.round(y);
    if (x < 0 || y < 0 || x >= this.width || y >= this.height) return;
    const i = (y * this.width + x) * 3;
    this.px[i] = c[0];
    this.px[i + 1] = c[1];
    this.px[i + 2] = c[2];
  }

  fill(x: number, y: number, w: number, h: number, c: Rgb): void {
    for (let j = Math.max(0, Math.round(y)); j < Math.min(this.height, Math.round(y + h)); j++)
      for (let i = Math.max(0, Math.round(x)); i < Math.min(this.width, Math.round(x + w)); i++) this.set(i, j, c);
  }

  /** A line `thick` pixels wide (Bresenham, a square pen). */
  line(x0: number, y0: number, x1: number, y1: number, c: Rgb, thick = 1): void {
    x0 = Math.round(x0);
    y0 = Math.round(y0);
    x1 = Math.round(x1);
    y1 = Math.round(y1);
    const dx = Math.abs(x1 - x0);
    const dy = -Math.abs(y1 - y0);
    const sx = x0 < x1 ? 1 : -1;
    const sy = y0 < y1 ? 1 : -1;
    let err = dx + dy;
    const half = Math.floor(thick / 2);
    for (;;) {
      this.fill(x0 - half, y0 - half, thick, thick, c);
      if (x0 === x1 && y0 === y1) return;
      const e2 = 2 * err;
      if (e2 >= dy) {
        err += dy;
        x0 += sx;
      }
      if (e2 <= dx) {
        err += dx;
        y0 += sy;
      }
    }
  }

  /** Text at (x, y) top left, each font pixel `scale` pixels square; returns the width drawn. */
  text(x: number, y: number, s: string, c: Rgb, scale = 2): number {
    let cx = x;
    for (const ch of s.toUpperCase()) {
      const g = GLYPHS[ch] ?? GLYPHS[' '];
      (g as string).split('|').forEach((row, j) => {
        for (let i = 0; i < 3; i++) if (row[i] === '#') this.fill(cx + i * scale, y + j * scale, scale, scale, c);
      });
      cx += 4 * scale;
    }
    return cx - x;
  }

  static textWidth(s: string, scale = 2): number {
    return s.length * 4 * scale;
  }

  png(): Buffer {
    const header = Buffer.alloc(13);
    header.writeUInt32BE(this.width, 0);
    header.writeUInt32BE(this.height, 4);
    header[8] = 8; // bits per channel
    header[9] = 2; // truecolour RGB
    // Each scanline starts with filter type 0 (none).
    const raw = Buffer.alloc((this.width * 3 + 1) * this.height);
    for (let y = 0; y < this.height; y++) {
      raw[y * (this.width * 3 + 1)] = 0;
      Buffer.from(this.px.buffer, y * this.width * 3, this.width * 3).copy(raw, y * (this.width * 3 + 1) + 1);
    }
    return Buffer.concat([
      Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
      chunk('IHDR', header),
      chunk('IDAT', deflateSync(raw)),
      chunk('IEND', new Uint8Array(0)),
    ]);
  }
}

export interface Series {
  readonly label: string;
  readonly color: Rgb;
  /** (x, y) points in data units, x ascending. */
  readonly points: ReadonlyArray<readonly [number, number]>;
}

export interface Band {
  readonly from: number;
  readonly to: number;
  readonly color: Rgb;
  readonly label: string;
}

export interface Panel {
  readonly title: string;
  readonly series: readonly Series[];
  /** Shaded x ranges (fault windows), drawn under the lines. */
  readonly bands?: readonly Band[];
}

const INK: Rgb = [40, 40, 40];
const GRID: Rgb = [225, 225, 225];

/** A "nice" step for about `n` ticks over `span`. */
function niceStep(span: number, n: number): number {
  const raw = span / Math.max(1, n);
  const mag = 10 ** Math.floor(Math.log10(raw));
  const f = raw / mag;
  return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * mag;
}

function fmt(v: number): string {
  if (v === 0) return '0';
  if (Math.abs(v) >= 100) return v.toFixed(0);
  if (Math.abs(v) >= 1) return Number(v.toFixed(1)).toString();
  return Number(v.toPrecision(2)).toString();
}

/** Panels stacked over one shared x axis (minutes), each with its own y axis from 0. */
export function plot(panels: readonly Panel[], xMax: number, xLabel: string, width = 1200, panelHeight = 220): Buffer {
  const left = 80;
  const right = 20;
  const top = 16;
  const gap = 56;
  const height = top + panels.length * (panelHeight + gap) + 10;
  const r = new Raster(width, height);
  const w = width - left - right;
  const xStep = niceStep(xMax, 15);
  panels.forEach((p, k) => {
    const y0 = top + k * (panelHeight + gap) + 24;
    const h = panelHeight - 24;
    let yMax = 0;
    for (const s of p.series) for (const [, y] of s.points) yMax = Math.max(yMax, y);
    const yStep = niceStep(yMax === 0 ? 1 : yMax * 1.1, 4);
    yMax = Math.ceil((yMax === 0 ? 1 : yMax * 1.1) / yStep) * yStep;
    const X = (x: number): number => left + (x / xMax) * w;
    const Y = (y: number): number => y0 + h - (y / yMax) * h;
    for (const b of p.bands ?? []) r.fill(X(b.from), y0, Math.max(1, X(b.to) - X(b.from)), h, b.color);
    for (const b of p.bands ?? []) if (k === 0) r.text(X(b.from) + 2, y0 + 2, b.label, INK, 2);
    for (let y = 0; y <= yMax + 1e-9; y += yStep) {
      r.line(left, Y(y), left + w, Y(y), GRID);
      const t = fmt(y);
      r.text(left - 6 - Raster.textWidth(t), Y(y) - 5, t, INK);
    }
    for (let x = 0; x <= xMax + 1e-9; x += xStep) {
      r.line(X(x), y0 + h, X(x), y0 + h + 4, INK);
      const t = fmt(x);
      r.text(X(x) - Raster.textWidth(t) / 2, y0 + h + 8, t, INK);
    }
    r.line(left, y0, left, y0 + h, INK);
    r.line(left, y0 + h, left + w, y0 + h, INK);
    let tx = left + r.text(left, y0 - 20, p.title, INK, 3) + 24;
    for (const s of p.series) {
      r.fill(tx, y0 - 16, 16, 6, s.color);
      tx += 22 + r.text(tx + 22, y0 - 18, s.label, INK, 2) + 16;
      for (let i = 1; i < s.points.length; i++) {
        const a = s.points[i - 1] as readonly [number, number];
        const b = s.points[i] as readonly [number, number];
        r.line(X(a[0]), Y(a[1]), X(b[0]), Y(b[1]), s.color, 2);
      }
      if (s.points.length === 1) {
        const [[x, y]] = s.points as [readonly [number, number]];
        r.fill(X(x) - 2, Y(y) - 2, 5, 5, s.color);
      }
    }
    if (k === panels.length - 1) r.text(left + w - Raster.textWidth(xLabel), y0 + h + 24, xLabel, INK);
  });
  return r.png();
}
