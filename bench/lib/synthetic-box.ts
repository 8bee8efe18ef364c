/**
 * A synthetic prover box for the scrape benchmark: G GPUs x W workers running all four
 * proof kinds, described by the same 48-byte event records the native engine emits and
 * applied through the production StateModel. It lets us build a 64 GPU x 2 worker box
 * without 128 native worker threads, and its state is frozen during measurement (so
 * our exporter and the prom-client equivalent serialise exactly the same values).
 *
 * The event stream is a small discrete-event schedule: jobs arrive round-robin over the
 * kinds, partitions synthesize, are handed to the GPU's earliest-free worker, take the
 * per-GPU lock, release it, hand back. Events up to `cutNs` are applied; later ones are
 * not, so the box is caught mid-flight (busy workers, partitions in every live state).
 */
import {
  EV_GPU_LOCK,
  EV_JOB_DONE,
  EV_JOB_QUEUED,
  EV_JOB_STARTED,
  EV_MEMORY,
  EV_PARTITION,
  EV_QUEUE_DEPTH,
  EV_SYNTH_ACTIVE,
  EV_WORKER,
  EVF_FIRST,
  EventRecord,
  encodeEvents,
} from '../../src/engine/model/event-layout';
import { PART_DONE, PART_GPU, PART_SYNTH_DONE, PART_SYNTHESIZING } from '../../src/engine/model/kinds';
import type { MetricsSource } from '../../src/engine/sources/source';
import { StateModel, Topology } from '../../src/engine/model/state-model';
import { rng } from './stats';

const MS = 1_000_000;

/** Per-kind shape: partitions, synthesis and GPU-stage ms (scaled production timings). */
const KIND_SHAPES = [
  { partitions: 10, synthMs: 3800, gpuMs: 210 }, // porep-c2
  { partitions: 16, synthMs: 920, gpuMs: 60 }, // snap-update
  { partitions: 1, synthMs: 2000, gpuMs: 300 }, // window-post
  { partitions: 1, synthMs: 150, gpuMs: 40 }, // winning-post
];

export interface BoxShape {
  gpus: number;
  workersPerGpu: number;
  /** Simulated seconds of history before the cut. */
  seconds?: number;
  seed?: number;
}

export class SyntheticBox implements MetricsSource {
  readonly model = new StateModel();
  readonly source = 'run' as const;
  readonly backend = 'sim';
  clockNs = 0;
  eventsApplied = 0;

  constructor(readonly shape: BoxShape) {
    const topology: Topology = {
      gpus: Array.from({ length: shape.gpus }, (_, g) => ({
        ordinal: g,
        name: `NVIDIA RTX 6000 Ada Generation`,
        uuid: `GPU-${(0x1000 + g).toString(16)}a1b2c3-d4e5-f6a7-b8c9-d0e1f2a3b4c5`,
        pciBusId: `00000000:${(0x10 + g).toString(16).padStart(2, '0')}:00.0`,
      })),
      workers: Array.from({ length: shape.gpus * shape.workersPerGpu }, (_, i) => ({ id: i, gpu: Math.floor(i / shape.workersPerGpu) })),
      lockEvents: true,
    };
    this.model.setTopology(topology, 0);
    this.model.synthMax = Math.max(2, shape.gpus * 4);
    this.model.memoryBudgetBytes = 512 * 2 ** 30;
  }

  /** Generates the history and applies it in native-sized batches. Call after the exporter attached. */
  populate(): void {
    const records = generate(this.shape);
    const cut = records.cutNs;
    const live = records.events.filter((e) => e.tNs <= cut);
    const BATCH = 4096;
    let seq = 0;
    for (let i = 0; i < live.length; i += BATCH) {
      const chunk = live.slice(i, i + BATCH).map((r) => ({ ...r, seq: ++seq }));
      this.model.applyEvents(encodeEvents(chunk), chunk.length);
    }
    this.eventsApplied = live.length;
    this.clockNs = cut;
  }

  refresh(): void {}
  nowNs(): number {
    return this.clockNs;
  }
  /** Job ids shaped like cuzk's (kind = (job - 1) % 4, see generate()), for exemplars. */
  jobId(handle: number): string | undefined {
    const hex = (n: number, w: number) => (n * 2654435761 >>> 0).toString(16).padStart(8, '0').repeat(2).slice(0, w);
    switch ((handle - 1) % KIND_SHAPES.length) {
      case 0:
        return `porep-f01234-s${String(handle).padStart(6, '0')}-${hex(handle, 8)}`;
      case 1:
        return `ps-snap-${hex(handle, 8)}-${hex(handle + 1, 4)}-4${hex(handle + 2, 3)}-8${hex(handle + 3, 3)}-${hex(handle + 4, 12)}`;
      case 2:
        return `wpost-f01234-dl${handle % 48}-${hex(handle, 8)}`;
      default:
        return `winning-f01234-e${handle}`;
    }
  }
  statusBody(): Record<string, unknown> | null {
    return null;
  }
  snapshotAgeSeconds(): number {
    return 0;
  }
  ready() {
    return { ok: true, reason: '' };
  }
}

