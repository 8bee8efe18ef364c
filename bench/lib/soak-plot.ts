/**
 * The soak's plot, as a dependency-free SVG: one panel per measure (heap used after a full
 * GC, the judged one, above; RSS, reported, below), both exporters in each, the warm-up
 * shaded and, where given, each series' fitted trend over the judged window drawn dashed.
 */

export interface Panel {
  title: string;
  unit: string;
  /** Seconds since the start, per sample of each series (series may be sampled apart). */
  series: { name: string; t: number[]; v: number[]; trend?: { t0: number; t1: number; v0: number; v1: number } }[];
}

const COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd'];

function niceStep(range: number): number {
  const raw = range / 5;
  const p = 10 ** Math.floor(Math.log10(raw));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= raw) return m * p;
  return 10 * p;
}

function panel(out: string[], p: Panel, top: number, height: number, width: number, tMax: number, warmupS: number): void {
  const L = 70;
  const R = 20;
  const x = (t: number) => L + ((width - L - R) * t) / tMax;
  const all = p.series.flatMap((s) => s.v).filter(Number.isFinite);
  const maxV = Math.max(1, ...all);
  const step = niceStep(maxV * 1.15);
  const yTop = Math.ceil((maxV * 1.15) / step) * step;
  const y = (v: number) => top + height * (1 - v / yTop);
  out.push(`<rect x="${x(0)}" y="${top}" width="${x(warmupS) - x(0)}" height="${height}" fill="#eee"/>`);
  out.push(`<text x="${(x(0) + x(warmupS)) / 2}" y="${top + 14}" text-anchor="middle" fill="#777">warm-up</text>`);
  for (let v = 0; v <= yTop + 1e-9; v += step) {
    out.push(`<line x1="${L}" x2="${width - R}" y1="${y(v)}" y2="${y(v)}" stroke="#ddd"/>`);
    out.push(`<text x="${L - 6}" y="${y(v) + 4}" text-anchor="end">${Number(v.toPrecision(4))}</text>`);
  }
  out.push(`<text x="16" y="${top + height / 2}" transform="rotate(-90 16 ${top + height / 2})" text-anchor="middle">${p.unit}</text>`);
  out.push(`<text x="${L}" y="${top - 8}" font-size="13">${p.title}</text>`);
  out.push(`<line x1="${L}" x2="${L}" y1="${top}" y2="${top + height}" stroke="black"/><line x1="${L}" x2="${width - R}" y1="${top + height}" y2="${top + height}" stroke="black"/>`);
  const tickStep = Math.max(60, Math.ceil(tMax / 10 / 60) * 60);
  for (let t = 0; t <= tMax; t += tickStep) out.push(`<text x="${x(t)}" y="${top + height + 16}" text-anchor="middle">${(t / 60).toFixed(0)}</text>`);
  p.series.forEach((s, i) => {
    const c = COLORS[i % COLORS.length];
    const pts = s.t.map((t, k) => [t, s.v[k]] as const).filter(([, v]) => Number.isFinite(v));
    out.push(`<polyline fill="none" stroke="${c}" stroke-width="1.5" points="${pts.map(([t, v]) => `${x(t).toFixed(1)},${y(v).toFixed(1)}`).join(' ')}"/>`);
    if (s.trend) {
      const tr = s.trend;
      out.push(`<line x1="${x(tr.t0).toFixed(1)}" y1="${y(tr.v0).toFixed(1)}" x2="${x(tr.t1).toFixed(1)}" y2="${y(tr.v1).toFixed(1)}" stroke="black" stroke-width="1" stroke-dasharray="5 3"/>`);
    }
    out.push(`<rect x="${L + 10 + i * 330}" y="${top + height + 26}" width="12" height="3" fill="${c}"/><text x="${L + 28 + i * 330}" y="${top + height + 31}">${s.name}</text>`);
  });
}

export function soakSvg(title: string, panels: Panel[], warmupS: number): string {
  const W = 900;
  const PH = 260;
  const gap = 90;
  const T = 60;
  const H = T + panels.length * (PH + gap) - 20;
  const tMax = Math.max(1, ...panels.flatMap((p) => p.series.flatMap((s) => s.t)));
  const out: string[] = [];
  out.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`);
  out.push(`<rect width="${W}" height="${H}" fill="white"/>`);
  out.push(`<text x="${W / 2}" y="22" text-anchor="middle" font-size="14">${title}</text>`);
  panels.forEach((p, i) => panel(out, p, T + 10 + i * (PH + gap), PH, W, tMax, warmupS));
  out.push(`<text x="${W / 2}" y="${H - 6}" text-anchor="middle">minutes since start (dashed: fitted trend over the judged window)</text>`);
  out.push('</svg>');
  return out.join('\n') + '\n';
}
