/**
 * Issue 23: AttachSource (src/engine/sources/attach/attach-source.ts) survivors of the Stryker
 * runs that attach-source-edges.test.ts leaves: the depth bound at its edge, what each skipped
 * part's count says and what the one log line names (exactly), stop() while start()'s poll
 * hangs, and the /status counters' growth bound (docs/hostile-inputs.md row 20.1c) at its
 * edges.
 *
 * Expectations come from the file's header rules (every failure and every skipped part counted
 * by reason with a readable message; one log line per distinct problem naming at most three),
 * docs/hostile-inputs.md (rows 5, 6, 20.1c: depth > 64 refused; SIGTERM while a poll hangs
 * abandons it at once; completed + failed + cancelled by kind grow by at most (elapsed + 10 s) x
 * 100 x workers since the last good poll, over the uptime after a restart) and cuzk's /status
 * (extern/cuzk status.rs: cumulative per-kind counters, uptime_secs since the process started).
 */
import * as net from 'node:net';
import type { AddressInfo } from 'node:net';
import { AttachSource } from '../../src/engine/sources/attach/attach-source';
import { ErrorCounts } from '../../src/engine/model/error-counts';
import { kindIndex, OTHER_KIND_INDEX } from '../../src/engine/model/kinds';
import type { Logger } from '../../src/util/logger';
import { idle, pipeline, snapshot } from './snapshots';
import { StatusServer } from './status-server';

const PC2 = kindIndex('porep-c2');
const SNAP = kindIndex('snap-update');
const OTHER = OTHER_KIND_INDEX;
const S = 1e9;
const T0 = 2_000_000 * S;
const URL0 = 'http://127.0.0.1:9/status';

interface Line {
  level: string;
  msg: string;
}

