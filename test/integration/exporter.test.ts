/**
 * The exporter on the real reference engine (native library over koffi): exactness of the
 * counters against the engine's own totals and proof results, counters that include the
 * running partition, the busy/gpu invariant at every scrape and the historical bug (fault
 * injection: clobber and skip) seen within the same bound, promtool on the whole body,
 * /status against the schema.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import Ajv from 'ajv';
import { NativeEngine, ProofResult } from '../../src/engine/sources/native/native-engine';
import { PROOF_KINDS } from '../../src/engine/model/kinds';
import { Workload } from '../../src/engine/sources/native/workload';
import { startNativeExporter, untilBatch } from '../helpers/native-exporter';
import { EventReplay } from '../helpers/event-replay';
import { recordCollections } from '../helpers/collection-clock';
import { fixtureNames, fixtureText } from '../helpers/fixtures';
import { find, parse, sum, value } from '../helpers/prom-text';

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
  test('exported counters equal an independent replay of the drained events and the proof results', async () => {
    const x = await startNativeExporter({ gpus: 2, workers_per_gpu: 2, synthesis_concurrency: 2 });
    try {
      // The oracle: every drained event replayed by test code from its timestamps; the
      // exported time counters are the engine's atomic counter read at the collection, the
      // per-kind ones the model's: neither is compared with itself.
      const replay = EventReplay.tap(x.engine);
      const clock = recordCollections(x.engine);
      const results: ProofResult[] = [];
      const w = new Workload(x.engine, { concurrency: 4, count: 12, onResult: (r) => results.push(r) });
      await w.run();
      expect(results).toHaveLength(12);
      expect(results.every((r) => r.outcome === 'completed')).toBe(true);
      const body = (await x.get('/metrics')).body;
      const T = clock.last();
      expect(replay.gaps).toBe(0);
      expect(replay.events).toBeGreaterThan(12 * 4);
      // The events' own durations agree with their timestamps.
      expect(replay.valueMismatches).toEqual([]);
      const nGpus = x.engine.model.topology.gpus.length;
      const nWorkers = x.engine.model.topology.workers.length;
      const close = (got: number, wantNs: number) => Math.abs(got - wantNs / 1e9) < 1e-9;

      let busyTotal = 0;
      for (let wkr = 0; wkr < nWorkers; wkr++) {
        const labels = { gpu: String(x.engine.model.topology.workers[wkr].gpu), worker: String(wkr) };
        const exported = value(body, 'cuzk_gpu_worker_busy_seconds_total', labels);
        const want = replay.busyAt(wkr, T);
        expect([labels, exported, close(exported, want)]).toEqual([labels, exported, true]);
        // The model derives the same total from the events alone (what attach relies on).
        expect(x.engine.model.workerBusyNsAt(wkr, T)).toBe(want);
        busyTotal += want;
      }
      expect(busyTotal).toBeGreaterThan(0);
      for (let g = 0; g < nGpus; g++) {
        const held = value(body, 'cuzk_gpu_busy_seconds_total', { gpu: String(g) });
        const starved = value(body, 'cuzk_gpu_starved_seconds_total', { gpu: String(g) });
        expect([g, close(held, replay.lockHeldAt(g, T)), close(starved, replay.starvedAt(g, T))]).toEqual([g, true, true]);
        expect(replay.lockHeldAt(g, T)).toBeGreaterThan(0);
        expect(x.engine.model.gpuLockHeldNsAt(g, T)).toBe(replay.lockHeldAt(g, T));
        expect(x.engine.model.gpuStarvedNsAt(g, T)).toBe(replay.starvedAt(g, T));
      }
      let gpuTotalNs = 0;
      let finTotalNs = 0;
      PROOF_KINDS.forEach((kind, k) => {
        const mine = results.filter((r) => r.kind === kind);
        const r = replay.kinds[k];
        const fromResults = { gpuNs: mine.reduce((a, p) => a + p.gpuNs, 0), synthNs: mine.reduce((a, p) => a + p.synthNs, 0), parts: mine.reduce((a, p) => a + p.partitions, 0) };
        // Per-proof results, the replay and the exported counters: three independent sums.
        expect([kind, r.gpuNs, r.synthNs, r.partsCompleted]).toEqual([kind, fromResults.gpuNs, fromResults.synthNs, fromResults.parts]);
        const got = {
          gpu: close(value(body, 'cuzk_partition_gpu_seconds_total', { proof_kind: kind }), r.gpuNs),
          synth: close(value(body, 'cuzk_partition_synthesis_seconds_total', { proof_kind: kind }), r.synthNs),
          completed: value(body, 'cuzk_partitions_completed_total', { proof_kind: kind }),
          failed: value(body, 'cuzk_partitions_failed_total', { proof_kind: kind }),
          proofs: value(body, 'cuzk_proofs_completed_total', { proof_kind: kind }),
          finalize: close(value(body, 'cuzk_partition_finalize_seconds_total', { proof_kind: kind }), r.finalizeNs),
          gpuObs: find(body, 'cuzk_partition_gpu_duration_seconds_count', { proof_kind: kind }) ?? 0,
          synthObs: find(body, 'cuzk_partition_synthesis_duration_seconds_count', { proof_kind: kind }) ?? 0,
        };
        expect([kind, got]).toEqual([kind, { gpu: true, synth: true, finalize: true, completed: fromResults.parts, failed: 0, proofs: mine.length, gpuObs: r.gpuStages, synthObs: r.syntheses }]);
        gpuTotalNs += r.gpuNs;
        finTotalNs += r.finalizeNs;
      });
      // A worker is busy while it owns a partition: never longer in all than the partitions'
      // GPU stages (equal without split proving; less with it, the finalize tail of one
      // partition overlapping the worker's next).
      expect(busyTotal).toBeLessThanOrEqual(gpuTotalNs);
      // Split proving is on (the default): finalize tails ran, inside the GPU stages.
      expect(finTotalNs).toBeGreaterThan(0);
      expect(finTotalNs).toBeLessThan(gpuTotalNs);
      expect(sum(body, 'cuzk_gpu_worker_busy')).toBe(0);
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
        const onGpu = sum(samples, 'cuzk_partitions', { state: 'gpu' });
        // Split proving (ABI v2): a finished partition's finalize tail may outlive its
        // worker's stint on it, so busy workers lie between the partitions whose kernels
        // run and those plus the finalizing ones (without split proving: busy == onGpu).
        const finalizing = sum(samples, 'cuzk_partitions', { state: 'finalizing' });
        if (busy < onGpu || busy > onGpu + finalizing || (onGpu + finalizing > 0 && busy === 0)) {
          throw new Error(`scrape ${i}: ${busy} busy workers, ${onGpu} partitions on the GPU, ${finalizing} finalizing`);
        }
        expect(value(samples, 'cuzk_status_mismatch')).toBe(0);
        expect(sum(samples, 'cuzk_status_mismatch_reason')).toBe(0);
        if (busy > 0) sawBusy++;
        if (onGpu + finalizing > busy) sawSplit++;
      }
      // The check is meaningful only if scrapes caught workers busy, and the split-proving
      // window (more partitions on the GPU than busy workers, which a count check flags).
      expect(sawBusy).toBeGreaterThan(10);
      expect(sawSplit).toBeGreaterThan(0);
    } finally {
      await w.stop(0);
      await x.close();
    }
  });

  // The historical bug, reproduced by the engine's fault injection on split proving: the
  // same 200 scrapes must see the contradiction, with its reason.
  test('the historical clobber on snap-update: cuzk_status_mismatch 1 (owner_idle) within 200 scrapes', async () => {
    // Default fault mode "clobber" (the race cuzk shipped): a snap-update partition's end
    // clears its worker although the worker already owns its next partition. Both workers
    // may still count as busy on other partitions; only ownership sees it.
    const x = await startNativeExporter({ gpus: 1, workers_per_gpu: 2, synthesis_concurrency: 2, faults: { status_bug_kind: 'snap-update' } });
    const w = new Workload(x.engine, { concurrency: 3, mix: { 'snap-update': 1 } });
    void w.run();
    try {
      let seen = 0;
      for (let i = 0; i < 200 && seen < 3; i++) {
        const samples = parse((await x.get('/metrics')).body);
        if (value(samples, 'cuzk_status_mismatch') === 0) continue;
        seen++;
        expect(value(samples, 'cuzk_status_mismatch_reason', { reason: 'owner_idle' })).toBe(1);
        expect(value(samples, 'cuzk_status_mismatch_reason', { reason: 'surfaces_disagree' })).toBe(0);
      }
      expect(seen).toBeGreaterThan(0);
    } finally {
      await w.stop(0);
      await x.close();
    }
  });

  test('the historical skip on snap-update: whenever such partitions are on the GPU no worker is busy, mismatch 1 (both reasons)', async () => {
    const x = await startNativeExporter({ gpus: 1, workers_per_gpu: 2, synthesis_concurrency: 2, faults: { status_bug_kind: 'snap-update', status_bug_mode: 'skip' } });
    const w = new Workload(x.engine, { concurrency: 3, mix: { 'snap-update': 1 } });
    void w.run();
    try {
      let seen = 0;
      for (let i = 0; i < 200 && seen < 20; i++) {
        const samples = parse((await x.get('/metrics')).body);
        const snapOnGpu = value(samples, 'cuzk_partitions', { proof_kind: 'snap-update', state: 'gpu' }) + value(samples, 'cuzk_partitions', { proof_kind: 'snap-update', state: 'finalizing' });
        if (snapOnGpu === 0) continue;
        seen++;
        expect(value(samples, 'cuzk_status_mismatch')).toBe(1);
        expect(value(samples, 'cuzk_status_mismatch_reason', { reason: 'idle_with_partitions_on_gpu' })).toBe(1);
        expect(value(samples, 'cuzk_status_mismatch_reason', { reason: 'owner_idle' })).toBe(1);
        expect(sum(samples, 'cuzk_gpu_worker_busy')).toBe(0);
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
  test('two scrapes ~200 ms apart: busy seconds grow by exactly the engine time between the collections', async () => {
    // One winning-post whose GPU stage outlasts the test (cancelled at the end).
    const x = await startNativeExporter({
      backend: 'sim',
      gpus: 1,
      workers_per_gpu: 1,
      time_scale: 1,
      sim: { 'winning-post': { synth_ms: 10, gpu_ms: 600_000, jitter: 0 } },
    });
    try {
      const clock = recordCollections(x.engine);
      const job = x.engine.submit('winning-post');
      await untilBatch(x.engine, () => x.engine.model.wBusy[0] === 1);
      const labels = { gpu: '0', worker: '0' };
      // The clock is the engine's own, read by the collection itself: how long the request
      // waited before or after it does not matter.
      const scrape = async () => {
        const body = (await x.get('/metrics')).body;
        return { t: clock.last(), busy: value(body, 'cuzk_gpu_worker_busy_seconds_total', labels), stint: value(body, 'cuzk_gpu_worker_current_partition_seconds', labels), owns: value(body, 'cuzk_gpu_worker_busy', labels) };
      };
      const a = await scrape();
      await new Promise((r) => setTimeout(r, 200)); // the interval under test, not synchronisation
      const b = await scrape();
      expect([a.owns, b.owns]).toEqual([1, 1]);
      const between = (b.t - a.t) / 1e9;
      expect(between).toBeGreaterThan(0.15);
      expect(a.busy).toBeGreaterThan(0);
      expect(Math.abs(b.busy - a.busy - between)).toBeLessThan(1e-9);
      expect(Math.abs(b.stint - a.stint - between)).toBeLessThan(1e-9);
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
