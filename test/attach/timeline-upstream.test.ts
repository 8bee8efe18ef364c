/**
 * TIMELINE as upstream cuzk writes it on every path (curio e0294b0f, extern/cuzk/cuzk-core/
 * src/engine.rs; docs/upstream-conformance.md), read by the attach TIMELINE surface. Each
 * test scripts the exact line sequence upstream's code emits for one path and checks the
 * figures against numbers computed here from the script's offsets — never from the code.
 * No files, no timers: test/attach/timeline-driver.ts sets both clocks.
 */
import { TimelineDriver, tl } from './timeline-driver';

const P = 'porep-1000-7'; // Curio: lib/ffi/cuzk_funcs.go "porep-%d-%d"
const S = 'snap-1000-9';
const WD = 'wdpost-1000-0-[1 2 3 4 5 6 7 8]'; // Go's %d of a []byte
const WN = 'winpost-1000-0a0b0c0d0e0f1011';

/** The lines of one partition's success path on worker w (engine.rs GPU worker + finalizer). */
function partition(job: string, p: number, w: number, pick: number, end: number): string[] {
  return [tl(pick, 'GPU_PICKUP', job, `worker=${w},partition=${p}`), tl(pick, 'GPU_START', job, `worker=${w},partition=${p}`), tl(end, 'GPU_END', job, `worker=${w},partition=${p},gpu_ms=${end - pick}`)];
}

test('WindowPoSt: GPU_END carries partition=<partition_index>; matched by job and worker, the worker ends idle', () => {
  const d = new TimelineDriver();
  d.at(1000);
  d.write(tl(1000, 'SYNTH_START', WD, 'kind=window-post'));
  d.at(1500);
  d.write(tl(1500, 'SYNTH_END', WD, 'synth_ms=500'), tl(1500, 'GPU_QUEUE', WD, 'monolithic'));
  d.at(1510);
  d.write(tl(1510, 'GPU_PICKUP', WD, 'worker=1'), tl(1510, 'GPU_START', WD, 'worker=1'));
  d.at(4010);
  // pipeline.rs synthesize_window_post: partition_index: Some(partition_index) -> GPU_END detail.
  d.write(tl(4010, 'GPU_END', WD, 'worker=1,partition=7,gpu_ms=2500'));
  d.at(10_000);
  const v = d.view();
  expect(v.busy(1)).toBe(0);
  expect(v.busySecs(1)).toBeCloseTo(2.5, 9);
  expect(v.gpuSecs('window-post')).toBeCloseTo(2.5, 9);
  expect(v.synthSecs('window-post')).toBeCloseTo(0.5, 9);
  expect(v.partsDone('window-post')).toBe(1);
  expect(v.live()).toBe(0);
  expect(v.onGpu()).toBe(0);
  expect(v.mismatch()).toEqual([]);
});

test('a retried id (Curio re-uses it) is a new proof: every partition counted again', () => {
  const d = new TimelineDriver();
  const run = (t0: number) => {
    d.at(t0);
    d.write(tl(t0, 'SYNTH_START', P, 'partition=0'), tl(t0, 'SYNTH_START', P, 'partition=1'));
    d.at(t0 + 100);
    d.write(tl(t0 + 100, 'SYNTH_END', P, 'partition=0,synth_ms=100'), tl(t0 + 100, 'SYNTH_END', P, 'partition=1,synth_ms=100'));
    d.write(...partition(P, 0, 0, t0 + 100, t0 + 400));
    d.at(t0 + 450);
    d.write(...partition(P, 1, 1, t0 + 450, t0 + 650));
  };
  run(1000);
  run(5000); // within seconds: the same id, the same partitions
  d.at(20_000);
  const v = d.view();
  expect(v.partsDone('porep-c2')).toBe(4);
  expect(v.gpuSecs('porep-c2')).toBeCloseTo(2 * (0.3 + 0.2), 9);
  expect(v.synthSecs('porep-c2')).toBeCloseTo(4 * 0.1, 9);
  expect(v.busySecs(0)).toBeCloseTo(0.6, 9);
  expect(v.busySecs(1)).toBeCloseTo(0.4, 9);
  expect(v.error('timeline_request_id_kind')).toBe(0);
  expect(d.tl.kinds.counts.get('request_id')).toBe(1);
  expect(v.live()).toBe(0);
});

