/**
 * One meaning per counter, whatever the source (issue 11): `attach` polling the reference
 * engine's own /status over real HTTP and `run` hosting that same engine must agree on every
 * counter the /status surface can give, to the millisecond resolution /status has, on a
 * workload with partition failures (their siblings abandoned) and cancelled proofs:
 *  - partitions failed: own failures only (a partition abandoned because its proof failed or
 *    was cancelled is not a failure: `"abandoned": true` in our snapshot);
 *  - synthesis seconds: completed syntheses only (a synthesis cut short has no synth_ms);
 *  - GPU seconds: every GPU stage that ended, abandoned ones included (its gpu_ms).
 * The oracle for the millisecond figures is the engine's own event stream (each stage's
 * duration, truncated to whole milliseconds as /status writes them), not either exporter.
 */
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { PROOF_KINDS } from '../../src/engine/model/kinds';
import type { ProofResult } from '../../src/engine/sources/native/native-engine';
import { Workload } from '../../src/engine/sources/native/workload';
import { Harness, startHarness } from '../attach/harness';
import { EventReplay } from '../helpers/event-replay';
import { startNativeExporter } from '../helpers/native-exporter';
import { find, parse, Sample } from '../helpers/prom-text';

/** Counters /status cannot give, and why (docs/attach.md §4): not compared. */
const NOT_FROM_STATUS: Record<string, string> = {
  cuzk_gpu_worker_busy_seconds_total: 'sampled: a stint is credited as of the polls that saw it',
  cuzk_gpu_worker_partitions_total: 'sampled: stints that start and end between polls are not attributed',
  cuzk_partition_finalize_seconds_total: 'when the kernels ended is not in /status (unknown, not guessed)',
  cuzk_exporter_events_total: "the exporter's own ingestion",
  cuzk_exporter_events_dropped_total: "the exporter's own ingestion",
  cuzk_exporter_errors_total: "the exporter's own errors",
};
/** Counters equal to the unit. */
const EXACT = new Set([
  'cuzk_partitions_completed_total',
  'cuzk_partitions_failed_total',
  'cuzk_proofs_completed_total',
  'cuzk_proofs_failed_total',
  'cuzk_proofs_cancelled_total',
  'cuzk_partition_gpu_duration_seconds_count',
  'cuzk_partition_synthesis_duration_seconds_count',
]);
/** Counters of time: equal to the millisecond resolution of /status. */
const MS = new Set(['cuzk_partition_gpu_seconds_total', 'cuzk_partition_synthesis_seconds_total', 'cuzk_partition_gpu_duration_seconds_sum', 'cuzk_partition_synthesis_duration_seconds_sum']);

const isCounter = (s: Sample) => /_(total|count|sum)$/.test(s.name);
const key = (s: Sample) => `${s.name}${JSON.stringify(s.labels)}`;

