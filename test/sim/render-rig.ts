/**
 * The upstream renderer on a scripted engine event stream (the native 48-byte layout, encoded
 * with the project's encoder), with in-memory surfaces: the TIMELINE text, the StatusTracker,
 * the JobTracker (GetStatus/GetMetrics/answers) and the ledger. Times are ms after START.
 */
import { EVF_ABANDONED, EV_GPU_LOCK, EV_JOB_DONE, EV_JOB_QUEUED, EV_JOB_STARTED, EV_PARTITION, EventRecord, encodeEvents } from '../../src/engine/model/event-layout';
import { JobAnswer, JobTracker } from '../../src/sim/job-tracker';
import { cuzkMetricsText } from '../../src/sim/metrics-text';
import { RendererOptions, UpstreamRenderer } from '../../src/sim/renderer';
import { RequestRegistry, SimRequest } from '../../src/sim/requests';
import { StatusTracker } from '../../src/sim/status-tracker';
import { TimelineWriter } from '../../src/sim/timeline-writer';
import { UpstreamLedger } from '../../src/sim/upstream-ledger';

export const START = 5_000_000_000;
export const at = (msAfter: number): number => START + Math.round(msAfter * 1e6);
export const POREP = 0;
export const SNAP = 1;
export const WPOST = 2;
export const WINPOST = 3;
const SYNTHESIZING = 1;
const SYNTH_DONE = 2;
const GPU = 3;
const DONE = 4;
const FAILED = 5;
const FINALIZING = 6;

export type Rig = ReturnType<typeof rig>;

export function rig(o: Partial<RendererOptions> & { workers?: number; clearsOwnerOnly?: boolean; tracing?: boolean } = {}) {
  let text = '';
  const workerGpus = o.workerGpus ?? Array.from({ length: o.workers ?? 2 }, () => 0);
  const timeline = new TimelineWriter({ describe: 'memory', write: (t) => (text += t), close: () => {} }, START, { tracing: o.tracing ?? false });
  const status = new StatusTracker(START);
  status.registerWorkers(workerGpus.map((g, i) => [i, g] as const));
  const jobs = new JobTracker(workerGpus, o.clearsOwnerOnly ?? false);
  const ledger = new UpstreamLedger(workerGpus);
  const requests = new RequestRegistry();
  const badProofs = new Set<number>();
  const renderer = new UpstreamRenderer(
    { workerGpus, splitProve: o.splitProve ?? true, pipeline: o.pipeline ?? true, gpuFailure: o.gpuFailure ?? 'finish', showsPost: o.showsPost ?? false },
    {
      timeline: o.pipeline === false ? null : timeline,
      status,
      jobs,
      ledger,
      requests,
      fallbackId: (h) => `job-${h}`,
      selfCheck: (h) => !badProofs.has(h),
      proofBytes: (h) => Buffer.from(`proof-of-${h}`),
    },
  );
  let seq = 0;
  const answers: JobAnswer[] = [];
  const feed = (...recs: Array<Omit<EventRecord, 'seq'>>) => {
    const withSeq = recs.map((r) => ({ ...r, seq: ++seq }));
    renderer.onEvents(encodeEvents(withSeq), withSeq.length);
  };
  const ev = {
    queued: (job: number, kind: number, parts: number, t: number) => ({ type: EV_JOB_QUEUED, tNs: at(t), job, kind, partition: parts }),
    started: (job: number, kind: number, t: number) => ({ type: EV_JOB_STARTED, tNs: at(t), job, kind }),
    synth: (job: number, kind: number, p: number, t: number) => ({ type: EV_PARTITION, tNs: at(t), job, kind, partition: p, aux: SYNTHESIZING }),
    synthDone: (job: number, kind: number, p: number, t: number, synthMs: number) => ({ type: EV_PARTITION, tNs: at(t), job, kind, partition: p, aux: SYNTH_DONE, value: Math.round(synthMs * 1e6) }),
    gpu: (job: number, kind: number, p: number, w: number, t: number) => ({ type: EV_PARTITION, tNs: at(t), job, kind, partition: p, aux: GPU, gpu: 0, worker: w }),
    acquire: (w: number, t: number) => ({ type: EV_GPU_LOCK, tNs: at(t), gpu: 0, worker: w, aux: 1 }),
    release: (w: number, t: number) => ({ type: EV_GPU_LOCK, tNs: at(t), gpu: 0, worker: w, aux: 0 }),
    finalizing: (job: number, kind: number, p: number, w: number, t: number) => ({ type: EV_PARTITION, tNs: at(t), job, kind, partition: p, aux: FINALIZING, gpu: 0, worker: w }),
    done: (job: number, kind: number, p: number, w: number, t: number, gpuMs: number) => ({ type: EV_PARTITION, tNs: at(t), job, kind, partition: p, aux: DONE, gpu: 0, worker: w, value: Math.round(gpuMs * 1e6) }),
    failed: (job: number, kind: number, p: number, w: number | null, t: number, gpuMs = 0) => ({ type: EV_PARTITION, tNs: at(t), job, kind, partition: p, aux: FAILED, gpu: w === null ? 0xff : 0, worker: w ?? 0xffff, value: Math.round(gpuMs * 1e6) }),
    abandoned: (job: number, kind: number, p: number, w: number | null, t: number, gpuMs = 0) => ({ type: EV_PARTITION, tNs: at(t), job, kind, partition: p, aux: FAILED, gpu: w === null ? 0xff : 0, worker: w ?? 0xffff, flags: EVF_ABANDONED, value: Math.round(gpuMs * 1e6) }),
    jobDone: (job: number, kind: number, outcome: number, t: number) => ({ type: EV_JOB_DONE, tNs: at(t), job, kind, aux: outcome }),
  };
  /** What SimCore.submit registers: the request(s) of an engine job, and a waiter per request. */
  const submit = (handle: number, reqs: Array<Partial<SimRequest> & { id: string; kind: number }>, monolithic?: boolean) => {
    const full = reqs.map((r) => ({ partitionIndex: 0, sectorNumber: 7, minerId: 1000, submittedAt: START, ...r }));
    requests.register({ handle, requests: full, monolithic: monolithic ?? (full.length > 1 || full[0].kind >= 2) });
    for (const r of full) jobs.addWaiter(r.id, (a) => answers.push(a));
  };
  return {
    renderer,
    status,
    jobs,
    ledger,
    answers,
    badProofs,
    feed,
    ev,
    submit,
    text: () => text,
    /** TIMELINE lines without the offset: "EVENT,job,detail". */
    lines: () =>
      text
        .split('\n')
        .filter((l) => l.startsWith('TIMELINE,'))
        .map((l) => l.split(',').slice(2).join(',')),
    /** Full lines (offset included). */
    raw: () => text.split('\n').filter((l) => l !== ''),
    snapshot: (t: number) => status.snapshot(at(t)),
    metrics: () =>
      cuzkMetricsText({
        totalCompleted: jobs.totalCompleted,
        totalFailed: jobs.totalFailed,
        uptimeSeconds: 1,
        queueDepth: 0,
        completedByKind: [...jobs.completedByKind],
        failedByKind: [...jobs.failedByKind],
        recentByKind: jobs.recentByKind(),
        runningJobs: jobs.running(),
        gpuWorkers: jobs.workers.length,
      }),
  };
}