test('a duplicate id in flight (cuzk accepts it): both instances counted, each on its worker', () => {
  const d = new TimelineDriver();
  d.at(1000);
  d.write(tl(1000, 'SYNTH_START', S, 'partition=3'), tl(1001, 'SYNTH_START', S, 'partition=3'));
  d.at(1200);
  d.write(tl(1200, 'SYNTH_END', S, 'partition=3,synth_ms=200'), tl(1201, 'SYNTH_END', S, 'partition=3,synth_ms=199'));
  d.write(tl(1210, 'GPU_PICKUP', S, 'worker=0,partition=3'), tl(1210, 'GPU_START', S, 'worker=0,partition=3'));
  d.write(tl(1220, 'GPU_PICKUP', S, 'worker=1,partition=3'), tl(1220, 'GPU_START', S, 'worker=1,partition=3'));
  d.at(1800);
  d.write(tl(1800, 'GPU_END', S, 'worker=1,partition=3,gpu_ms=580'), tl(1900, 'GPU_END', S, 'worker=0,partition=3,gpu_ms=690'));
  d.at(5000);
  const v = d.view();
  expect(v.partsDone('snap-update')).toBe(2);
  expect(v.busySecs(0)).toBeCloseTo(0.69, 9);
  expect(v.busySecs(1)).toBeCloseTo(0.58, 9);
  expect(v.synthSecs('snap-update')).toBeCloseTo(0.399, 9);
  expect(v.live()).toBe(0);
});

test('skip after pickup (a partition of a failed job): no GPU_START; the worker was never busy for it', () => {
  const d = new TimelineDriver();
  d.at(1000);
  // Worker 0 proves P/0; P/1's GPU stage fails (no GPU_END: gpu_prove_finish's `?`).
  d.write(...partition(P, 0, 0, 1000, 1600).slice(0, 2));
  d.write(tl(1010, 'GPU_PICKUP', P, 'worker=1,partition=1'), tl(1010, 'GPU_START', P, 'worker=1,partition=1'));
  d.at(1600);
  d.write(tl(1600, 'GPU_END', P, 'worker=0,partition=0,gpu_ms=600'));
  // Worker 0 picks up P/2, already synthesized, of the now failed job: "skipping GPU prove for
  // failed partitioned job" right after the GPU_PICKUP; then it picks up another job at once.
  d.at(2000);
  d.write(tl(2000, 'GPU_PICKUP', P, 'worker=0,partition=2'), tl(2000, 'GPU_PICKUP', S, 'worker=0,partition=0'), tl(2000, 'GPU_START', S, 'worker=0,partition=0'));
  d.at(2500);
  d.write(tl(2500, 'GPU_END', S, 'worker=0,partition=0,gpu_ms=500'));
  // Worker 0 again: a skip of the job now known to have failed: idle at once.
  d.at(3000);
  d.write(tl(3000, 'GPU_PICKUP', P, 'worker=0,partition=3'));
  let v = d.view();
  expect(v.busy(0)).toBe(0);
  // A skip of a job not known to have failed: tentative (busy, not exposed past the pickup),
  // then idle once no GPU_START came within confirmMs (the sweep).
  d.write(tl(3000, 'GPU_PICKUP', 'porep-1000-8', 'worker=0,partition=0'));
  v = d.view();
  expect(v.busy(0)).toBe(1);
  d.at(9000);
  v = d.view();
  expect(v.busy(0)).toBe(0);
  expect(v.busySecs(0)).toBeCloseTo(0.6 + 0.5, 9);
  expect(d.tl.skips).toBe(3);
  expect(v.partsDone('porep-c2')).toBe(1);
  expect(v.partsDone('snap-update')).toBe(1);
  expect(v.mismatch()).toEqual([]);
});