/** A source whose errors are counted in an ErrorCounts we can watch (every inc, in order). */
function mk(o: { url?: string; timeoutMs?: number; pollIntervalMs?: number } = {}) {
  const lines: Line[] = [];
  const at = (level: string) => (msg: string) => void lines.push({ level, msg });
  const logger = { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') } as unknown as Logger;
  const errors = new ErrorCounts();
  const incs: [string, string | undefined][] = [];
  const inc = errors.inc.bind(errors);
  errors.inc = (reason: string, message?: string) => {
    incs.push([reason, message]);
    inc(reason, message);
  };
  const src = new AttachSource({ url: o.url ?? URL0, errors, pollIntervalMs: o.pollIntervalMs ?? 1000, timeoutMs: o.timeoutMs ?? 2000, maxBodyBytes: 1 << 22, logger });
  const counted = (reason: string) => incs.filter(([r]) => r === reason).map(([, msg]) => msg ?? '');
  return { src, m: src.model, errors, incs, counted, lines, warns: () => lines.filter((l) => l.level === 'warn').map((l) => l.msg) };
}

const W2 = [idle(0, 0), idle(1, 1)];

function snap(s: Parameters<typeof snapshot>[0], cancelled?: Record<string, number>) {
  const b = snapshot(s);
  if (cancelled) (b.counters as Record<string, unknown>).cancelled_by_kind = cancelled;
  return b;
}

describe('depth: refused only deeper than 64 levels (docs/hostile-inputs.md row 5)', () => {
  let daemon: StatusServer;
  beforeEach(async () => {
    daemon = await StatusServer.start();
  });
  afterEach(async () => {
    await daemon.close();
  });

  // The snapshot object is level 1; `n` objects nested in one of its fields make n + 1 levels.
  const nested = (n: number) => ({ ...snapshot({ uptime: 10, workers: W2 }), x: JSON.parse('{"a":'.repeat(n) + '1' + '}'.repeat(n)) as unknown });

  test('64 levels exactly: applied; 65: refused as invalid_snapshot', async () => {
    const a = mk({ url: daemon.url });
    daemon.serveJson(nested(63));
    await a.src.pollOnce();
    expect(a.errors.get('invalid_snapshot')).toBe(0);
    expect(a.m.up).toBe(true);
    await a.src.stop();
    const b = mk({ url: daemon.url });
    daemon.serveJson(nested(64));
    await b.src.pollOnce();
    expect(b.counted('invalid_snapshot')).toEqual([`snapshot from ${daemon.url} rejected: nested deeper than 64 levels`]);
    expect(b.m.up).toBe(false);
    await b.src.stop();
  });
});

describe('stop() while start()’s poll hangs (docs/hostile-inputs.md row 6)', () => {
  test('the hung poll is abandoned at once, not waited for until its deadline; nothing counted', async () => {
    const daemon = await StatusServer.start();
    try {
      const { src, m, incs, warns } = mk({ url: daemon.url, timeoutMs: 120_000 });
      daemon.behaviour = { kind: 'hang' };
      src.start();
      while (daemon.requests === 0) await new Promise((r) => setImmediate(r));
      const t = performance.now();
      // A stop() that waited for the poll's 120 s deadline fails here; 20 s leaves a loaded box room.
      await src.stop();
      expect(performance.now() - t).toBeLessThan(20_000);
      expect(incs).toEqual([]);
      expect(warns()).toEqual([]);
      expect(m.up).toBe(false);
    } finally {
      await daemon.close();
    }
  });
});

describe('stop() closes the kept-alive connection (KeepAlive: "destroyed when the source stops")', () => {
  test('a daemon that keeps connections open sees ours closed by stop(), not left idle', async () => {
    // A raw stand-in with no idle timeout of its own: only we can close the connection.
    const open = new Set<net.Socket>();
    let closedByPeer = 0;
    const body = JSON.stringify(snapshot({ uptime: 10, workers: W2 }));
    const server = net.createServer((sock) => {
      open.add(sock);
      sock.on('error', () => {});
      sock.on('end', () => {
        closedByPeer++;
        sock.end();
      });
      sock.on('close', () => open.delete(sock));
      let head = '';
      sock.on('data', (d) => {
        head += d.toString('latin1');
        while (head.includes('\r\n\r\n')) {
          head = head.slice(head.indexOf('\r\n\r\n') + 4);
          sock.write(`HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
        }
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { src, m } = mk({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/status` });
      await src.pollOnce();
      await src.pollOnce();
      expect(m.up).toBe(true);
      expect(open.size).toBe(1); // one connection, kept alive between the polls
      await src.stop();
      const end = performance.now() + 2000;
      while ((open.size > 0 || closedByPeer === 0) && performance.now() < end) await new Promise((r) => setTimeout(r, 5));
      expect([closedByPeer, open.size]).toEqual([1, 0]);
    } finally {
      for (const s of open) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});

describe('skipped parts: each counted with its own text; one line names the first three, then (+N more)', () => {
  const badWorker = (id: number) => ({ ...idle(id, 0), state: 42 }) as never;

  test('malformed parts (bad_field): three named whole, four named three and (+1 more)', () => {
    const { src, counted, warns } = mk();
    src.applyBody(snapshot({ uptime: 100, workers: [badWorker(0), badWorker(1), badWorker(2)] }), T0);
    const three = counted('bad_field');
    expect(three).toHaveLength(3);
    for (const [i, msg] of three.entries()) expect(msg).toMatch(new RegExp(`^snapshot from ${URL0.replace(/\./g, '\\.')}: skipped gpu_workers\\[${i}\\]`));
    const what = three.map((x) => x.slice(`snapshot from ${URL0}: skipped `.length));
    expect(warns()).toContain(`skipped malformed parts of the snapshot: ${what.join('; ')}`);
    src.applyBody(snapshot({ uptime: 101, workers: [badWorker(0), badWorker(1), badWorker(2), badWorker(3)] }), T0 + S);
    const four = counted('bad_field').slice(3).map((x) => x.slice(`snapshot from ${URL0}: skipped `.length));
    expect(four).toHaveLength(4);
    expect(warns()).toContain(`skipped malformed parts of the snapshot: ${four.slice(0, 3).join('; ')} (+1 more)`);
  });

  test('implausible parts: three named whole, four named three and (+1 more)', () => {
    const { src, counted, warns } = mk();
    const long = (id: string) => pipeline(id, 'porep-c2', [['done', 10, 1e15]]);
    src.applyBody(snapshot({ uptime: 100, workers: W2, pipelines: [long('J'), long('K'), long('L')] }), T0);
    const three = counted('implausible');
    expect(three).toHaveLength(3);
    for (const [i, msg] of three.entries()) expect(msg).toMatch(new RegExp(`^snapshot from ${URL0.replace(/\./g, '\\.')}: skipped pipelines\\[${i}\\]`));
    const what = three.map((x) => x.slice(`snapshot from ${URL0}: skipped `.length));
    expect(warns()).toContain(`skipped implausible parts of the snapshot: ${what.join('; ')}`);
    src.applyBody(snapshot({ uptime: 101, workers: W2, pipelines: [long('J'), long('K'), long('L'), long('M')] }), T0 + S);
    const four = counted('implausible').slice(3).map((x) => x.slice(`snapshot from ${URL0}: skipped `.length));
    expect(four).toHaveLength(4);
    expect(warns()).toContain(`skipped implausible parts of the snapshot: ${four.slice(0, 3).join('; ')} (+1 more)`);
  });

  test('oversized unknown fields not re-served: three named whole, four named three and (+1 more)', () => {
    const { src, counted, warns } = mk();
    const body = (n: number) => {
      const b = snapshot({ uptime: 100 + n, workers: W2 });
      for (let i = 0; i < n; i++) b[`extra${i}`] = 'z'.repeat(4000);
      return b;
    };
    src.applyBody(body(3), T0);
    const three = counted('bad_field');
    expect(three).toHaveLength(3);
    for (const msg of three) expect(msg.startsWith(`snapshot from ${URL0}: not re-served: `)).toBe(true);
    const what = three.map((x) => x.slice(`snapshot from ${URL0}: not re-served: `.length));
    expect(warns()).toContain(`not re-serving oversized fields of the snapshot: ${what.join('; ')}`);
    src.applyBody(body(4), T0 + S);
    const four = counted('bad_field').slice(3).map((x) => x.slice(`snapshot from ${URL0}: not re-served: `.length));
    expect(four).toHaveLength(4);
    expect(warns()).toContain(`not re-serving oversized fields of the snapshot: ${four.slice(0, 3).join('; ')} (+1 more)`);
  });
});

describe('apply: what the rest of the resumed run left', () => {
  test('a snapshot without counters forgets no totals: totals going down after it are still a restart', () => {
    const { src, errors } = mk();
    src.applyBody(snapshot({ uptime: 2, workers: W2, completed: { 'porep-c2': 10 } }), T0);
    const noCounters = snapshot({ uptime: 3, workers: W2 });
    delete noCounters.counters;
    src.applyBody(noCounters, T0 + S);
    expect(errors.get('bad_field')).toBe(1);
    // Uptime 4, 10 s after the first look, total completed 10 -> 5: a new process (header: totals going down).
    src.applyBody(snapshot({ uptime: 4, workers: W2, completed: { 'porep-c2': 5 } }), T0 + 10 * S);
    expect(errors.get('restart')).toBe(1);
  });

  test('a failed job is inferred only where that job itself says no outcome, whatever the order of the list', () => {
    const failedJob = (id: string, kind: string, outcome?: string) => {
      const p = pipeline(id, kind, [['failed', 100, null], ['pending', null, null]]) as unknown as Record<string, unknown>;
      if (outcome) p.outcome = outcome;
      return p as unknown as ReturnType<typeof pipeline>;
    };
    for (const told of [true, false]) {
      const { src, m } = mk();
      src.applyBody(snapshot({ uptime: 100, workers: W2 }), T0);
      const jobs = [failedJob('silent', 'snap-update'), failedJob('told', 'porep-c2', 'failed')];
      src.applyBody(snapshot({ uptime: 101, workers: W2, pipelines: told ? jobs.reverse() : jobs }), T0 + S);
      expect([src.kInferredFailed[SNAP], src.kInferredFailed[PC2]]).toEqual([1, 0]);
      expect(m.kProofsFailed[SNAP]).toBe(1);
    }
  });

  test('GPUs in ordinal order whatever the workers’ order; an attached cuzk reports no GPU-lock events', () => {
    const { src, m } = mk();
    // Worker ids in one order, their GPUs in another: 0 on GPU 2, 1 on GPU 0, 2 on GPU 3, 3 on GPU 1.
    src.applyBody(snapshot({ uptime: 100, workers: [idle(0, 2), idle(1, 0), idle(2, 3), idle(3, 1)] }), T0);
    expect(m.topology.gpus.map((g) => g.ordinal)).toEqual([0, 1, 2, 3]);
    expect(m.topology.workers.map((w) => [w.id, w.gpu])).toEqual([[0, 2], [1, 0], [2, 3], [3, 1]]);
    // state-model.ts Topology.lockEvents: "an attached cuzk does not".
    expect(m.topology.lockEvents).toBe(false);
  });

  test('a job id registered again with more partitions: a later partition back from done is a new registration again', () => {
    const { src, m } = mk();
    src.applyBody(snapshot({ uptime: 100, workers: W2 }), T0);
    src.applyBody(snapshot({ uptime: 101, workers: W2, pipelines: [pipeline('J', 'porep-c2', [['pending', null, null]])] }), T0 + S);
    const h1 = [...m.jobs.keys()];
    // The id again, now with two partitions, the second done.
    src.applyBody(snapshot({ uptime: 102, workers: W2, pipelines: [pipeline('J', 'porep-c2', [['pending', null, null], ['done', 10, 20]])] }), T0 + 2 * S);
    const h2 = [...m.jobs.keys()];
    // Its second partition back from done: registered again (cuzk's register_job replaces the JobState).
    src.applyBody(snapshot({ uptime: 103, workers: W2, pipelines: [pipeline('J', 'porep-c2', [['pending', null, null], ['pending', null, null]])] }), T0 + 3 * S);
    const h3 = [...m.jobs.keys()];
    expect(h1).toHaveLength(1);
    expect(h3).toHaveLength(1);
    expect(h3[0]).not.toBe(h2[0]);
    expect(src.jobId(h3[0])).toBe('J');
    expect(src.jobId(h2[0])).toBeUndefined();
  });

  test('an unknown counter key is counted with its name; exactly three named in the log, no (+0 more)', () => {
    const { src, counted, warns } = mk();
    src.applyBody(snapshot({ uptime: 100, workers: W2 }), T0);
    src.applyBody(snapshot({ uptime: 101, workers: W2, completed: { 'zk-a': 1, 'zk-b': 1, 'zk-c': 1 } }), T0 + S);
    expect(counted('unknown_proof_kind')).toEqual(['unknown proof kind folded into "other": "zk-a"', 'unknown proof kind folded into "other": "zk-b"', 'unknown proof kind folded into "other": "zk-c"']);
    expect(warns().at(-1)).toBe('folded 3 unknown proof kinds into proof_kind="other": "zk-a", "zk-b", "zk-c"');
  });
});
