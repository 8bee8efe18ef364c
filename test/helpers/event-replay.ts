/**
 * An independent oracle for the exporter's totals: every event the NativeEngine drains is
 * also decoded here and replayed by code that shares nothing with StateModel, taking
 * durations from the events' timestamps (not from their `value` fields, which are checked
 * against those timestamps separately). Tests compare the exported counters (the native
 * engine's atomic counter read, or the model) with these totals, so a counter is never
 * compared with itself.
 *
 * Valid only while no event is lost: `gaps` counts sequence gaps, and a test that relies
 * on the replay must expect 0 (resync.test.ts, which provokes gaps, uses per-proof results
 * and the engine's own snapshot instead).
 */
import type { NativeEngine } from '../../src/engine/sources/native/native-engine';
import {
  EVENT_SIZE,
  EVF_ABANDONED,
  EV_GPU_LOCK,
  EV_JOB_DONE,
  EV_JOB_QUEUED,
  EV_OFF_AUX,
  EV_OFF_FLAGS,
  EV_OFF_GPU,
  EV_OFF_JOB,
  EV_OFF_KIND,
  EV_OFF_PARTITION,
  EV_OFF_SEQ,
  EV_OFF_TYPE,
  EV_OFF_T_NS,
  EV_OFF_VALUE,
  EV_OFF_WORKER,
  EV_PARTITION,
  EV_WORKER,
  readU64,
} from '../../src/engine/model/event-layout';

// Partition states (native enum; FINALIZING is ABI v2's split-proving tail).
const SYNTHESIZING = 1;
const SYNTH_DONE = 2;
const GPU = 3;
const DONE = 4;
const FAILED = 5;
const FINALIZING = 6;
const OUTCOME_KEYS = ['completed', 'failed', 'cancelled'] as const;

interface PartTrack {
  state: number;
  synthStart: number;
  gpuStart: number;
  finStart: number;
}

export interface KindTotals {
  gpuNs: number;
  synthNs: number;
  /** Time in FINALIZING of partitions that left it (split proving's tail). */
  finalizeNs: number;
  gpuStages: number;
  syntheses: number;
  /** Each GPU stage's and each completed synthesis's duration (ns), in order. */
  gpuStageNs: number[];
  synthesisNs: number[];
  partsCompleted: number;
  /** Own failures only (FAILED without EVF_ABANDONED). */
  partsFailed: number;
  partsAbandoned: number;
  proofs: Record<(typeof OUTCOME_KEYS)[number], number>;
}

export class EventReplay {
  events = 0;
  gaps = 0;
  lastSeq = 0;
  lastT = 0;
  readonly busyNs: number[];
  readonly busySince: (number | null)[];
  readonly stints: number[];
  readonly lockHeldNs: number[];
  readonly lockSince: (number | null)[];
  readonly starvedNs: number[];
  readonly starvedSince: (number | null)[];
  readonly kinds: KindTotals[] = [];
  /** Event `value` fields that disagree with the durations the timestamps give. */
  readonly valueMismatches: string[] = [];
  private readonly parts = new Map<string, PartTrack>();
  private readonly unfinished = new Set<number>();
  private synthDone = 0;

  constructor(workers: number, gpus: number, kinds = 4) {
    this.busyNs = new Array<number>(workers).fill(0);
    this.busySince = new Array<number | null>(workers).fill(null);
    this.stints = new Array<number>(workers).fill(0);
    this.lockHeldNs = new Array<number>(gpus).fill(0);
    this.lockSince = new Array<number | null>(gpus).fill(null);
    this.starvedNs = new Array<number>(gpus).fill(0);
    this.starvedSince = new Array<number | null>(gpus).fill(null);
    for (let k = 0; k < kinds; k++) {
      this.kinds.push({ gpuNs: 0, synthNs: 0, finalizeNs: 0, gpuStages: 0, syntheses: 0, gpuStageNs: [], synthesisNs: [], partsCompleted: 0, partsFailed: 0, partsAbandoned: 0, proofs: { completed: 0, failed: 0, cancelled: 0 } });
    }
  }

  /** Taps `engine`: every drained batch is replayed here too (NativeEngine.onEvents). */
  static tap(engine: NativeEngine): EventReplay {
    const r = new EventReplay(engine.model.topology.workers.length, engine.model.topology.gpus.length);
    r.lastSeq = engine.model.lastSeq;
    const prev = engine.onEvents;
    engine.onEvents = (view: DataView, n: number) => {
      prev?.(view, n);
      r.replay(view, n, 0);
    };
    return r;
  }

  /** Busy ns of a worker including a running stint up to `nowNs`. */
  busyAt(w: number, nowNs: number): number {
    const s = this.busySince[w];
    return this.busyNs[w] + (s === null ? 0 : nowNs - s);
  }

  lockHeldAt(g: number, nowNs: number): number {
    const s = this.lockSince[g];
    return this.lockHeldNs[g] + (s === null ? 0 : nowNs - s);
  }

  starvedAt(g: number, nowNs: number): number {
    const s = this.starvedSince[g];
    return this.starvedNs[g] + (s === null ? 0 : nowNs - s);
  }

