/**
 * Issue 12 acceptance: a seeded property-based fuzz of the attach parser (fast-check).
 * Sequences of snapshots — the fixtures, mutated field by field (wrong types, absurd
 * numbers, counters that drop, ids that grow, GPUs that multiply or rename, unknown fields,
 * deep nesting) — go through the real AttachSource (validate, plausibility, apply) one after
 * another, and after each one a real collection is checked:
 *  - nothing throws but a counted refusal (the poll's own error);
 *  - no counter (`_total`, histogram `_count`/`_sum`/`_bucket`) goes down between scrapes;
 *  - nothing is counted twice: completed proofs never exceed what the daemon's own
 *    cumulative total grew by (a restart counts from zero), plus the per-kind slack;
 *  - no unbounded growth: series, jobs and handles stay within what the last snapshots hold;
 *  - /status serialises (bounded) and the final /metrics body passes `promtool check metrics`.
 * Raw bodies (not JSON, truncated, deep) go through pollOnce over HTTP too. Sizes:
 * CUZK_FUZZ_RUNS (sequences, default 400 ≈ 2,000 snapshots) and CUZK_FUZZ_SEED.
 */
import fc from 'fast-check';
import { validateStatus } from '../../src/engine/sources/status-schema';
import { parse, promtoolCheckMetrics, Sample } from '../helpers/prom-text';
import { Harness, startHarness } from '../attach/harness';
import { fixture } from '../attach/snapshots';
import { StatusServer } from '../attach/status-server';

const RUNS = Number(process.env.CUZK_FUZZ_RUNS ?? 400);
const SEED = Number(process.env.CUZK_FUZZ_SEED ?? 20261201);
const FIXTURES = ['01-idle.json', '02-snap-busy-consistent.json', '03-workers-idle-partitions-on-gpu.json', '04-porep-partition-failed.json'].map((f) => fixture(f).json);
type J = Record<string, any>;
const clone = <T>(x: T): T => JSON.parse(JSON.stringify(x)) as T;

const weird = fc.oneof(
  fc.constantFrom<unknown>(null, true, false, -1, 0, 1, 1e18, -1e18, 1.5, Number.MAX_SAFE_INTEGER, 2 ** 64, '', '0', 'gpu', 'done', 'proving', 'idle', [], {}, 'x'.repeat(5000)),
  fc.integer(),
  fc.double({ noNaN: true }),
  fc.string({ maxLength: 12 }),
);
/** A path into the snapshot and a value to put there (or delete). */
const mutation = fc.oneof(
  fc.record({ kind: fc.constant('set' as const), path: fc.array(fc.oneof(fc.constantFrom('uptime_secs', 'memory', 'synthesis', 'pipelines', 'gpu_workers', 'counters', 'gpus', 'completed_by_kind', 'failed_by_kind', 'total_completed', 'total_failed', 'queue_depth', 'partitions', 'state', 'gpu_ms', 'synth_ms', 'job_id', 'proof_kind', 'current_job', 'current_partition', 'busy_secs', 'worker_id', 'gpu_ordinal', 'total_partitions', 'partitions_done', 'snap-update', 'porep-c2', 'started_secs_ago', 'index'), fc.nat({ max: 20 }).map(String)), { minLength: 1, maxLength: 4 }), value: weird }),
  fc.record({ kind: fc.constant('delete' as const), path: fc.array(fc.constantFrom('memory', 'counters', 'synthesis', 'gpus', '0', '1', 'partitions', 'job_id', 'busy_secs'), { minLength: 1, maxLength: 3 }) }),
  fc.record({ kind: fc.constant('uptime' as const), by: fc.integer({ min: -7000, max: 100 }) }),
  fc.record({ kind: fc.constant('counter' as const), which: fc.constantFrom('completed_by_kind', 'failed_by_kind'), key: fc.constantFrom('snap-update', 'porep-c2', 'window-post', 'nope', 'x'.repeat(100)), by: fc.integer({ min: -100, max: 100 }), total: fc.boolean() }),
  fc.record({ kind: fc.constant('gpus' as const), n: fc.nat({ max: 1100 }), tag: fc.nat() }),
  fc.record({ kind: fc.constant('blob' as const), bytes: fc.nat({ max: 200_000 }) }),
  fc.record({ kind: fc.constant('longid' as const), len: fc.nat({ max: 20_000 }) }),
  fc.record({ kind: fc.constant('dup' as const) }),
);
const step = fc.record({ base: fc.nat({ max: FIXTURES.length - 1 }), mutations: fc.array(mutation, { maxLength: 4 }) });