type Rec = Omit<EventRecord, 'seq'>;

function generate(shape: BoxShape): { events: Rec[]; cutNs: number } {
  const rand = rng(shape.seed ?? 7);
  const G = shape.gpus;
  const W = shape.workersPerGpu;
  const seconds = shape.seconds ?? 60;
  const cutNs = seconds * 1000 * MS;
  const ev: Rec[] = [];
  const jitter = (ms: number) => Math.round(ms * (0.8 + 0.4 * rand()) * MS);
  const workerFree = new Float64Array(G * W);
  const lockFree = new Float64Array(G);
  const lastRelease = new Float64Array(G).fill(NaN);
  // Round-robin GPU assignment keeps every GPU (and its idle-gap histogram) busy.
  let nextGpu = 0;
  // Arrivals sized so the GPUs are mostly busy: ~1 partition per GPU per 0.25 s.
  const meanPartitions = KIND_SHAPES.reduce((a, k) => a + k.partitions, 0) / KIND_SHAPES.length;
  const jobGapNs = (0.25 * 1000 * MS * meanPartitions) / G;
  let t = 0;
  let job = 0;
  let mem = 0;
  while (t < cutNs * 1.2) {
    job++;
    const kind = (job - 1) % KIND_SHAPES.length;
    const ks = KIND_SHAPES[kind];
    const queued = t;
    ev.push({ type: EV_JOB_QUEUED, tNs: queued, job, kind, partition: ks.partitions, value: 10, aux: 1 });
    ev.push({ type: EV_QUEUE_DEPTH, tNs: queued, kind, value: 1 });
    const started = queued + jitter(20);
    ev.push({ type: EV_JOB_STARTED, tNs: started, job, kind, value: started - queued });
    ev.push({ type: EV_QUEUE_DEPTH, tNs: started, kind, value: 0 });
    mem += 1 << 30;
    ev.push({ type: EV_MEMORY, tNs: started, value: mem });
    ev.push({ type: EV_SYNTH_ACTIVE, tNs: started, value: Math.min(ks.partitions, G * 4) });
    let jobEnd = started;
    for (let p = 0; p < ks.partitions; p++) {
      const s0 = started + p * MS;
      const synth = jitter(ks.synthMs);
      const s1 = s0 + synth;
      ev.push({ type: EV_PARTITION, tNs: s0, job, kind, partition: p, aux: PART_SYNTHESIZING });
      ev.push({ type: EV_PARTITION, tNs: s1, job, kind, partition: p, aux: PART_SYNTH_DONE, value: synth });
      const g = nextGpu;
      nextGpu = (nextGpu + 1) % G;
      let w = g * W;
      for (let k = 1; k < W; k++) if (workerFree[g * W + k] < workerFree[w]) w = g * W + k;
      const handOff = Math.max(s1, workerFree[w]) + 50_000;
      ev.push({ type: EV_WORKER, tNs: handOff, gpu: g, worker: w, job, kind, partition: p, aux: 1 });
      ev.push({ type: EV_PARTITION, tNs: handOff, job, kind, partition: p, aux: PART_GPU });
      const acquire = Math.max(handOff + jitter(5), lockFree[g]);
      const first = lastRelease[g] !== lastRelease[g];
      ev.push({ type: EV_GPU_LOCK, tNs: acquire, gpu: g, worker: w, aux: 1, value: first ? 0 : acquire - lastRelease[g], flags: first ? EVF_FIRST : 0 });
      const held = jitter(ks.gpuMs);
      const release = acquire + held;
      ev.push({ type: EV_GPU_LOCK, tNs: release, gpu: g, worker: w, aux: 0, value: held });
      lockFree[g] = release;
      lastRelease[g] = release;
      const back = release + jitter(3);
      ev.push({ type: EV_WORKER, tNs: back, gpu: g, worker: w, job, kind, partition: p, aux: 0, value: back - handOff });
      ev.push({ type: EV_PARTITION, tNs: back, job, kind, partition: p, aux: PART_DONE, value: back - handOff });
      workerFree[w] = back;
      jobEnd = Math.max(jobEnd, back);
    }
    ev.push({ type: EV_JOB_DONE, tNs: jobEnd, job, kind, aux: 0, value: jobEnd - queued });
    mem = Math.max(0, mem - (1 << 30));
    ev.push({ type: EV_MEMORY, tNs: jobEnd, value: mem });
    t += jobGapNs * (0.5 + rand());
  }
  // Stable sort by time: the records of one object stay in causal order.
  const order = ev.map((_, i) => i).sort((a, b) => ev[a].tNs - ev[b].tNs || a - b);
  return { events: order.map((i) => ev[i]), cutNs };
}
