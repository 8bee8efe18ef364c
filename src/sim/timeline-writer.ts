/**
 * What upstream cuzk writes to its journal, from the renderer's calls (curio e0294b0f):
 *  - TIMELINE lines, engine.rs `timeline_event`: `eprintln!("TIMELINE,{},{},{},{}", offset_ms,
 *    event, job_id, detail)`, offset = whole ms since the engine started (`as_millis`). The
 *    renderer (renderer.ts) decides which lines and when, at upstream's call sites:
 *      SYNTH_START  `partition=N` (synthesis worker pool) | `kind=<Display>` (process_batch)
 *      SYNTH_END    `partition=N,synth_ms=M` | `synth_ms=M`
 *      GPU_QUEUE    `partition=N` | `monolithic`
 *      GPU_PICKUP   `worker=W[,partition=N]` (N = SynthesizedJob.partition_index: partitioned only)
 *      GPU_START    the same detail, written right after the pickup (before gpu_prove_start)
 *      GPU_END      `worker=W[,partition=N],gpu_ms=M` (N = gpu_result.partition_index: also a
 *                   WindowPoSt's request partition_index), M = gpu_prove_start → finish
 *  - tracing lines (cuzk-daemon main.rs: `tracing_subscriber::fmt()` with ANSI colours, on
 *    stdout): written to the same sink, as one journal stream holds both.
 * Tearing: `eprintln!` on unbuffered stderr issues one write(2) per format piece
 * (`TIMELINE,` offset `,` event `,` job_id `,` detail `\n`), so a tracing line written on
 * stdout by another thread can land between two pieces; with `tearRate` > 0 a seeded draw
 * per TIMELINE line inserts a whole tracing line at one of the 8 inner piece boundaries.
 * Lines of one drained batch are written with one write (the file holds every line of what
 * a truth read drained).
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

/** mulberry32: a small seeded PRNG (tearing and id draws must be reproducible). */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0 || 0x9e3779b9;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export type Level = 'INFO' | 'WARN' | 'ERROR';
const LEVEL_COLOUR: Record<Level, string> = { INFO: '32', WARN: '33', ERROR: '31' };

export interface TimelineOptions {
  /** Write tracing lines too (upstream always has them in its journal). */
  tracing: boolean;
  /** Probability that a TIMELINE line is torn by a tracing line (needs tracing). */
  tearRate: number;
  seed: number;
  /** Wall clock (ms since the epoch) at engine clock `startNs`, for tracing timestamps. */
  wallAtStartMs: number;
}

export const DEFAULT_TIMELINE_OPTIONS: TimelineOptions = { tracing: false, tearRate: 0, seed: 1, wallAtStartMs: 0 };

const NS_PER_MS = 1e6;

export class TimelineWriter {
  /** TIMELINE lines written so far. */
  lines = 0;
  /** Tracing lines written (whole lines, torn-in ones included). */
  tracingLines = 0;
  /** TIMELINE lines with a tracing line inside them. */
  tornLines = 0;
  private pending = '';
  private readonly rand: () => number;
  private readonly opts: TimelineOptions;

  constructor(
    private readonly sink: TimelineSink,
    /** The engine's start on its clock (CLOCK_MONOTONIC ns): offset 0. */
    private readonly startNs: number,
    opts: Partial<TimelineOptions> = {},
  ) {
    this.opts = { ...DEFAULT_TIMELINE_OPTIONS, ...opts };
    this.rand = seededRandom(this.opts.seed);
  }

  private offset(tNs: number): number {
    const d = tNs - this.startNs;
    return d > 0 ? Math.floor(d / NS_PER_MS) : 0;
  }

  /** engine.rs timeline_event, its five arguments as eprintln! writes them, piece by piece. */
  event(tNs: number, event: string, jobId: string, detail: string): void {
    const pieces = ['TIMELINE,', String(this.offset(tNs)), ',', event, ',', jobId, ',', detail, '\n'];
    this.lines++;
    if (this.opts.tracing && this.opts.tearRate > 0 && this.rand() < this.opts.tearRate) {
      const at = 1 + Math.floor(this.rand() * 8); // after piece 1..8: never after the newline
      this.tornLines++;
      this.pending += pieces.slice(0, at).join('') + this.tracingText(tNs, 'INFO', 'cuzk_core::pipeline', 'buffers', [['event', 'synth_done']]) + pieces.slice(at).join('');
      return;
    }
    this.pending += pieces.join('');
  }

  /** One tracing line (tracing_subscriber fmt, ANSI): time, level, target, message, fields. */
  tracing(tNs: number, level: Level, target: string, message: string, fields: ReadonlyArray<readonly [string, string | number]> = []): void {
    if (!this.opts.tracing) return;
    this.pending += this.tracingText(tNs, level, target, message, fields);
  }

  private tracingText(tNs: number, level: Level, target: string, message: string, fields: ReadonlyArray<readonly [string, string | number]>): string {
    this.tracingLines++;
    const wall = new Date(this.opts.wallAtStartMs + Math.max(0, tNs - this.startNs) / NS_PER_MS);
    const micros = String(Math.floor((((tNs - this.startNs) / 1e3) % 1e3 + 1e3) % 1e3)).padStart(3, '0');
    const ts = wall.toISOString().replace('Z', `${micros}Z`);
    let s = `\x1b[2m${ts}\x1b[0m \x1b[${LEVEL_COLOUR[level]}m${level.padStart(5)}\x1b[0m \x1b[2m${target}\x1b[0m\x1b[2m:\x1b[0m ${message}`;
    for (const [k, v] of fields) s += ` \x1b[3m${k}\x1b[0m\x1b[2m=\x1b[0m${v}`;
    return s + '\n';
  }

  synthStart(tNs: number, jobId: string, part: number | null, kindName: string): void {
    this.event(tNs, 'SYNTH_START', jobId, part === null ? `kind=${kindName}` : `partition=${part}`);
  }

  /** SYNTH_END and, right after it, GPU_QUEUE (both call sites write them together). */
  synthEnd(tNs: number, jobId: string, part: number | null, synthNs: number): void {
    const ms = Math.floor(synthNs / NS_PER_MS);
    this.event(tNs, 'SYNTH_END', jobId, part === null ? `synth_ms=${ms}` : `partition=${part},synth_ms=${ms}`);
    this.event(tNs, 'GPU_QUEUE', jobId, part === null ? 'monolithic' : `partition=${part}`);
  }

  pickup(tNs: number, jobId: string, worker: number, part: number | null): void {
    this.event(tNs, 'GPU_PICKUP', jobId, part === null ? `worker=${worker}` : `worker=${worker},partition=${part}`);
  }

  gpuStart(tNs: number, jobId: string, worker: number, part: number | null): void {
    this.event(tNs, 'GPU_START', jobId, part === null ? `worker=${worker}` : `worker=${worker},partition=${part}`);
  }

  gpuEnd(tNs: number, jobId: string, worker: number, part: number | null, gpuNs: number): void {
    const ms = Math.floor(gpuNs / NS_PER_MS);
    this.event(tNs, 'GPU_END', jobId, part === null ? `worker=${worker},gpu_ms=${ms}` : `worker=${worker},partition=${part},gpu_ms=${ms}`);
  }

  /** Writes the lines of the batch just rendered (one write). */
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