function apply(s: J, m: any, uptime: { v: number }): void {
  switch (m.kind) {
    case 'set': {
      let o: any = s;
      for (const k of m.path.slice(0, -1)) {
        if (o === null || typeof o !== 'object') return;
        o = o[k];
      }
      if (o !== null && typeof o === 'object') o[m.path[m.path.length - 1]] = clone(m.value);
      return;
    }
    case 'delete': {
      let o: any = s;
      for (const k of m.path.slice(0, -1)) {
        if (o === null || typeof o !== 'object') return;
        o = o[k];
      }
      if (o !== null && typeof o === 'object') delete o[m.path[m.path.length - 1]];
      return;
    }
    case 'uptime':
      uptime.v = Math.max(0, uptime.v + m.by);
      return;
    case 'counter': {
      const c = s.counters;
      if (!c || typeof c !== 'object' || !c[m.which] || typeof c[m.which] !== 'object') return;
      c[m.which][m.key] = Math.max(0, (typeof c[m.which][m.key] === 'number' ? c[m.which][m.key] : 0) + m.by);
      if (m.total) c[m.which === 'completed_by_kind' ? 'total_completed' : 'total_failed'] += m.by;
      return;
    }
    case 'gpus':
      s.gpus = Array.from({ length: m.n }, (_, i) => ({ ordinal: i, name: `g${i}-${m.tag}`, uuid: `GPU-${m.tag}-${i}`, pci_bus_id: null }));
      return;
    case 'blob':
      s[`blob_${m.bytes}`] = 'b'.repeat(m.bytes);
      return;
    case 'longid':
      if (Array.isArray(s.pipelines) && s.pipelines[0] && typeof s.pipelines[0] === 'object') s.pipelines[0].job_id = 'L'.repeat(m.len + 1);
      return;
    case 'dup':
      if (Array.isArray(s.pipelines) && s.pipelines.length > 0) s.pipelines.push(clone(s.pipelines[0]));
      return;
  }
}

const isCounter = (s: Sample) => /_(total|count|sum|bucket)$/.test(s.name);
const key = (s: Sample) => `${s.name}${JSON.stringify(s.labels)}`;

let h: Harness;
let daemon: StatusServer;
beforeAll(async () => {
  daemon = await StatusServer.start();
  h = await startHarness({ url: daemon.url, timeoutMs: 2000 });
});
afterAll(async () => {
  await h.close();
  await daemon.close();
});

