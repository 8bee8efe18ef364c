/**
 * JSON for files and bodies we do not trust. JSON.parse takes the last of duplicate keys
 * silently (native/README.md calls duplicates an error, and a config whose second
 * "gpus" wins is a config nobody reviewed) and overflows the stack on deep nesting
 * ("Maximum call stack size exceeded" — and JSON.stringify of such a value later throws
 * too). Here:
 *
 *  - parseStrictJson: a small parser with readable errors (line and column), duplicate keys
 *    refused, depth bounded — for config files (small);
 *  - jsonShapeBytes: a linear scan (no parsing, no recursion) that counts the containers and
 *    measures the deepest nesting, so a large untrusted body can be refused before
 *    JSON.parse sees it — for daemon snapshots (large, parsed by the fast native JSON.parse
 *    afterwards).
 */

export const MAX_JSON_DEPTH = 64;

export class JsonError extends Error {}

/** What one pass over a JSON body as received says about its shape (jsonShapeBytes). */
export interface JsonShape {
  /** Objects and arrays, counted up to the first past `maxContainers`. */
  containers: number;
  /** The deepest nesting, measured up to the first level past `maxDepth`. */
  depth: number;
}

/**
 * How many objects/arrays a JSON body as received holds and how deep they nest (UTF-8
 * bytes; strings skipped), in one pass: the attach poll needs both for every body (the
 * count bounds what JSON.parse allocates, the depth what walks and re-serves it), and two
 * passes over a 64 KiB body were a tenth of the poll. Bytes, not the decoded string: exact,
 * since JSON's structural characters are ASCII and no byte of a multi-byte UTF-8 sequence
 * is below 0x80. Stops at the first container past `maxContainers` (the body is refused
 * whatever its depth); past `maxDepth` the depth stays at maxDepth + 1 and only the count
 * goes on (it stops there when the count is not bounded).
 */
export function jsonShapeBytes(b: Uint8Array, maxContainers = Infinity, maxDepth = Infinity): JsonShape {
  const containers = scanShape(b, maxContainers, maxDepth);
  return { containers, depth: scannedDepth };
}

/** The depth measured by the last scanShape. */
let scannedDepth = 0;

/**
 * jsonShapeBytes' scan: returns the count, leaves the depth in `scannedDepth`. Apart from
 * the result object on purpose: the scan runs once a poll and V8 compiles its loop on stack
 * replacement before the code after it has ever run; an object literal there, without type
 * feedback, sent every call back to the interpreter (hundreds of deoptimisations over the
 * first ~500 polls of bench/attach-poll.ts). A number and a variable need no feedback.
 */
function scanShape(b: Uint8Array, maxContainers: number, maxDepth: number): number {
  let depth = 0;
  let max = 0;
  let n = 0;
  let deep = false;
  const len = b.length;
  for (let i = 0; i < len; i++) {
    const c = b[i];
    if (c === 34 /* " */) {
      // The string's body in a tight loop of its own: most bytes of a snapshot are in keys.
      for (i++; i < len; i++) {
        const d = b[i];
        if (d === 34) break;
        if (d === 92 /* \ */) i++;
      }
    } else if (c === 91 /* [ */ || c === 123 /* { */) {
      if (++n > maxContainers) {
        scannedDepth = max;
        return n;
      }
      if (++depth > max && !deep) {
        max = depth;
        if (max > maxDepth) {
          deep = true;
          if (maxContainers === Infinity) {
            scannedDepth = max;
            return n;
          }
        }
      }
    } else if (c === 93 /* ] */ || c === 125 /* } */) depth--;
  }
  scannedDepth = max;
  return n;
}

/**
 * The deepest nesting of arrays/objects in a JSON body as received (jsonShapeBytes); stops
 * counting past `limit`.
 */
export function jsonNestingDepthBytes(b: Uint8Array, limit = Infinity): number {
  return jsonShapeBytes(b, Infinity, limit).depth;
}

/**
 * How many objects and arrays a JSON body as received holds (jsonShapeBytes); stops
 * counting past `limit`. Run before JSON.parse, it bounds what parsing an untrusted body
 * allocates: 14 MiB of `{},` is 4.8 M objects (over 1 GB of heap once parsed).
 */
