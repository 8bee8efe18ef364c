/** How both pages write durations, sizes, shares and counts. */

export function pad2(n: number): string {
  return n < 10 ? '0' + n : String(n);
}

export function fmtDuration(s: number | null): string {
  if (s === null) return '—';
  s = Math.max(0, Math.floor(s));
  const d = Math.floor(s / 86400), h = Math.floor((s % 86400) / 3600), m = Math.floor((s % 3600) / 60);
  if (d > 0) return d + ' d ' + pad2(h) + ' h';
  if (h > 0) return h + ' h ' + pad2(m) + ' m';
  return m + ' m ' + pad2(s % 60) + ' s';
}

export function fmtSecs(s: number | null): string {
  if (s === null) return '—';
  if (s < 0) s = 0;
  if (s < 1) return Math.round(s * 1000) + ' ms';
  if (s < 10) return s.toFixed(2) + ' s';
  if (s < 60) return s.toFixed(1) + ' s';
  if (s < 3600) {
    const m = Math.floor(s / 60);
    return m + ' m ' + pad2(Math.floor(s - m * 60)) + ' s';
  }
  return fmtDuration(s);
}

export function fmtMs(ms: number | null): string {
  return ms === null ? '—' : fmtSecs(ms / 1000);
}

export function fmtBytes(b: number | null): string {
  if (b === null) return '—';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let i = 0, v = b;
  while (Math.abs(v) >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return (i === 0 ? String(Math.round(v)) : v.toFixed(v < 10 ? 2 : 1)) + ' ' + units[i];
}

export function fmtPct(f: number | null): string {
  return f === null ? 'n/a' : Math.round(f * 100) + ' %';
}

export function fmtInt(n: number | null): string {
  return n === null ? '—' : String(n);
}

export function fmtAge(s: number | null): string {
  return s === null ? '—' : fmtSecs(s);
}

export function fmtClock(d: Date): string {
  return pad2(d.getHours()) + ':' + pad2(d.getMinutes()) + ':' + pad2(d.getSeconds());
}

/** Proofs per minute: one decimal below 10. */
export function fmtRate(perMin: number | null): string {
  if (perMin === null) return '—';
  return perMin < 10 ? perMin.toFixed(1) : String(Math.round(perMin));
}