  private replay(v: DataView, count: number, offset: number): void {
    for (let i = 0; i < count; i++) {
      const off = offset + i * EVENT_SIZE;
      const seq = readU64(v, off + EV_OFF_SEQ);
      if (seq <= this.lastSeq) continue; // the model skips these too
      if (seq !== this.lastSeq + 1) this.gaps++;
      this.lastSeq = seq;
      this.events++;
      this.one(v, off);
    }
  }

  private one(v: DataView, off: number): void {
    const type = v.getUint16(off + EV_OFF_TYPE, true);
    const t = readU64(v, off + EV_OFF_T_NS);
    const job = readU64(v, off + EV_OFF_JOB);
    const value = readU64(v, off + EV_OFF_VALUE);
    const aux = v.getUint32(off + EV_OFF_AUX, true);
    const flags = v.getUint16(off + EV_OFF_FLAGS, true);
    const kind = v.getUint8(off + EV_OFF_KIND);
    const seq = readU64(v, off + EV_OFF_SEQ);
    this.lastT = t;
    const check = (what: string, want: number) => {
      if (value !== want && this.valueMismatches.length < 20) this.valueMismatches.push(`seq ${seq} ${what}: value ${value}, timestamps give ${want}`);
    };
    switch (type) {
      case EV_WORKER: {
        const w = v.getUint16(off + EV_OFF_WORKER, true);
        if (w >= this.busyNs.length) return;
        const since = this.busySince[w];
        if (aux !== 0) {
          // ABI v2: a hand-off to a worker that is already busy continues its stint.
          if (since === null) this.busySince[w] = t;
        } else if (since !== null) {
          this.busyNs[w] += t - since;
          this.stints[w]++;
          this.busySince[w] = null;
          check(`worker ${w} stint`, t - since);
        }
        return;
      }
      case EV_GPU_LOCK: {
        const g = v.getUint8(off + EV_OFF_GPU);
        if (g >= this.lockHeldNs.length) return;
        const since = this.lockSince[g];
        if (aux !== 0) this.lockSince[g] = t;
        else if (since !== null) {
          this.lockHeldNs[g] += t - since;
          this.lockSince[g] = null;
          check(`gpu ${g} lock hold`, t - since);
        }
        break; // starvation below
      }
      case EV_JOB_QUEUED:
        this.unfinished.add(job);
        break;
      case EV_JOB_DONE: {
        this.unfinished.delete(job);
        const o = OUTCOME_KEYS[aux];
        if (o && kind < this.kinds.length) this.kinds[kind].proofs[o]++;
        break;
      }
      case EV_PARTITION: {
        const key = `${job}/${v.getUint32(off + EV_OFF_PARTITION, true)}`;
        let p = this.parts.get(key);
        if (!p) this.parts.set(key, (p = { state: 0, synthStart: 0, gpuStart: 0, finStart: 0 }));
        const from = p.state;
        p.state = aux;
        const k = kind < this.kinds.length ? this.kinds[kind] : null;
        if (from === SYNTH_DONE) this.synthDone--;
        if (aux === SYNTH_DONE) this.synthDone++;
        if (aux === SYNTHESIZING) p.synthStart = t;
        else if (aux === SYNTH_DONE) {
          if (k) (k.synthNs += t - p.synthStart), k.syntheses++, k.synthesisNs.push(t - p.synthStart);
          check(`partition ${key} synthesis`, t - p.synthStart);
        } else if (aux === GPU && from !== GPU) p.gpuStart = t;
        else if (aux === FINALIZING) {
          p.finStart = t;
          // Kernels done: the value is the time from the hand-off to here.
          check(`partition ${key} kernels`, t - p.gpuStart);
        }
        if (from === FINALIZING && aux !== FINALIZING && k) k.finalizeNs += t - p.finStart;
        if ((from === GPU || from === FINALIZING) && (aux === DONE || aux === FAILED)) {
          if (k) (k.gpuNs += t - p.gpuStart), k.gpuStages++, k.gpuStageNs.push(t - p.gpuStart);
          check(`partition ${key} GPU stage`, t - p.gpuStart);
        }
        if (k && aux === DONE) k.partsCompleted++;
        if (k && aux === FAILED) {
          if (flags & EVF_ABANDONED) k.partsAbandoned++;
          else k.partsFailed++;
        }
        if (aux === DONE || aux === FAILED) this.parts.delete(key);
        break;
      }
      default:
        return;
    }
    // Starvation as DESIGN §5 defines it: lock free, no synthesized partition waiting,
    // proofs outstanding. Edges at the time of the event that caused them.
    const wants = this.synthDone === 0 && this.unfinished.size > 0;
    for (let g = 0; g < this.starvedNs.length; g++) {
      const starved = wants && this.lockSince[g] === null;
      const since = this.starvedSince[g];
      if (starved && since === null) this.starvedSince[g] = t;
      else if (!starved && since !== null) {
        this.starvedNs[g] += t - since;
        this.starvedSince[g] = null;
      }
    }
  }
}
