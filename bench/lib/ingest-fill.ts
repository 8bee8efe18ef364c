/**
 * The ingest benchmark's engine fill and timed refresh (bench/ingest.ts), shared by the
 * benchmark's own process (the captured stream for the replays) and the child process each
 * end-to-end arm runs in (bench/lib/ingest-arm.ts).
 */
import * as v8 from 'node:v8';
import * as vm from 'node:vm';
import { CTR } from '../../src/engine/sources/native/abi';
import { EVENT_SIZE } from '../../src/engine/model/event-layout';
import { NativeEngine } from '../../src/engine/sources/native/native-engine';
import { Telemetry } from '../../src/exporter/telemetry';
import { silentLogger } from '../../src/util/logger';
import { openEngine } from './engine';
import { blockFor, nowMs } from './stats';

/**
 * In each arm's process (ingest-arm.ts), untimed fills first: V8 has the refresh path optimised for good only after a few. In a
 * fresh process the refreshes ran at (M events/s) model 2.2 2.9 28.8 16.0 31.8 31.0 and
 * exporter 1.9 2.6 11.0 3.6 22.1 23.9 (a deoptimisation at the fourth), steady from the fifth.
 */
export const WARM_FILLS = 5;
/**
 * Then the median of three timed fills: a late deoptimisation (a path first taken) still
 * slowed one fill in a few processes (16 M events/s against 22-24 M).
 */
export const TIMED_FILLS = 3;

const KINDS = ['porep-c2', 'snap-update', 'window-post', 'winning-post'] as const;

/**
 * A full garbage collection, run before every timed region in both arms: what setting up
 * an arm allocated (the exporter's OpenTelemetry objects, a fill's job records) is then
 * not collected inside the measurement.
 */
export const fullGc: () => void = (() => {
  v8.setFlagsFromString('--expose-gc');
  const gc = vm.runInNewContext('gc') as (() => void) | undefined;
  return typeof gc === 'function' ? gc : () => {};
})();

function sumKinds(words: Float64Array, field: number): number {
  let s = 0;
  for (let k = 0; k < words[CTR.KINDS]; k++) s += words[CTR.HDR_WORDS + k * CTR.KIND_WORDS + field];
  return s;
}

/** Fills one engine's ring and returns it (JS thread held off, native threads run). */
export function fill(jobs: number, withTelemetry: boolean, capture?: Buffer[]): { engine: NativeEngine; telemetry: Telemetry | null; events: number; fillMs: number } {
  const engine = openEngine({
    backend: 'sim',
    gpus: 2,
    workers_per_gpu: 2,
    synthesis_concurrency: 8,
    time_scale: 1e-6,
    event_ring_capacity: 1 << 20,
    queue_limit: 1_000_000,
  });
  const telemetry = withTelemetry ? new Telemetry(engine, { version: 'bench', logger: silentLogger }) : null;
  if (capture) {
    const apply = engine.model.applyEvents.bind(engine.model);
    engine.model.applyEvents = (view: DataView, n: number, off = 0) => {
      capture.push(Buffer.from(new Uint8Array(view.buffer, view.byteOffset + off, n * EVENT_SIZE)));
      return apply(view, n, off);
    };
  }
  const t0 = nowMs();
  for (let i = 0; i < jobs; i++) engine.submit(KINDS[i % KINDS.length]);
  for (;;) {
    const { words } = engine.readCounters();
    if (sumKinds(words, CTR.K_PROOFS_COMPLETED) + sumKinds(words, CTR.K_PROOFS_FAILED) >= jobs) {
      if (words[CTR.EVENTS_OVERWRITTEN] > 0) throw new Error('ingest bench: the ring overflowed; raise event_ring_capacity');
      return { engine, telemetry, events: words[CTR.LAST_SEQ] - engine.model.lastSeq, fillMs: nowMs() - t0 };
    }
    blockFor(2);
  }
}

export interface TimedRefresh {
  /** Events per second of the timed refresh(). */
  rate: number;
  n: number;
  ns: number;
  batches: number;
  fillMs: number;
}

/** One fill, then one NativeEngine.refresh() timed after a full GC. */
export async function timedRefresh(jobs: number, withTelemetry: boolean): Promise<TimedRefresh> {
  const f = fill(jobs, withTelemetry);
  const b0 = f.engine.stats.batches;
  const ev0 = f.engine.model.eventsTotal;
  fullGc();
  const t0 = process.hrtime.bigint();
  f.engine.refresh();
  const ns = Number(process.hrtime.bigint() - t0);
  const n = f.engine.model.eventsTotal - ev0;
  if (f.engine.stats.dropped > 0) throw new Error('ingest bench: events were dropped');
  const nb = f.engine.stats.batches - b0;
  await f.telemetry?.shutdown();
  await f.engine.close();
  return { rate: (n / ns) * 1e9, n, ns, batches: nb, fillMs: f.fillMs };
}
