/**
 * cuzk's TIMELINE lines (engine.rs `timeline_event`), written from the reference engine's
 * events: `TIMELINE,<offset_ms>,<event>,<job_id>,<detail>`, offset = whole ms since the
 * engine started. What each line is derived from (the contract in DESIGN §7c):
 *
 *   SYNTH_START  partition -> synthesizing       `partition=N` | `kind=<kind>` (monolithic)
 *   SYNTH_END    partition -> synth_done         `partition=N,synth_ms=M` | `synth_ms=M`
 *   GPU_QUEUE    (same event, right after)       `partition=N` | `monolithic`
 *   GPU_PICKUP   partition -> gpu (hand-off)     `worker=W[,partition=N]`
 *   GPU_START    the worker's GPU lock acquire   `worker=W[,partition=N]` (the partition it
 *                                                 was last handed: the lock event names
 *                                                 only the GPU and the worker)
 *   GPU_END      partition leaves gpu/finalizing `worker=W[,partition=N],gpu_ms=M`, M = the
 *                into done/failed                whole GPU stage (finalize tail included)
 *
 * Monolithic = WindowPoSt and WinningPoSt, as in cuzk; partitioned jobs never carry their
 * kind. Durations and offsets are rounded down to whole ms, as Rust's `as_millis()` does.
 * Lines of one drained batch are written with one write.
 */
import * as fs from 'node:fs';

export interface TimelineSink {
  /** What the banner prints: "stderr" or the path. */
  readonly describe: string;
  write(text: string): void;
  close(): void;
}

/** "-" is standard error (as cuzk writes it), "" is nowhere (null), anything else a file appended to. */
export function openTimelineSink(spec: string): TimelineSink | null {
  if (spec === '') return null;
  if (spec === '-') {
    return { describe: 'stderr', write: (t) => void process.stderr.write(t), close: () => {} };
  }
  const fd = fs.openSync(spec, 'a');
  let open = true;
  return {
    describe: spec,
    // Synchronous: when a ground-truth read drains the engine, the file already holds
    // every line of what was drained.
    write: (t) => {
      if (open) fs.writeSync(fd, t);
    },
    close: () => {
      if (!open) return;
      open = false;
      fs.closeSync(fd);
    },
  };
}

const NS_PER_MS = 1e6;

export class TimelineWriter {
  /** TIMELINE lines written so far. */
  lines = 0;
  /** Lock acquires of a worker whose partition was unknown (after an event gap): no line. */
  unknownStarts = 0;
  private pending = '';
  /** Per worker: the job/partition it was handed last (GPU_START names it). */
  private readonly curJob: (string | null)[];
  private readonly curPart: Int32Array;

  constructor(
    private readonly sink: TimelineSink,
    /** The engine's start on its clock (CLOCK_MONOTONIC ns): offset 0. */
    private readonly startNs: number,
    workers: number,
  ) {
    this.curJob = new Array<string | null>(workers).fill(null);
    this.curPart = new Int32Array(workers).fill(-1);
  }

  private offset(tNs: number): number {
    const d = tNs - this.startNs;
    return d > 0 ? Math.floor(d / NS_PER_MS) : 0;
  }

  private line(tNs: number, event: string, jobId: string, detail: string): void {
    this.pending += `TIMELINE,${this.offset(tNs)},${event},${jobId},${detail}\n`;
    this.lines++;
  }

  synthStart(tNs: number, jobId: string, part: number, monolithic: boolean, kindName: string): void {
    this.line(tNs, 'SYNTH_START', jobId, monolithic ? `kind=${kindName}` : `partition=${part}`);
  }

  synthEnd(tNs: number, jobId: string, part: number, monolithic: boolean, synthNs: number): void {
    const ms = Math.floor(synthNs / NS_PER_MS);
    this.line(tNs, 'SYNTH_END', jobId, monolithic ? `synth_ms=${ms}` : `partition=${part},synth_ms=${ms}`);
    this.line(tNs, 'GPU_QUEUE', jobId, monolithic ? 'monolithic' : `partition=${part}`);
  }

  pickup(tNs: number, jobId: string, part: number, monolithic: boolean, worker: number): void {
    this.assign(worker, jobId, part, monolithic);
    this.line(tNs, 'GPU_PICKUP', jobId, monolithic ? `worker=${worker}` : `worker=${worker},partition=${part}`);
  }

  lockAcquired(tNs: number, worker: number): void {
    const jobId = worker < this.curJob.length ? this.curJob[worker] : null;
    if (jobId === null) {
      this.unknownStarts++;
      return;
    }
    const part = this.curPart[worker];
    this.line(tNs, 'GPU_START', jobId, part < 0 ? `worker=${worker}` : `worker=${worker},partition=${part}`);
  }

  gpuEnd(tNs: number, jobId: string, part: number, monolithic: boolean, worker: number, gpuNs: number): void {
    const ms = Math.floor(gpuNs / NS_PER_MS);
    this.line(tNs, 'GPU_END', jobId, monolithic ? `worker=${worker},gpu_ms=${ms}` : `worker=${worker},partition=${part},gpu_ms=${ms}`);
  }

  /** The partition a worker was handed last (its next GPU lock acquire is for it). */
  assign(worker: number, jobId: string, part: number, monolithic: boolean): void {
    if (worker >= this.curJob.length) return;
    this.curJob[worker] = jobId;
    this.curPart[worker] = monolithic ? -1 : part;
  }

  /** After an event gap: which partition a worker runs is unknown until re-assigned. */
  forgetWorkers(): void {
    this.curJob.fill(null);
    this.curPart.fill(-1);
  }

  /** Writes the lines of the batch just observed (one write). */
  flush(): void {
    if (this.pending === '') return;
    const text = this.pending;
    this.pending = '';
    this.sink.write(text);
  }

  close(): void {
    this.flush();
    this.sink.close();
  }
}
