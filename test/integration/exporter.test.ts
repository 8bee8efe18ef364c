/**
 * The exporter on the real reference engine (native library over koffi): exactness of the
 * counters against the engine's own totals and proof results, counters that include the
 * running partition, the busy/gpu invariant at every scrape, the historical-bug fault,
 * promtool on the whole body, /status against the schema.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import Ajv from 'ajv';
import { CTR } from '../../src/engine/abi';
import { NativeEngine, ProofResult } from '../../src/engine/native-engine';
import { PROOF_KINDS } from '../../src/engine/kinds';
import { Workload } from '../../src/engine/workload';
import { startNativeExporter, untilBatch } from '../helpers/native-exporter';
import { fixtureNames, fixtureText } from '../helpers/fixtures';
import { parse, sum, value } from '../helpers/prom-text';

const PROMTOOL = '/usr/bin/promtool';
const hasPromtool = fs.existsSync(PROMTOOL);

function promtoolCheck(body: string): string {
  try {
    return execFileSync(PROMTOOL, ['check', 'metrics'], { input: body, encoding: 'utf8', stdio: ['pipe', 'pipe', 'pipe'] });
  } catch (e) {
    const err = e as { stdout?: string; stderr?: string };
    return `${err.stdout ?? ''}${err.stderr ?? ''}` || 'promtool failed';
  }
}

describe('exporter on the reference engine (cpu backend)', () => {
  test('counters equal the native counters and the proof results after a workload', async () => {
    const x = await startNativeExporter({ gpus: 2, workers_per_gpu: 2, synthesis_concurrency: 2 });
    try {
      const results: ProofResult[] = [];
      const w = new Workload(x.engine, { concurrency: 4, count: 12, onResult: (r) => results.push(r) });
      await w.run();
      expect(results).toHaveLength(12);
      expect(results.every((r) => r.outcome === 'completed')).toBe(true);
      const body = (await x.get('/metrics')).body;
      const { words } = x.engine.readCounters();
      const nGpus = words[CTR.GPUS];
      const nWorkers = nGpus * words[CTR.WORKERS_PER_GPU];
      const workerBase = CTR.HDR_WORDS + words[CTR.KINDS] * CTR.KIND_WORDS + nGpus * CTR.GPU_WORDS;
      let nativeBusyNs = 0;
      for (let wkr = 0; wkr < nWorkers; wkr++) nativeBusyNs += words[workerBase + wkr * CTR.WORKER_WORDS + CTR.W_BUSY_NS];
      const exported = sum(body, 'cuzk_gpu_worker_busy_seconds_total');
      expect(nativeBusyNs).toBeGreaterThan(0);
      expect(Math.abs(exported - nativeBusyNs / 1e9) / (nativeBusyNs / 1e9)).toBeLessThan(1e-6);
      for (const kind of PROOF_KINDS) {
        const fromResults = results.filter((r) => r.kind === kind).reduce((a, r) => a + r.gpuNs, 0) / 1e9;
        const v = value(body, 'cuzk_partition_gpu_seconds_total', { proof_kind: kind });
        if (fromResults === 0) expect(v).toBe(0);
        else expect(Math.abs(v - fromResults) / fromResults).toBeLessThan(1e-6);
        expect(value(body, 'cuzk_proofs_completed_total', { proof_kind: kind })).toBe(results.filter((r) => r.kind === kind).length);
      }
      // Per-GPU lock-held and starved time, derived from events, equal the native counters.
      const gpuBase = CTR.HDR_WORDS + words[CTR.KINDS] * CTR.KIND_WORDS;
      for (let g = 0; g < nGpus; g++) {
        const held = words[gpuBase + g * CTR.GPU_WORDS + CTR.G_LOCK_HELD_NS] / 1e9;
        const starved = words[gpuBase + g * CTR.GPU_WORDS + CTR.G_STARVED_NS] / 1e9;
        expect(Math.abs(value(body, 'cuzk_gpu_busy_seconds_total', { gpu: String(g) }) - held)).toBeLessThan(1e-6 * held);
        expect(Math.abs(value(body, 'cuzk_gpu_starved_seconds_total', { gpu: String(g) }) - starved)).toBeLessThan(1e-6 * starved + 1e-9);
      }
      // The exported time counters are the engine's atomic read; the model derives the same
      // totals from events alone (what attach mode relies on): equal to the nanosecond.
      const m = x.engine.model;
      for (let wkr = 0; wkr < nWorkers; wkr++) {
        expect(m.workerBusyNsAt(wkr, 0)).toBe(words[workerBase + wkr * CTR.WORKER_WORDS + CTR.W_BUSY_NS]);
      }
      for (let g = 0; g < nGpus; g++) {
        expect(m.gpuLockHeldNsAt(g, 0)).toBe(words[gpuBase + g * CTR.GPU_WORDS + CTR.G_LOCK_HELD_NS]);
        expect(m.gpuStarvedNsAt(g, 0)).toBe(words[gpuBase + g * CTR.GPU_WORDS + CTR.G_STARVED_NS]);
      }
      // Every worker is idle after the workload. With split proving a worker's busy time is
      // the union of its partitions' GPU stages (a finalize tail overlaps the next
      // partition), so it is at most their sum, and the finalize time is part of that sum.
      const gpuTotal = sum(body, 'cuzk_partition_gpu_seconds_total');
      expect(exported).toBeLessThanOrEqual(gpuTotal * (1 + 1e-9));
      const finTotal = sum(body, 'cuzk_partition_finalize_seconds_total');
      expect(finTotal).toBeGreaterThan(0);
      expect(finTotal).toBeLessThan(gpuTotal);
    } finally {
      await x.close();
    }
  });

  test('200 consecutive scrapes with split proving: no mismatch, every partition on the GPU has a busy worker', async () => {
    const x = await startNativeExporter({ gpus: 1, workers_per_gpu: 2, synthesis_concurrency: 2 });
    const w = new Workload(x.engine, { concurrency: 6 });
    void w.run();
    try {
      let sawBusy = 0;
      let sawSplit = 0;
      for (let i = 0; i < 200; i++) {
        const { status, body } = await x.get('/metrics');
        expect(status).toBe(200);
        const samples = parse(body);
        const busy = sum(samples, 'cuzk_gpu_worker_busy');
        const onGpu = sum(samples, 'cuzk_partitions', { state: 'gpu' }) + sum(samples, 'cuzk_partitions', { state: 'finalizing' });
        // A busy worker owns a partition in gpu/finalizing (its latest); partitions on the GPU
        // never go without a busy worker. More of them than busy workers is split proving.
        if (busy > onGpu || (onGpu > 0 && busy === 0)) throw new Error(`scrape ${i}: ${busy} busy workers, ${onGpu} partitions in gpu/finalizing`);
        expect(value(samples, 'cuzk_status_mismatch')).toBe(0);
        expect(sum(samples, 'cuzk_status_mismatch_reason')).toBe(0);
        if (busy > 0) sawBusy++;
        if (onGpu > busy) sawSplit++;
      }
      // The check is meaningful only if scrapes caught workers busy, and the split-proving
      // window (more partitions on the GPU than busy workers, which the old check flagged).
      expect(sawBusy).toBeGreaterThan(10);
      expect(sawSplit).toBeGreaterThan(0);
    } finally {
      await w.stop(0);
      await x.close();
    }
  });

  test('the historical clobber on snap-update: cuzk_status_mismatch 1 (owner_idle) within a bounded number of scrapes', async () => {
    // Default fault mode "clobber": a snap-update partition's end clears its worker even
    // when the worker already owns a newer partition. Both workers may stay busy on other
    // partitions' counts; only ownership sees it.
    const x = await startNativeExporter({ gpus: 1, workers_per_gpu: 2, faults: { status_bug_kind: 'snap-update' } });
    const w = new Workload(x.engine, { concurrency: 3, mix: { 'snap-update': 1 } });
    void w.run();
    try {
      let scrapes = 0;
      let body = '';
      for (; scrapes < 2000; scrapes++) {
        body = (await x.get('/metrics')).body;
        if (value(body, 'cuzk_status_mismatch') === 1) break;
      }
      expect(value(body, 'cuzk_status_mismatch')).toBe(1);
      expect(value(body, 'cuzk_status_mismatch_reason', { reason: 'owner_idle' })).toBe(1);
      expect(value(body, 'cuzk_status_mismatch_reason', { reason: 'surfaces_disagree' })).toBe(0);
      // eslint-disable-next-line no-console
      console.log(`clobber: cuzk_status_mismatch 1 at scrape ${scrapes + 1}`);
    } finally {
      await w.stop(0);
      await x.close();
    }
  });

  test('the historical skip on snap-update: while such partitions are on the GPU no worker is busy, mismatch 1', async () => {
    const x = await startNativeExporter({ gpus: 1, workers_per_gpu: 2, faults: { status_bug_kind: 'snap-update', status_bug_mode: 'skip' } });
    const w = new Workload(x.engine, { concurrency: 3, mix: { 'snap-update': 1 } });
    void w.run();
    try {
      let seen = 0;
      for (let i = 0; i < 400 && seen < 20; i++) {
        const body = (await x.get('/metrics')).body;
        const snapOnGpu = value(body, 'cuzk_partitions', { proof_kind: 'snap-update', state: 'gpu' }) + value(body, 'cuzk_partitions', { proof_kind: 'snap-update', state: 'finalizing' });
        if (snapOnGpu === 0) continue;
        seen++;
        expect(value(body, 'cuzk_status_mismatch')).toBe(1);
        expect(value(body, 'cuzk_status_mismatch_reason', { reason: 'idle_with_partitions_on_gpu' })).toBe(1);
        expect(value(body, 'cuzk_status_mismatch_reason', { reason: 'owner_idle' })).toBe(1);
        expect(sum(body, 'cuzk_gpu_worker_busy')).toBe(0);
      }
      expect(seen).toBeGreaterThanOrEqual(20);
    } finally {
      await w.stop(0);
      await x.close();
    }
  });

  (hasPromtool ? test : test.skip)('promtool check metrics prints nothing for the whole body', async () => {
    const x = await startNativeExporter({ gpus: 2, workers_per_gpu: 2 });
    try {
      const w = new Workload(x.engine, { concurrency: 4, count: 6 });
      await w.run();
      const { body, type } = await x.get('/metrics');
      expect(type).toBe('text/plain; version=0.0.4; charset=utf-8');
      expect(promtoolCheck(body)).toBe('');
      // Every DESIGN §5 metric is there.
      const names = new Set(parse(body).map((s) => s.name.replace(/_(bucket|sum|count)$/, '')));
      for (const n of DESIGN_METRICS) expect([n, names.has(n)]).toEqual([n, true]);
    } finally {
      await x.close();
    }
  });

  test('/status passes the schema the cuzk fixtures pass, with a 64-character job id whole', async () => {
    const ajv = new Ajv({ allErrors: true });
    const schema = JSON.parse(fs.readFileSync(path.join(__dirname, '../../docs/status.schema.json'), 'utf8'));
    const validate = ajv.compile(schema);
    for (const f of fixtureNames()) {
      const ok = validate(JSON.parse(fixtureText(f)));
      expect([f, ok ? 'valid' : ajv.errorsText(validate.errors)]).toEqual([f, 'valid']);
    }
    const x = await startNativeExporter({ gpus: 1, workers_per_gpu: 2 });
    try {
      const id = 'ps-snap-' + '0123456789abcdef'.repeat(4).slice(0, 56);
      expect(id).toHaveLength(64);
      const job = x.engine.submit('snap-update', { requestId: id });
      await x.engine.awaitProof(job);
      const { status, body, type } = await x.get('/status');
      expect(status).toBe(200);
      expect(type).toContain('application/json');
      const doc = JSON.parse(body);
      expect([validate(doc), ajv.errorsText(validate.errors)]).toEqual([true, 'No errors']);
      expect(doc.pipelines.map((p: { job_id: string }) => p.job_id)).toContain(id);
      expect(doc.exporter).toMatchObject({ source: 'run', up: true, status_mismatch: false });
    } finally {
      await x.close();
    }
  });
});

describe('counters include the running partition (sim backend, long GPU stage)', () => {
  test('two scrapes ~200 ms apart: busy seconds grow by the time between the collections', async () => {
    // One winning-post whose GPU stage lasts 3 s in the timing model.
    const x = await startNativeExporter({
      backend: 'sim',
      gpus: 1,
      workers_per_gpu: 1,
      time_scale: 1,
      sim: { 'winning-post': { synth_ms: 10, gpu_ms: 3000, jitter: 0 } },
    });
    try {
      const job = x.engine.submit('winning-post');
      await untilBatch(x.engine, () => x.engine.model.wBusy[0] === 1);
      const scrape = async () => {
        const t = x.engine.now();
        const body = (await x.get('/metrics')).body;
        return { t, busy: value(body, 'cuzk_gpu_worker_busy_seconds_total', { gpu: '0', worker: '0' }), stint: value(body, 'cuzk_gpu_worker_current_partition_seconds', { gpu: '0', worker: '0' }) };
      };
      const a = await scrape();
      await new Promise((r) => setTimeout(r, 200)); // the interval under test, not synchronisation
      const b = await scrape();
      const between = (b.t - a.t) / 1e9;
      expect(between).toBeGreaterThan(0.15);
      expect(Math.abs(b.busy - a.busy - between)).toBeLessThan(0.005);
      expect(a.busy).toBeGreaterThan(0);
      expect(Math.abs(b.stint - a.stint - between)).toBeLessThan(0.005);
      x.engine.cancel(job);
      await x.engine.awaitProof(job);
    } finally {
      await x.close();
    }
  });
});

describe('engine lifecycle', () => {
  const threads = () => fs.readdirSync('/proc/self/task').length;

  test('close joins every engine thread and rejects pending awaits', async () => {
    const before = threads();
    const x = await startNativeExporter({ backend: 'sim', gpus: 2, workers_per_gpu: 2, synthesis_concurrency: 3, time_scale: 1 });
    expect(threads()).toBeGreaterThanOrEqual(before + 4 + 3);
    const job = x.engine.submit('porep-c2');
    const pending = x.engine.awaitProof(job);
    await x.close();
    // Closing cancels the job: its await settles either way, never hangs.
    expect(await pending.then((r) => r.outcome, (e: Error) => e.message)).toMatch(/cancelled|closed/);
    // koffi's async worker threads stay pooled; the engine's own threads are gone.
    expect(threads()).toBeLessThanOrEqual(before + 2);
    expect(() => x.engine.submit('porep-c2')).toThrow(/closed/);
    await expect(x.engine.close()).resolves.toBeUndefined(); // idempotent
  });

  test('bad engine configuration gives a readable error naming the key', () => {
    expect(() => NativeEngine.open({ gpus: 0 })).toThrow(/gpus/);
    expect(() => NativeEngine.open({ workers_per_gpu: 1e9 })).toThrow(/workers_per_gpu/);
    expect(() => NativeEngine.open({ nope: 1 })).toThrow(/unknown key "nope"/);
    expect(() => NativeEngine.open({ backend: 'cuda' })).toThrow(/cuda/);
  });

  test('submitting an unknown kind is refused before reaching the engine', async () => {
    const x = await startNativeExporter({ backend: 'sim', time_scale: 0.001 });
    try {
      expect(() => x.engine.submit('porep-c3')).toThrow(/unknown proof kind "porep-c3"/);
      expect(() => x.engine.submit('snap-update', { partitions: 100000 })).toThrow(/partitions/);
    } finally {
      await x.close();
    }
  });
});

/** DESIGN §5's table, as scraped (histograms by base name). */
const DESIGN_METRICS = [
  'cuzk_gpu_worker_busy',
  'cuzk_gpu_worker_busy_seconds_total',
  'cuzk_gpu_busy_seconds_total',
  'cuzk_partition_gpu_seconds_total',
  'cuzk_partition_synthesis_seconds_total',
  'cuzk_partition_gpu_duration_seconds',
  'cuzk_partition_synthesis_duration_seconds',
  'cuzk_partitions',
  'cuzk_partitions_completed_total',
  'cuzk_partitions_failed_total',
  'cuzk_proofs_completed_total',
  'cuzk_proofs_failed_total',
  'cuzk_proof_duration_seconds',
  'cuzk_proof_queue_wait_seconds',
  'cuzk_queue_depth',
  'cuzk_synthesis_active',
  'cuzk_synthesis_max_concurrent',
  'cuzk_memory_budget_bytes',
  'cuzk_memory_used_bytes',
  'cuzk_status_mismatch',
  'cuzk_up',
  'cuzk_exporter_events_total',
  'cuzk_exporter_events_dropped_total',
  'cuzk_exporter_build_info',
  'cuzk_gpu_info',
  'cuzk_gpu_idle_gap_seconds',
  'cuzk_gpu_starved_seconds_total',
  'cuzk_exporter_scrape_duration_seconds',
];