test('a skip while the worker still owns a running partition: ownership goes back to it', () => {
  const d = new TimelineDriver();
  d.at(1000);
  d.write(...partition(S, 0, 0, 1000, 0).slice(0, 2));
  // Split proving: worker 0 loops after prove_start and picks up a skipped partition.
  d.at(1300);
  d.write(tl(1300, 'GPU_PICKUP', P, 'worker=0,partition=4'));
  d.at(1900);
  d.write(tl(1900, 'GPU_END', S, 'worker=0,partition=0,gpu_ms=900'));
  d.at(9000);
  const v = d.view();
  expect(v.busy(0)).toBe(0);
  expect(v.busySecs(0)).toBeCloseTo(0.9, 9); // 1000 -> 1900, the skip adds nothing
  expect(v.onGpu()).toBe(0);
  expect(v.live()).toBe(0);
});

test('GPU failure with TIMELINE alone: no GPU_END ever; given up after the timeout, the worker idle, counted', () => {
  const d = new TimelineDriver({ gpuTimeoutMs: 5000 });
  d.at(1000);
  d.write(...partition(P, 0, 0, 1000, 1800)); // one stage seen: 800 ms
  d.at(2000);
  d.write(tl(2000, 'GPU_PICKUP', P, 'worker=0,partition=1'), tl(2000, 'GPU_START', P, 'worker=0,partition=1'));
  d.at(6000);
  let v = d.view();
  expect(v.busy(0)).toBe(1);
  // Exposure stops at the pickup + 1.5x the longest stage seen (800 ms): 1.2 s.
  expect(v.busySecs(0)).toBeCloseTo(0.8 + 1.2, 9);
  d.at(8000);
  v = d.view();
  expect(v.busy(0)).toBe(0);
  expect(v.busySecs(0)).toBeCloseTo(0.8 + 1.2, 9);
  expect(v.onGpu()).toBe(0);
  expect(v.live()).toBe(0);
  expect(v.error('timeline_gpu_end_missing')).toBe(1);
  expect(v.partsDone('porep-c2')).toBe(1);
});

test('GPU failure seen by /status (partition done, gpu_ms) and no GPU_END: a failed partition, its end exact', () => {
  const d = new TimelineDriver();
  d.at(1000);
  d.write(tl(1000, 'GPU_PICKUP', P, 'worker=0,partition=5'), tl(1000, 'GPU_START', P, 'worker=0,partition=5'));
  d.at(1700);
  // status.rs partition_gpu_end sets Done whatever the result; gpu_ms = 700.
  d.tl.otherSurfaceEnded(P, 5, 700);
  d.at(3000); // the log has been read well past 1700 + 2 x lag: no GPU_END is coming
  d.at(5000);
  const v = d.view();
  expect(v.busy(0)).toBe(0);
  expect(v.busySecs(0)).toBeCloseTo(0.7, 9);
  expect(v.partsFailed('porep-c2')).toBe(1);
  expect(v.partsDone('porep-c2')).toBe(0);
  expect(v.gpuSecs('porep-c2')).toBeCloseTo(0.7, 9);
  expect(v.live()).toBe(0);
});

