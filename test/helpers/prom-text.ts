/** A small parser for the Prometheus text exposition format, for assertions in tests. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*,?/g;

function unescape(v: string): string {
  return v.replace(/\\(["\\n])/g, (_, c: string) => (c === 'n' ? '\n' : c));
}

export function parse(body: string): Sample[] {
  const out: Sample[] = [];
  for (const line of body.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = LINE.exec(line);
    if (!m) throw new Error(`not an exposition line: ${line}`);
    const labels: Record<string, string> = {};
    if (m[2]) for (const l of m[2].matchAll(LABEL)) labels[l[1]] = unescape(l[2]);
    const raw = m[3];
    const value = raw === '+Inf' ? Infinity : raw === '-Inf' ? -Infinity : Number(raw);
    out.push({ name: m[1], labels, value });
  }
  return out;
}

const matches = (s: Sample, name: string, labels: Record<string, string>) =>
  s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v);

/** Samples of `name` whose labels include `labels`. */
export function select(body: string | Sample[], name: string, labels: Record<string, string> = {}): Sample[] {
  const samples = typeof body === 'string' ? parse(body) : body;
  return samples.filter((s) => matches(s, name, labels));
}

/** The one sample of `name` with exactly these labels included; throws if none or several. */
export function value(body: string | Sample[], name: string, labels: Record<string, string> = {}): number {
  const found = select(body, name, labels);
  if (found.length !== 1) throw new Error(`expected one ${name}${JSON.stringify(labels)}, found ${found.length}`);
  return found[0].value;
}

/** Sum of the values of `name` over samples whose labels include `labels`. */
export function sum(body: string | Sample[], name: string, labels: Record<string, string> = {}): number {
  return select(body, name, labels).reduce((a, s) => a + s.value, 0);
}
