/**
 * Sequence gaps: a tiny native event ring and a consumer that falls behind. The gap must
 * be detected and counted, the model re-synced from a snapshot, and the exported totals
 * must stay exact (they come from the native counters at the re-sync).
 */
import { CTR } from '../../src/engine/abi';
import { Workload } from '../../src/engine/workload';
import { startNativeExporter } from '../helpers/native-exporter';
import { sum, value } from '../helpers/prom-text';

/** Blocks the JS thread, so the native engine outruns the ring while we do not drain. */
function stall(ms: number): void {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    /* deliberately busy: the point is that no event is drained meanwhile */
  }
}

test('a sequence gap is counted, state and totals re-synced, counters exact', async () => {
  const x = await startNativeExporter({ gpus: 1, workers_per_gpu: 2, synthesis_concurrency: 2, event_ring_capacity: 16 });
  try {
    const w = new Workload(x.engine, { concurrency: 4 });
    void w.run();
    for (let round = 0; round < 5; round++) {
      stall(150);
      const body = (await x.get('/metrics')).body;
      // State is consistent after the re-sync (split proving: every busy worker owns a
      // partition in gpu/finalizing, partitions there never go without a busy worker), and
      // no stale ownership reads as a mismatch.
      const busy = sum(body, 'cuzk_gpu_worker_busy');
      const onGpu = sum(body, 'cuzk_partitions', { state: 'gpu' }) + sum(body, 'cuzk_partitions', { state: 'finalizing' });
      expect({ round, busy, onGpu, ok: busy <= onGpu && (onGpu === 0 || busy > 0) }).toEqual({ round, busy, onGpu, ok: true });
      expect(value(body, 'cuzk_status_mismatch')).toBe(0);
    }
    await w.stop(5000);
    const body = (await x.get('/metrics')).body;
    const dropped = value(body, 'cuzk_exporter_events_dropped_total');
    expect(dropped).toBeGreaterThan(0);
    expect(x.engine.stats.resyncs).toBeGreaterThan(0);

    // All idle now: exported totals equal the native counters.
    const { words } = x.engine.readCounters();
    const nGpus = words[CTR.GPUS];
    const nKinds = words[CTR.KINDS];
    const workerBase = CTR.HDR_WORDS + nKinds * CTR.KIND_WORDS + nGpus * CTR.GPU_WORDS;
    let busyNs = 0;
    for (let i = 0; i < nGpus * words[CTR.WORKERS_PER_GPU]; i++) busyNs += words[workerBase + i * CTR.WORKER_WORDS + CTR.W_BUSY_NS];
    const exported = sum(body, 'cuzk_gpu_worker_busy_seconds_total');
    // To the nanosecond: the re-sync restored running stints from busy_since_ns.
    expect(Math.abs(exported - busyNs / 1e9)).toBeLessThan(1e-9);
    let gpuNs = 0;
    let finNs = 0;
    let completed = 0;
    for (let k = 0; k < nKinds; k++) {
      gpuNs += words[CTR.HDR_WORDS + k * CTR.KIND_WORDS + CTR.K_GPU_NS];
      finNs += words[CTR.HDR_WORDS + k * CTR.KIND_WORDS + CTR.K_FINALIZE_NS];
      completed += words[CTR.HDR_WORDS + k * CTR.KIND_WORDS + CTR.K_PROOFS_COMPLETED];
    }
    expect(Math.abs(sum(body, 'cuzk_partition_gpu_seconds_total') - gpuNs / 1e9)).toBeLessThan(1e-9);
    // Finalize time: partitions seen finalizing before the gap counted from events, the
    // rest adopted from the native total at the re-sync.
    expect(finNs).toBeGreaterThan(0);
    expect(Math.abs(sum(body, 'cuzk_partition_finalize_seconds_total') - finNs / 1e9)).toBeLessThan(1e-9);
    expect(sum(body, 'cuzk_proofs_completed_total')).toBe(completed);
    const gpuBase = CTR.HDR_WORDS + nKinds * CTR.KIND_WORDS;
    for (let g = 0; g < nGpus; g++) {
      const held = words[gpuBase + g * CTR.GPU_WORDS + CTR.G_LOCK_HELD_NS] / 1e9;
      const starved = words[gpuBase + g * CTR.GPU_WORDS + CTR.G_STARVED_NS] / 1e9;
      expect(Math.abs(value(body, 'cuzk_gpu_busy_seconds_total', { gpu: String(g) }) - held)).toBeLessThan(1e-9);
      // Starvation runs while the engine is idle-with-work; nothing is outstanding now.
      expect(Math.abs(value(body, 'cuzk_gpu_starved_seconds_total', { gpu: String(g) }) - starved)).toBeLessThan(1e-9);
    }
    expect(sum(body, 'cuzk_gpu_worker_busy')).toBe(0);
    expect(sum(body, 'cuzk_partitions')).toBe(0);
    expect(value(body, 'cuzk_status_mismatch')).toBe(0);
  } finally {
    await x.close();
  }
});