test('attach on the engine’s own /status and run on the same workload agree on every counter', async () => {
  const x = await startNativeExporter({ gpus: 1, workers_per_gpu: 2, synthesis_concurrency: 2, faults: { fail_partition_rate: 0.03, seed: 7 } });
  const replay = EventReplay.tap(x.engine);
  // cuzk's status_listen, played by the engine's own snapshot over real HTTP.
  const daemon = http.createServer((req, res) => {
    if (req.url !== '/status') {
      res.writeHead(404).end();
      return;
    }
    const body = x.engine.statusText();
    res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) });
    res.end(body);
  });
  await new Promise<void>((r) => daemon.listen(0, '127.0.0.1', r));
  let h: Harness | null = null;
  try {
    h = await startHarness({ url: `http://127.0.0.1:${(daemon.address() as AddressInfo).port}/status`, timeoutMs: 30_000 });
    const attach = h;
    // The first poll is attach's baseline: nothing has run yet.
    await attach.source.pollOnce();
    expect(find(parse((await attach.metrics()).body), 'cuzk_up')).toBe(1);

    // A workload with failures (fault rate) and cancels at every stage of a proof's life.
    const results: ProofResult[] = [];
    let n = 0;
    const w = new Workload(x.engine, {
      concurrency: 4,
      count: 36,
      onResult: (r) => results.push(r),
      onSubmit: (job) => {
        if (n++ % 4 !== 3) return;
        setTimeout(() => {
          try {
            x.engine.cancel(job);
          } catch {
            // finished already
          }
        }, (n * 7) % 60);
      },
    });
    let done = false;
    const ran = w.run().then(() => (done = true));
    // Polls while it runs (an interval between polls, not a synchronisation: any interval
    // below cuzk's 30 s retention of finished jobs gives the same totals).
    while (!done) {
      await attach.source.pollOnce();
      await new Promise((r) => setTimeout(r, 20));
    }
    await ran;
    await attach.source.pollOnce();

    expect(results).toHaveLength(36);
    const outcomes = { completed: 0, failed: 0, cancelled: 0 };
    for (const r of results) outcomes[r.outcome]++;
    // The workload really had all three outcomes, and abandoned partitions.
    expect([outcomes.completed > 0, outcomes.failed > 0, outcomes.cancelled > 0]).toEqual([true, true, true]);
    expect(replay.kinds.reduce((a, k) => a + k.partsAbandoned, 0)).toBeGreaterThan(0);
    expect(replay.gaps).toBe(0);

    const run = parse((await x.get('/metrics')).body);
    const att = parse((await attach.metrics()).body);
    const runByKey = new Map(run.filter(isCounter).map((s) => [key(s), s.value]));
    const compared: string[] = [];
    for (const s of att.filter(isCounter)) {
      const base = s.name.replace(/_bucket$/, '');
      if (NOT_FROM_STATUS[s.name] !== undefined) continue;
      const r = runByKey.get(key(s));
      if (EXACT.has(base)) {
        expect([key(s), s.value]).toEqual([key(s), r ?? 0]);
      } else if (MS.has(base)) {
        // Each stage to whole ms as /status writes it: the engine's own durations say what
        // attach must read; run has them to the ns.
        const kind = PROOF_KINDS.indexOf(s.labels.proof_kind as (typeof PROOF_KINDS)[number]);
        const k = replay.kinds[kind];
        const durations = base.includes('gpu') ? k.gpuStageNs : k.synthesisNs;
        const wantMs = durations.reduce((a, ns) => a + Math.floor(ns / 1e6), 0);
        const runNs = durations.reduce((a, ns) => a + ns, 0);
        expect([key(s), Math.abs(s.value - wantMs / 1e3) < 1e-9, Math.abs((r ?? 0) - runNs / 1e9) < 1e-9]).toEqual([key(s), true, true]);
      } else {
        throw new Error(`attach exports counter ${key(s)}: say how it compares with run (EXACT, MS or NOT_FROM_STATUS)`);
      }
      compared.push(key(s));
    }
    // Every kind's failure and time counters took part.
    for (const kind of PROOF_KINDS) {
      for (const name of ['cuzk_partitions_failed_total', 'cuzk_partition_synthesis_seconds_total', 'cuzk_partition_gpu_seconds_total', 'cuzk_proofs_cancelled_total']) {
        expect(compared).toContain(`${name}${JSON.stringify({ proof_kind: kind })}`);
      }
    }
    // And they are not all zero: failures were own failures, counted once by both.
    const failed = PROOF_KINDS.reduce((a, _k, i) => a + replay.kinds[i].partsFailed, 0);
    expect(failed).toBeGreaterThan(0);
    expect(run.filter((s) => s.name === 'cuzk_partitions_failed_total').reduce((a, s) => a + s.value, 0)).toBe(failed);
  } finally {
    await h?.close();
    await new Promise<void>((r) => {
      daemon.close(() => r());
      daemon.closeAllConnections();
    });
    await x.close();
  }
}, 180_000);