test(`attach parser: ${RUNS} sequences of mutated snapshots, no crash, no counter decrease, bounded (seed ${SEED})`, async () => {
  let t = 1e12;
  let prev = new Map<string, number>();
  let maxSeries = 0;
  let refused = 0;
  let applied = 0;
  // Oracle for "never counted twice": growth of the daemon's total_completed over the
  // snapshots the source used (uptime or total going back: a restart, counted from zero).
  let allowed = 0;
  let restarts = 0;
  let lastUptime = -1;
  let lastTotal: number | null = null;
  let primed = false;
  await fc.assert(
    fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 6 }), async (steps) => {
      const uptime = { v: 6000 };
      for (const st of steps) {
        const s = clone(FIXTURES[st.base]) as J;
        for (const m of st.mutations) apply(s, m, uptime);
        if (typeof s.uptime_secs === 'number') s.uptime_secs = uptime.v + (s.uptime_secs - 6000) / 1e6;
        t += 1e9;
        const v = validateStatus(s);
        const restartsBefore = h.source.model.errors.get('restart');
        try {
          h.source.applyBody(s, t);
          applied++;
          if (v.ok) {
            const total = v.status.counters?.total_completed ?? null;
            // A restart as the source judged it (plausibility.ts: believed only when the new
            // process can have started since the last look; else refused as another daemon's).
            const restart = primed && h.source.model.errors.get('restart') > restartsBefore;
            if (restart) restarts++;
            if (total !== null && primed) allowed += restart || lastTotal === null ? total : Math.max(0, total - lastTotal);
            if (total !== null) lastTotal = total;
            lastUptime = v.status.uptime_secs;
            primed = true;
          }
        } catch (e) {
          // A refused snapshot: the poll's own error (counted by pollOnce), never a bug.
          expect((e as Error).constructor.name).toBe('PollError');
          refused++;
        }
        const body = await h.telemetry.scrape();
        const samples = parse(body);
        maxSeries = Math.max(maxSeries, samples.length);
        // Bounded: at most what one snapshot can hold (1024 GPUs + workers/kinds), not growing.
        expect(samples.length).toBeLessThan(4000);
        expect(h.source.model.jobs.size).toBeLessThanOrEqual(64);
        const now = new Map<string, number>();
        for (const x of samples) {
          if (!isCounter(x)) continue;
          const k = key(x);
          now.set(k, x.value);
          const before = prev.get(k);
          if (before !== undefined && x.value < before - 1e-9) throw new Error(`${k} went down: ${before} -> ${x.value}`);
        }
        prev = now;
        const completed = samples.filter((x) => x.name === 'cuzk_proofs_completed_total').reduce((a, x) => a + x.value, 0);
        if (completed > allowed + 8 * (restarts + 1)) throw new Error(`proofs counted twice: ${completed} completed, the daemon's totals grew by ${allowed}`);
        const status = JSON.stringify(h.source.statusBody());
        expect(status.length).toBeLessThan(1024 * 1024);
      }
    }),
    { numRuns: RUNS, seed: SEED, endOnFailure: true },
  );
  expect(applied).toBeGreaterThan(RUNS / 2);
  expect(refused).toBeGreaterThan(0);
  const { body } = await h.metrics();
  const lint = promtoolCheckMetrics(body);
  if (lint.skipped !== undefined) console.warn(lint.skipped);
  else expect(lint).toEqual({ ok: true, output: '' });
  expect(maxSeries).toBeGreaterThan(0);
});

test('raw bodies through the real poll (HTTP, JSON.parse, depth bound): counted, never a crash', async () => {
  const good = JSON.stringify(FIXTURES[1]);
  const raw = fc.oneof(
    fc.string({ maxLength: 300 }),
    fc.nat({ max: good.length }).map((n) => good.slice(0, n)),
    fc.nat({ max: 20_000 }).map((n) => good.replace(/}$/, `,"deep":${'['.repeat(n)}${']'.repeat(n)}}`)),
    fc.nat({ max: 20_000 }).map((n) => '{'.repeat(n)),
    fc.tuple(fc.nat({ max: good.length }), fc.string({ maxLength: 4 })).map(([i, x]) => good.slice(0, i) + x + good.slice(i)),
  );
  await fc.assert(
    fc.asyncProperty(raw, async (text) => {
      daemon.behaviour = { kind: 'body', body: text };
      await h.source.pollOnce(); // never throws
      const r = await h.metrics();
      expect(r.status).toBe(200);
      const st = await fetch(`${h.server.url}/status`);
      expect(st.status).toBe(200);
    }),
    { numRuns: Math.max(50, Math.round(RUNS / 4)), seed: SEED, endOnFailure: true },
  );
});
