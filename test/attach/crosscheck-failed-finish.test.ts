/**
 * A worker's last partition whose gpu_prove_finish fails (upstream engine.rs finalizer: no
 * GPU_END; status.rs partition_gpu_end marks it done with gpu_ms and clears the worker):
 * TIMELINE holds the stage open until its sweep settles it (pickup + gpu_ms + 2x the read
 * lag), while /status already shows the worker idle. That window is not a contradiction:
 * the surfaces must not be flagged as disagreeing (one sample of surfaces_disagree keeps the
 * key alert's flag for 2 m, longer than its `for: 1m`: fleet-scale's gpu-fail-finish prover
 * paged under load). The exporter's clock moves with the script; the sweep runs at each look.
 */
import * as surfaceClock from '../../src/engine/sources/attach/surface';
import { A, realHr, rig } from './merge-rig';
import { idle, pipeline, proving, snapshot } from './snapshots';
import { tl } from './timeline-driver';

afterEach(() => jest.restoreAllMocks());

test('gpu_prove_finish failure of a worker’s last partition: no disagreement while TIMELINE waits for the sweep, and the worker ends idle', () => {
  let skewNs = 0;
  const base = realHr();
  jest.spyOn(surfaceClock, 'hrNowNs').mockImplementation(() => base + skewNs);
  const r = rig({ status: true, timeline: true, skewToleranceMs: 2000 });
  (r as unknown as { epochHr: number }).epochHr = base - 1e9;
  const go = (ms: number) => (skewNs = ms * 1e6);
  // Worker 1 proves p1 throughout; worker 0 proves p0 from 1 s, its finish fails at 3 s.
  const at = (ms: number, parts: Parameters<typeof pipeline>[2], w0: ReturnType<typeof idle>) =>
    r.status(ms, snapshot({ uptime: 100 + ms / 1000, pipelines: [pipeline(A, 'snap-update', parts, ms / 1000)], workers: [w0, proving(1, 0, A, 1, (ms - 1500) / 1000)] }));
  const looks: { t: number; busy: number; disagree: string[] }[] = [];
  const look = (t: number) => {
    r.src.timeline!.sweep();
    r.src.refresh();
    looks.push({ t, busy: r.busy(0), disagree: r.src.currentDisagreements().map((d) => `worker ${d.worker}: busy per ${d.busy_per}, idle per ${d.idle_per}`) });
  };
  go(0);
  r.lines(0, tl(0, 'SYNTH_START', A, 'partition=0'), tl(0, 'SYNTH_START', A, 'partition=1'));
  go(950);
  r.lines(950, tl(900, 'SYNTH_END', A, 'partition=0,synth_ms=900'), tl(900, 'GPU_QUEUE', A, 'partition=0'), tl(950, 'SYNTH_END', A, 'partition=1,synth_ms=950'), tl(950, 'GPU_QUEUE', A, 'partition=1'));
  go(1000);
  r.lines(1000, tl(1000, 'GPU_PICKUP', A, 'worker=0,partition=0'), tl(1000, 'GPU_START', A, 'worker=0,partition=0'));
  go(1500);
  r.lines(1500, tl(1500, 'GPU_PICKUP', A, 'worker=1,partition=1'), tl(1500, 'GPU_START', A, 'worker=1,partition=1'));
  go(2000);
  at(2000, [['gpu', 900, 1000], ['gpu', 950, 500]], proving(0, 0, A, 0, 1));
  look(2000);
  for (const t of [3100, 3500, 4000, 5000, 6000, 8000, 10000]) {
    go(t);
    at(t, [['done', 900, 2000], ['gpu', 950, t - 1500]], idle(0, 0));
    r.readTo(t);
    look(t);
  }
  expect(looks.flatMap((l) => l.disagree.map((d) => `${l.t / 1000} s ${d}`))).toEqual([]);
  // The sweep settled the failed stage: worker 0 idle by the end.
  expect(looks[looks.length - 1].busy).toBe(0);
});