test('a tracing line inside a TIMELINE line (eprintln! writes in pieces) is cut out and the line put back together', () => {
  const d = new TimelineDriver();
  const trace = '\x1b[2m2026-12-01T10:00:00.123456Z\x1b[0m \x1b[32m INFO\x1b[0m \x1b[2mcuzk_core::engine\x1b[0m: partition GPU prove complete\n';
  d.at(1000);
  d.write(tl(1000, 'SYNTH_START', WN, 'kind=winning-post'), tl(1000, 'GPU_PICKUP', WN, 'worker=2'), tl(1000, 'GPU_START', WN, 'worker=2'));
  d.at(1400);
  // Torn after the job id: "TIMELINE,1400,GPU_END,<id>" <tracing line> ",worker=2,gpu_ms=400\n".
  d.write(`TIMELINE,1400,GPU_END,${WN}${trace},worker=2,gpu_ms=400\n`);
  // Torn twice: after "TIMELINE," and after the event.
  d.write(tl(1400, 'SYNTH_START', WN + 'b', 'kind=winning-post'), `TIMELINE,${trace}1410,GPU_PICKUP${trace},${WN}b,worker=3\n`, tl(1410, 'GPU_START', WN + 'b', 'worker=3'));
  // Torn right before the newline: the record before the intruder is whole.
  d.at(1700);
  d.write(`TIMELINE,1700,GPU_END,${WN}b,worker=3,gpu_ms=290${trace}\n`);
  d.at(5000);
  const v = d.view();
  expect(v.error('timeline_malformed')).toBe(0);
  expect(v.error('timeline_torn')).toBe(0);
  expect(v.busySecs(2)).toBeCloseTo(0.4, 9);
  expect(v.busySecs(3)).toBeCloseTo(0.29, 9);
  expect(v.partsDone('winning-post')).toBe(2);
  expect(v.busy(2) + v.busy(3)).toBe(0);
});

test('a torn line that never gets its rest is counted, and the next line is read normally', () => {
  const d = new TimelineDriver();
  d.at(1000);
  d.write(`TIMELINE,1000,GPU_PICKUP,${WN}\x1b[2m2026-12-01T10:00:00Z\x1b[0m INFO x\n`, tl(1000, 'SYNTH_START', WD, 'kind=window-post'));
  const v = d.view();
  expect(v.error('timeline_torn')).toBe(1);
  expect(d.tl.jobs.has(WD)).toBe(true);
});

test('kinds: Curio request ids, partition index >= 10, and an unknown one flushed to "other" on the timer', () => {
  const d = new TimelineDriver({ unresolvedMs: 10_000 });
  d.at(1500); // lines of 1000..1500 read together at 1500
  d.write(...partition('ps-snap-1000-9-77', 0, 0, 1000, 1500));
  d.write(...partition('some-opaque-id', 11, 1, 1000, 1300)); // index >= 10: SnapDeals
  d.write(...partition('another-opaque-id', 2, 2, 1000, 1200)); // nothing says
  d.at(2000);
  let v = d.view();
  expect(v.gpuSecs('snap-update')).toBeCloseTo(0.8, 9);
  expect(v.gpuSecs('other')).toBe(0); // waiting for its kind
  // No more lines: the timer flushes it once the job has been over for unresolvedMs, on the
  // log's clock (which trails what was read by >= 1 s, the lag for lines still on their way).
  d.at(12_150); // the job ended at 1200 (+ 10 s); the log's clock is at 11,150
  v = d.view();
  expect(v.gpuSecs('other')).toBe(0);
  d.at(12_250);
  v = d.view();
  expect(v.gpuSecs('other')).toBeCloseTo(0.2, 9);
  expect(v.error('timeline_unresolved_kind')).toBe(1);
  const c = d.tl.kinds.counts;
  expect([c.get('request_id'), c.get('partition_index'), c.get('unresolved')]).toEqual([1, 1, 1]);
});

test('GPU_START without its GPU_PICKUP (lost or torn beyond repair) stands for the pickup', () => {
  const d = new TimelineDriver();
  d.at(1000);
  d.write(tl(1000, 'GPU_START', P, 'worker=0,partition=0'));
  d.at(1300);
  d.write(tl(1300, 'GPU_END', P, 'worker=0,partition=0,gpu_ms=300'));
  d.at(3000);
  const v = d.view();
  expect(v.busySecs(0)).toBeCloseTo(0.3, 9);
  expect(v.partsDone('porep-c2')).toBe(1);
  expect(v.live()).toBe(0);
});

