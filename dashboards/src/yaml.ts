/**
 * A deliberately small YAML emitter for Prometheus rule files: maps, sequences, strings,
 * numbers, booleans. Strings are written plain when that is unambiguous, single-quoted when
 * they contain `"` (PromQL matchers), double-quoted otherwise (a JSON string is a valid YAML
 * double-quoted scalar), and as `|-` literal blocks when multi-line. Output is deterministic
 * (insertion order), so the checked-in file can be compared byte for byte; the tests load it
 * into a real Prometheus and compare the parsed rules with the source objects.
 */

export type YamlValue = string | number | boolean | null | YamlValue[] | { [key: string]: YamlValue | undefined };

const PLAIN_KEY = /^[A-Za-z_][A-Za-z0-9_.-]*$/;

function key(k: string): string {
  return PLAIN_KEY.test(k) ? k : JSON.stringify(k);
}

const RESERVED = /^(true|false|yes|no|y|n|on|off|null|~)$/i;
const NUMBER_LIKE = /^[-+]?(\d[\d_]*(\.\d*)?([eE][-+]?\d+)?|\.\d+|0x[0-9a-fA-F]+|0o[0-7]+|\.inf|\.nan)$/i;

/** Conservative: only strings no YAML 1.1/1.2 parser could read as anything else. */
function plainSafe(s: string): boolean {
  if (s === '' || RESERVED.test(s) || NUMBER_LIKE.test(s)) return false;
  if (!/^[A-Za-z_$(]|^[0-9][^:]*$/.test(s)) return false; // digit-led with ':' could be sexagesimal
  if (!/^[A-Za-z0-9_ .:/()$=<>+*~,[\]-]+$/.test(s)) return false; // flow indicators are literal in block context
  if (s.includes(': ') || s.endsWith(':') || s.endsWith(' ') || s.includes(' #')) return false;
  return true;
}

function scalar(v: string | number | boolean | null, indent: string): string {
  if (v === null) return 'null';
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) throw new Error(`cannot write non-finite number ${v} to YAML`);
    return String(v);
  }
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  if (v.includes('\n')) {
    const lines = v.split('\n');
    if (lines.some((l) => /\s$/.test(l))) throw new Error(`multi-line YAML string has trailing whitespace: ${JSON.stringify(v)}`);
    if (/^\s/.test(lines[0] ?? '')) throw new Error(`multi-line YAML string starts with whitespace: ${JSON.stringify(v)}`);
    return '|-\n' + lines.map((l) => (l === '' ? '' : indent + l)).join('\n');
  }
  if (plainSafe(v)) return v;
  if (v.includes('"') && !/[\x00-\x1f\x7f]/.test(v)) return `'${v.replace(/'/g, "''")}'`;
  return JSON.stringify(v);
}

function isScalar(v: YamlValue): v is string | number | boolean | null {
  return v === null || typeof v !== 'object';
}

function emit(v: YamlValue, indent: string, out: string[]): void {
  if (Array.isArray(v)) {
    if (v.length === 0) throw new Error('empty sequences are not written inline; omit the key');
    for (const item of v) {
      if (isScalar(item)) {
        out.push(`${indent}- ${scalar(item, indent + '  ')}`);
      } else {
        const sub: string[] = [];
        emit(item, indent + '  ', sub);
        // Put the first line of the nested block on the dash line.
        out.push(`${indent}- ${(sub[0] ?? '').slice(indent.length + 2)}`, ...sub.slice(1));
      }
    }
    return;
  }
  if (v === null || typeof v !== 'object') throw new Error('top-level YAML value must be a map or sequence');
  for (const [k, val] of Object.entries(v)) {
    if (val === undefined) continue;
    if (isScalar(val)) {
      out.push(`${indent}${key(k)}: ${scalar(val, indent + '  ')}`);
    } else {
      out.push(`${indent}${key(k)}:`);
      emit(val, Array.isArray(val) ? indent + '  ' : indent + '  ', out);
    }
  }
}

export function toYaml(v: YamlValue, header?: string): string {
  const out: string[] = [];
  if (header) for (const l of header.split('\n')) out.push(l === '' ? '#' : `# ${l}`);
  emit(v, '', out);
  return out.join('\n') + '\n';
}