export function jsonContainerCountBytes(b: Uint8Array, limit = Infinity): number {
  return jsonShapeBytes(b, limit, Infinity).containers;
}

/** Parses JSON; throws JsonError ("line L column C: …") on duplicate keys, nesting over maxDepth, or bad syntax. */
export function parseStrictJson(text: string, maxDepth = MAX_JSON_DEPTH): unknown {
  let i = 0;
  const where = (at = i) => {
    let line = 1;
    let col = 1;
    for (let k = 0; k < at && k < text.length; k++) {
      if (text[k] === '\n') {
        line++;
        col = 1;
      } else col++;
    }
    return `line ${line} column ${col}`;
  };
  const err = (msg: string, at = i): never => {
    throw new JsonError(`${where(at)}: ${msg}`);
  };
  const ws = () => {
    while (i < text.length && (text[i] === ' ' || text[i] === '\t' || text[i] === '\n' || text[i] === '\r')) i++;
  };
  const str = (): string => {
    const start = i;
    i++; // "
    let out = '';
    for (;;) {
      if (i >= text.length) err('unterminated string', start);
      const c = text[i];
      if (c === '"') {
        i++;
        return out;
      }
      if (c === '\\') {
        const e = text[i + 1];
        const map: Record<string, string> = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };
        if (e === 'u') {
          const hex = text.slice(i + 2, i + 6);
          if (!/^[0-9a-fA-F]{4}$/.test(hex)) err('bad \\u escape');
          out += String.fromCharCode(parseInt(hex, 16));
          i += 6;
        } else if (e !== undefined && e in map) {
          out += map[e];
          i += 2;
        } else err('bad escape in string');
        continue;
      }
      if (c.charCodeAt(0) < 0x20) err('control character in string');
      out += c;
      i++;
    }
  };
  const value = (depth: number): unknown => {
    ws();
    if (i >= text.length) err('unexpected end of input');
    const c = text[i];
    if (c === '{' || c === '[') {
      if (depth >= maxDepth) err(`nested deeper than ${maxDepth} levels`);
      const open = i;
      i++;
      ws();
      if (c === '[') {
        const arr: unknown[] = [];
        if (text[i] === ']') {
          i++;
          return arr;
        }
        for (;;) {
          arr.push(value(depth + 1));
          ws();
          if (text[i] === ',') i++;
          else if (text[i] === ']') {
            i++;
            return arr;
          } else err(i >= text.length ? `array opened at ${where(open)} is not closed` : `expected "," or "]"`);
        }
      }
      const obj: Record<string, unknown> = Object.create(null) as Record<string, unknown>;
      const seen = new Set<string>();
      if (text[i] === '}') {
        i++;
        return { ...obj };
      }
      for (;;) {
        ws();
        if (text[i] !== '"') err('expected a string key');
        const keyAt = i;
        const k = str();
        if (seen.has(k)) err(`duplicate key ${JSON.stringify(k)}`, keyAt);
        seen.add(k);
        ws();
        if (text[i] !== ':') err('expected ":"');
        i++;
        obj[k] = value(depth + 1);
        ws();
        if (text[i] === ',') i++;
        else if (text[i] === '}') {
          i++;
          // A plain object again (keys like "__proto__" stay own data properties).
          const out: Record<string, unknown> = {};
          for (const key of Object.keys(obj)) Object.defineProperty(out, key, { value: obj[key], enumerable: true, writable: true, configurable: true });
          return out;
        } else err(i >= text.length ? `object opened at ${where(open)} is not closed` : 'expected "," or "}"');
      }
    }
    if (c === '"') return str();
    const m = /^(?:-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null)/.exec(text.slice(i, i + 400));
    if (!m) return err(`unexpected ${JSON.stringify(c)}`);
    i += m[0].length;
    if (m[0] === 'true') return true;
    if (m[0] === 'false') return false;
    if (m[0] === 'null') return null;
    const n = Number(m[0]);
    if (!Number.isFinite(n)) err(`number ${m[0]} is out of range`, i - m[0].length);
    return n;
  };
  const v = value(0);
  ws();
  if (i < text.length) err('unexpected text after the JSON value');
  return v;
}
