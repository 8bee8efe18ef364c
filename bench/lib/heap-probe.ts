/**
 * The soak's view of a child's JavaScript heap, through the V8 inspector (the child runs
 * with `--inspect=127.0.0.1:0`), so nothing is loaded into the exporter and src/ carries no
 * test-only channel:
 *
 *  - `sample()`: a forced full, compacting GC (`HeapProfiler.collectGarbage`), then
 *    `Runtime.getHeapUsage`: bytes the live objects occupy. Garbage never counts, so what
 *    is left is what the process retains — the quantity a leak grows;
 *  - `summary()`: a heap snapshot (it also GCs first) reduced to count and shallow bytes per
 *    constructor (the DevTools "Summary" view), to name what grew between two of them.
 *
 * Only the HeapProfiler and Runtime commands are used; no domain is enabled (Runtime.enable
 * would make V8 keep console messages, Debugger.enable would keep every script alive).
 * Close the probe before the child exits: a child with a session still attached waits for
 * the debugger to disconnect.
 */

export interface HeapSample {
  /** Bytes of live objects after a full GC. */
  usedBytes: number;
  /** Bytes V8 had committed for its heap just before that GC (part of RSS). */
  committedBytes: number;
}

export interface ClassRow {
  name: string;
  count: number;
  bytes: number;
}

/** The inspector URL a child prints on stderr when started with --inspect. */
export function inspectorUrl(line: string): string | null {
  const m = /Debugger listening on (ws:\/\/\S+)/.exec(line);
  return m ? m[1] : null;
}

export class HeapProbe {
  private nextId = 1;
  private readonly pending = new Map<number, { resolve(v: any): void; reject(e: Error): void }>();
  private chunks: string[] | null = null;

  private constructor(private readonly ws: WebSocket) {
    ws.addEventListener('message', (ev) => {
      const msg = JSON.parse(String(ev.data)) as { id?: number; result?: unknown; error?: { message: string }; method?: string; params?: { chunk: string } };
      if (msg.method === 'HeapProfiler.addHeapSnapshotChunk' && this.chunks && msg.params) this.chunks.push(msg.params.chunk);
      if (msg.id === undefined) return;
      const p = this.pending.get(msg.id);
      this.pending.delete(msg.id);
      if (msg.error) p?.reject(new Error(`inspector: ${msg.error.message}`));
      else p?.resolve(msg.result);
    });
    ws.addEventListener('close', () => {
      for (const p of this.pending.values()) p.reject(new Error('inspector connection closed'));
      this.pending.clear();
    });
  }

  static connect(url: string): Promise<HeapProbe> {
    if (typeof WebSocket !== 'function') {
      return Promise.reject(new Error(`the heap probe needs a global WebSocket (Node >= 22); this is node ${process.version}`));
    }
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(url);
      ws.addEventListener('open', () => resolve(new HeapProbe(ws)), { once: true });
      ws.addEventListener('error', () => reject(new Error(`cannot connect to the inspector at ${url}`)), { once: true });
    });
  }

  private call<T>(method: string, params: Record<string, unknown> = {}): Promise<T> {
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.ws.send(JSON.stringify({ id, method, params }));
    });
  }

  async sample(): Promise<HeapSample> {
    const before = await this.call<{ usedSize: number; totalSize: number }>('Runtime.getHeapUsage');
    await this.call('HeapProfiler.collectGarbage');
    const u = await this.call<{ usedSize: number; totalSize: number }>('Runtime.getHeapUsage');
    return { usedBytes: u.usedSize, committedBytes: before.totalSize };
  }

  /** Count and shallow bytes per constructor (strings, arrays, code… under their V8 type). */
  async summary(): Promise<ClassRow[]> {
    this.chunks = [];
    try {
      await this.call('HeapProfiler.takeHeapSnapshot', { reportProgress: false });
      return summarise(JSON.parse(this.chunks.join('')) as HeapSnapshot);
    } finally {
      this.chunks = null;
    }
  }

  close(): Promise<void> {
    if (this.ws.readyState === WebSocket.CLOSED) return Promise.resolve();
    return new Promise((resolve) => {
      this.ws.addEventListener('close', () => resolve(), { once: true });
      this.ws.close();
    });
  }
}

interface HeapSnapshot {
  snapshot: { meta: { node_fields: string[]; node_types: [string[], ...unknown[]] } };
  nodes: number[];
  strings: string[];
}

export function summarise(s: HeapSnapshot): ClassRow[] {
  const f = s.snapshot.meta.node_fields;
  const width = f.length;
  const iType = f.indexOf('type');
  const iName = f.indexOf('name');
  const iSize = f.indexOf('self_size');
  const types = s.snapshot.meta.node_types[0];
  const rows = new Map<string, ClassRow>();
  for (let i = 0; i < s.nodes.length; i += width) {
    const type = types[s.nodes[i + iType]];
    // Objects and closures by constructor name; everything else (strings, arrays,
    // code, hidden V8 internals) by its type, or one row per string would follow.
    const name = type === 'object' || type === 'native' ? s.strings[s.nodes[i + iName]] : type === 'closure' ? `(closure) ${s.strings[s.nodes[i + iName]] || '(anonymous)'}` : `(${type})`;
    let r = rows.get(name);
    if (!r) rows.set(name, (r = { name, count: 0, bytes: 0 }));
    r.count++;
    r.bytes += s.nodes[i + iSize];
  }
  return [...rows.values()];
}

/** Rows whose shallow bytes grew most from `a` to `b`. */
export function growth(a: ClassRow[], b: ClassRow[], top = 15): { name: string; count: number; countDelta: number; bytes: number; bytesDelta: number }[] {
  const before = new Map(a.map((r) => [r.name, r]));
  return b
    .map((r) => ({ name: r.name, count: r.count, countDelta: r.count - (before.get(r.name)?.count ?? 0), bytes: r.bytes, bytesDelta: r.bytes - (before.get(r.name)?.bytes ?? 0) }))
    .sort((x, y) => y.bytesDelta - x.bytesDelta)
    .slice(0, top);
}