test('a GPU_END with nothing before it (catch-up cut): gpu_ms dates the stage on an idle worker', () => {
  const d = new TimelineDriver();
  d.at(5000);
  d.write(tl(5000, 'GPU_END', P, 'worker=0,partition=4,gpu_ms=700'));
  d.at(8000);
  const v = d.view();
  expect(v.busySecs(0)).toBeCloseTo(0.7, 9);
  expect(v.busy(0)).toBe(0);
  expect(v.live()).toBe(0);
});

test('CUZK_DISABLE_SPLIT_PROVE=1: pickups only; detected, the worker busy from pickup to its next pickup', () => {
  const d = new TimelineDriver();
  d.at(1000);
  d.write(tl(1000, 'GPU_PICKUP', P, 'worker=0,partition=0'));
  d.at(2500);
  d.write(tl(2500, 'GPU_PICKUP', P, 'worker=0,partition=1'));
  expect(d.tl.splitMode).toBe('off');
  d.at(4000);
  d.write(tl(4000, 'GPU_PICKUP', P, 'worker=0,partition=2'));
  const v = d.view();
  expect(v.busy(0)).toBe(1);
  expect(v.busySecs(0)).toBeGreaterThanOrEqual(3.0 - 1e-9 - 1); // exposure lags the read by >= 1 s
  expect(d.tl.skips).toBe(0);
});

test('clock: a line far ahead of real time is refused; a second daemon mixed in cannot fabricate busy time', () => {
  const d = new TimelineDriver({ maxClockLeadMs: 30_000 });
  d.at(1000);
  d.write(tl(1000, 'GPU_PICKUP', WD, 'worker=0'), tl(1000, 'GPU_START', WD, 'worker=0'));
  d.at(1500);
  d.write(tl(999999999999999, 'GPU_END', WD, 'worker=0,gpu_ms=999999999998999'));
  let v = d.view();
  expect(v.error('timeline_clock')).toBe(1);
  expect(v.busy(0)).toBe(1);
  // Another daemon's lines (offsets ~5,000 s ahead) interleaved for 10 s of real time.
  for (let t = 1600; t < 11_600; t += 100) {
    d.at(t);
    d.write(tl(5_000_000 + t, 'GPU_PICKUP', 'x', 'worker=1'), tl(5_000_000 + t, 'GPU_START', 'x', 'worker=1'), tl(5_000_000 + t + 50, 'GPU_END', 'x', 'worker=1,gpu_ms=50'));
  }
  d.write(tl(11_600, 'GPU_END', WD, 'worker=0,gpu_ms=10600'));
  d.at(20_000);
  v = d.view();
  expect(v.busySecs(0)).toBeCloseTo(10.6, 9);
  expect(v.busySecs(1)).toBe(0);
  expect(v.error('timeline_restart')).toBe(0);
  // Busy time never exceeds the real time elapsed, per worker.
  expect(v.busySecs(0) + v.busySecs(1)).toBeLessThanOrEqual((20_000 - 1000) / 1000);
});

test('clock: offsets running faster than real time are refused once they lead by more than the tolerance', () => {
  const d = new TimelineDriver({ maxClockLeadMs: 5000 });
  d.at(1000);
  d.write(tl(1000, 'GPU_PICKUP', WD, 'worker=0'), tl(1000, 'GPU_START', WD, 'worker=0'));
  // 1000x fast: 10 s of real time claims 10,000 s.
  for (let i = 1; i <= 10; i++) {
    d.at(1000 + i * 1000);
    d.write(tl(1000 + i * 1_000_000, 'GPU_END', WD, `worker=0,gpu_ms=${i * 1_000_000}`));
  }
  const v = d.view();
  expect(v.error('timeline_clock')).toBe(10);
  expect(v.busySecs(0)).toBeLessThanOrEqual(11);
});
