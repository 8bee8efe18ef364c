/**
 * Plausibility and bounds for what an attached daemon reports (issue 12, cases 4 and 5).
 * A daemon we do not control — buggy or hostile — must not be able to poison a counter,
 * grow our memory, or churn series. The attach surfaces call these; each bad value is a
 * counted skip (cuzk_exporter_errors_total{reason="implausible"} or "bad_field"), never a
 * counter change.
 *
 *  - Durations: a partition cannot have taken longer than the daemon has been up
 *    (status-schema.ts applies maxDurationMs to synth_ms / gpu_ms / busy_secs /
 *    started_secs_ago; TIMELINE's gpu_ms is bounded by its own offset since engine start).
 *  - Cumulative per-kind counters (HighWater): a value below the highest seen, while the
 *    daemon did not restart (uptime and totals did not go back), is not a restart: the
 *    high-water mark stays, nothing is added, and it is counted. So a counter that
 *    oscillates is never re-added; a real restart resets the marks (the caller says so).
 *    Per-kind counters whose sum exceeds the daemon's own total are refused (statusSchema).
 *  - GPU identity (StickyGpuNames): a GPU's name/uuid/PCI id do not change while the daemon
 *    runs; a change is counted and ignored until a restart, so a daemon inventing names on
 *    every poll cannot mint a new cuzk_gpu_info series per poll.
 *  - Re-served data (capForServing): /status serves the daemon's snapshot, but fields we do
 *    not know are CAPPED, not re-served verbatim: each at most UNKNOWN_FIELD_BYTES of JSON,
 *    all of them together at most UNKNOWN_TOTAL_BYTES; cuzk's free-form sections
 *    (allocations, buffers) at most SECTION_BYTES each. What is over is dropped and
 *    counted. Nesting is bounded before any of it is parsed (MAX_JSON_DEPTH).
 */
import type { CuzkStatus } from './status-schema';
export { jsonContainerCountBytes, jsonNestingDepthBytes, jsonShapeBytes, MAX_JSON_DEPTH } from '../../util/strict-json';

/**
 * Objects and arrays a /status body may hold, counted before it is parsed: a real cuzk
 * snapshot has a few per job and partition (hundreds to a few thousand), far below this.
 */
export const MAX_SNAPSHOT_CONTAINERS = 200_000;

export const BOUNDS = {
  /** Rounding between a daemon's clocks: ms a duration may exceed its uptime by. */
  durationSlackMs: 1000,
  /** How far the sum of per-kind counters may run ahead of the total (non-atomic reads). */
  kindSumSlack: 8,
  unknownFieldBytes: 1024,
  unknownTotalBytes: 16 * 1024,
  sectionBytes: 64 * 1024,
} as const;

/**
 * A daemon's identity across two answers `elapsedS` seconds apart, from its uptime
 * (issue 20): a restart is believed only when the new process can have started after the
 * previous answer (new uptime <= elapsed + slack); an uptime that went back further, or
 * ran ahead faster than the wall clock, is a different daemon answering at the same
 * address (two daemons alternating, a hostile peer): its answer is refused, never taken
 * for a restart that would re-add every cumulative counter.
 */
export const RESTART_SLACK_S = 5;

export function uptimeVerdict(prev: number, cur: number, elapsedS: number, countersBack = false): 'same' | 'restart' | 'conflict' {
  if (prev < 0) return 'same';
  const allowed = elapsedS * 1.01 + RESTART_SLACK_S;
  // Uptime or cumulative counters back: a new process, if it can have started since.
  if (cur < prev || countersBack) return cur <= allowed ? 'restart' : 'conflict';
  return cur - prev > allowed ? 'conflict' : 'same';
}

/**
 * One daemon's identity over its answers (uptimeVerdict), with recovery: the same new
 * identity three answers in a row (each consistent with the one before) is the daemon now
 * — a restart we did not see coming (our host was suspended, a long outage) — taken as a
 * restart. Two daemons alternating at one address never get there.
 */
export class IdentityGuard {
  private uptime = -1;
  private hr = 0;
  private run = { n: 0, uptime: -1, hr: 0 };

  /** Judges an answer with this uptime (s) received at `hr` (ns); `countersBack`: its cumulative counters went down. */
  check(uptime: number, hr: number, countersBack = false): 'first' | 'same' | 'restart' | 'conflict' {
    if (this.uptime < 0) {
      this.accept(uptime, hr);
      return 'first';
    }
    let v = uptimeVerdict(this.uptime, uptime, Math.max(0, (hr - this.hr) / 1e9), countersBack);
    if (v === 'conflict') {
      const r = this.run;
      const follows = r.n > 0 && uptimeVerdict(r.uptime, uptime, Math.max(0, (hr - r.hr) / 1e9)) === 'same';
      this.run = { n: follows ? r.n + 1 : 1, uptime, hr };
      if (this.run.n < 3) return 'conflict';
      v = 'restart';
    }
    this.accept(uptime, hr);
    return v;
  }

  get lastUptime(): number {
    return this.uptime;
  }

  private accept(uptime: number, hr: number): void {
    this.run = { n: 0, uptime: -1, hr: 0 };
    this.uptime = uptime;
    this.hr = hr;
  }
}

/**
 * How many proofs a daemon can plausibly finish in `elapsedS` seconds: one per 10 ms per
 * GPU worker, far above any real box (a WinningPoSt takes about a second). A counter that
 * grows faster was not counted by a prover.
 */
export function maxProofsIn(elapsedS: number, workers: number): number {
  return (elapsedS + 10) * 100 * Math.max(1, workers);
}

/** The longest duration (ms) a snapshot with this uptime can report. */
export function maxDurationMs(uptimeSecs: number): number {
  return uptimeSecs * 1000 + BOUNDS.durationSlackMs;
}

/**
 * Cumulative counters by key with high-water marks. `update` returns what to add for each
 * key and the keys that went down (implausible without a restart). Keys that disappear
 * keep their mark: a key that comes back with its old value adds nothing.
 */
export class HighWater {
  private readonly marks = new Map<string, number>();
  constructor(private readonly maxKeys = 16_384) {}

  /** `primed`: false for the first look (baseline: nothing is added). */
  update(cur: Iterable<[string, number]>, primed: boolean): { add: Map<string, number>; wentDown: string[] } {
    const add = new Map<string, number>();
    const wentDown: string[] = [];
    for (const [k, n] of cur) {
      const mark = this.marks.get(k);
      if (mark === undefined) {
        if (this.marks.size >= this.maxKeys) continue;
        this.marks.set(k, n);
        if (primed && n > 0) add.set(k, n);
      } else if (n < mark) wentDown.push(k);
      else if (n > mark) {
        add.set(k, n - mark);
        this.marks.set(k, n);
      }
    }
    return { add, wentDown };
  }

  /** What update(cur, true) would add in all, without updating anything. */
  pending(cur: Iterable<[string, number]>): number {
    let sum = 0;
    let room = this.maxKeys - this.marks.size;
    for (const [k, n] of cur) {
      const mark = this.marks.get(k);
      if (mark === undefined) {
        if (room <= 0) continue;
        room--;
        sum += n;
      } else if (n > mark) sum += n - mark;
    }
    return sum;
  }

  has(k: string): boolean {
    return this.marks.has(k);
  }

  /** A restart of the daemon: its counters start again from zero. */
  reset(): void {
    for (const k of this.marks.keys()) this.marks.set(k, 0);
  }

  get size(): number {
    return this.marks.size;
  }
}

export interface GpuIdentity {
  name: string;
  uuid?: string;
  pciBusId?: string;
}

/** First identity seen per GPU ordinal wins until reset() (a daemon restart). */
export class StickyGpuNames {
  private readonly byOrdinal = new Map<number, GpuIdentity>();

  /** The identity to use, and whether the daemon reported a different one (counted by the caller). */
  resolve(ordinal: number, reported: GpuIdentity): { identity: GpuIdentity; changed: boolean } {
    const had = this.byOrdinal.get(ordinal);
    if (!had) {
      this.byOrdinal.set(ordinal, reported);
      return { identity: reported, changed: false };
    }
    const changed = had.name !== reported.name || (had.uuid ?? null) !== (reported.uuid ?? null) || (had.pciBusId ?? null) !== (reported.pciBusId ?? null);
    return { identity: had, changed };
  }

  /** Forget GPUs no longer reported (bounded by what the daemon reports now). */
  retain(ordinals: Iterable<number>): void {
    const keep = new Set(ordinals);
    for (const o of [...this.byOrdinal.keys()]) if (!keep.has(o)) this.byOrdinal.delete(o);
  }

  reset(): void {
    this.byOrdinal.clear();
  }
}

const KNOWN_TOP = new Set(['uptime_secs', 'memory', 'synthesis', 'pipelines', 'gpu_workers', 'allocations', 'counters', 'buffers', 'last_seq', 'backend', 'gpus']);
const SECTIONS = new Set(['allocations', 'buffers']);
const KNOWN_PIPELINE = new Set(['job_id', 'proof_kind', 'started_secs_ago', 'total_partitions', 'partitions_done', 'partitions', 'job_handle', 'priority', 'outcome', 'finished_secs_ago']);
const KNOWN_PARTITION = new Set(['index', 'state', 'synth_ms', 'gpu_ms', 'gpu_ordinal', 'worker_id', 'finalizing', 'finalizing_since_ns', 'abandoned']);
const KNOWN_WORKER = new Set(['worker_id', 'gpu_ordinal', 'state', 'current_job', 'current_partition', 'busy_secs', 'busy_total_secs', 'busy_since_ns', 'current_job_handle', 'current_kind']);
const KNOWN_GPU = new Set(['ordinal', 'name', 'uuid', 'pci_bus_id', 'lock_held', 'lock_since_ns', 'busy_total_secs']);

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** An own data property, whatever its name: `o["__proto__"] = v` would set the prototype. */
function setOwn(o: Obj, k: string, v: unknown): void {
  Object.defineProperty(o, k, { value: v, enumerable: true, writable: true, configurable: true });
}

/**
 * Whether every own key of `obj` is in `known` (then it is re-served as it is). `memo.keys`
 * holds the last all-known key sequence seen for this set: objects parsed from one daemon's
 * JSON list their keys in the same order, so a key is mostly one string comparison, not a
 * set lookup (~800 partitions a poll). Exact either way: a key that differs from the memo
 * is looked up, and only all-known sequences are remembered.
 */
function allKnown(obj: Obj, known: Set<string>, memo: { keys: string[] }): boolean {
  const seq = memo.keys;
  let i = 0;
  let same = true;
  for (const k in obj) {
    if (!Object.prototype.hasOwnProperty.call(obj, k)) continue;
    if (same && i < seq.length && seq[i] === k) {
      i++;
      continue;
    }
    same = false;
    if (!known.has(k)) return false;
    i++;
  }
  if (!same || i !== seq.length) {
    const keys: string[] = [];
    for (const k in obj) if (Object.prototype.hasOwnProperty.call(obj, k)) keys.push(k);
    memo.keys = keys;
  }
  return true;
}
const PARTITION_KEYS = { keys: [] as string[] };
const WORKER_KEYS = { keys: [] as string[] };

/** JSON size of a value, or Infinity when it cannot be serialised. */
function jsonBytes(v: unknown): number {
  try {
    const s = JSON.stringify(v);
    return s === undefined ? 0 : s.length;
  } catch {
    return Infinity;
  }
}

/**
 * The snapshot as /status re-serves it: known fields as validated, unknown fields capped
 * (see the file comment). `dropped` names what was left out (for the bad_field count).
 * Copy on write: an object (or array) with nothing to drop is re-served as it is, so a
 * snapshot of known fields only — every poll of a healthy cuzk — costs a key scan, not a
 * copy of ~800 partitions (this runs on every poll; issue 10's per-poll CPU budget).
 */
export function capForServing(s: CuzkStatus): { body: Obj; dropped: string[] } {
  const dropped: string[] = [];
  let unknownBudget = BOUNDS.unknownTotalBytes;
  type Recurse = Record<string, (v: unknown, w: string) => unknown>;
  // `where` (the path in messages) is `base` or `base[idx].`, built only when needed.
  const filter = (obj: Obj, known: Set<string>, base: string, idx: number, recurse?: Recurse): Obj => {
    // One pass; the copy is made at the first key whose value differs (dropped, or changed
    // by a recursion), from the keys before it, which were all kept as they are.
    let out: Obj | null = null;
    for (const k in obj) {
      if (!Object.prototype.hasOwnProperty.call(obj, k)) continue; // own fields only, as parsed
      const v = obj[k];
      let nv = v;
      let drop = false;
      const r = recurse !== undefined && Object.prototype.hasOwnProperty.call(recurse, k) ? recurse[k] : undefined;
      if (r !== undefined) nv = r(v, `${idx < 0 ? base : `${base}[${idx}].`}${k}`);
      else if (known.has(k)) {
        if (known === KNOWN_TOP && SECTIONS.has(k)) {
          const n = jsonBytes(v);
          if (n > BOUNDS.sectionBytes) {
            drop = true;
            dropped.push(`${idx < 0 ? base : `${base}[${idx}].`}${k} (${n === Infinity ? 'unserialisable' : `${n} bytes`}, over ${BOUNDS.sectionBytes})`);
          }
        }
      } else {
        const n = jsonBytes(v);
        if (n > BOUNDS.unknownFieldBytes || n > unknownBudget) {
          drop = true;
          dropped.push(`unknown field ${idx < 0 ? base : `${base}[${idx}].`}${k.length > 64 ? `${k.slice(0, 64)}…` : k} (${n === Infinity ? 'unserialisable' : `${n} bytes`})`);
        } else unknownBudget -= n;
      }
      if (out === null && (drop || nv !== v)) {
        out = {};
        for (const k2 in obj) {
          if (k2 === k) break;
          if (Object.prototype.hasOwnProperty.call(obj, k2)) setOwn(out, k2, obj[k2]);
        }
      }
      if (out !== null && !drop) setOwn(out, k, nv);
    }
    return out ?? obj;
  };
  /** `f` over an array's elements, copying the array only if an element changed. */
  const each = (v: unknown, w: string, f: (x: Obj, base: string, idx: number) => Obj): unknown => {
    if (!Array.isArray(v)) return v;
    let out: unknown[] | null = null;
    for (let i = 0; i < v.length; i++) {
      const x: unknown = v[i];
      const nx = isObj(x) ? f(x, w, i) : x;
      if (nx !== x && out === null) out = v.slice(0, i);
      if (out !== null) out.push(nx);
    }
    return out ?? v;
  };
  const filterPartition = (p: Obj, base: string, idx: number) => (allKnown(p, KNOWN_PARTITION, PARTITION_KEYS) ? p : filter(p, KNOWN_PARTITION, base, idx));
  const partitions = (v: unknown, w: string) => each(v, w, filterPartition);
  const recursePipeline: Recurse = { partitions };
  const body = filter(s as unknown as Obj, KNOWN_TOP, '', -1, {
    pipelines: (v, w) => each(v, w, (p, base, idx) => filter(p, KNOWN_PIPELINE, base, idx, recursePipeline)),
    gpu_workers: (v, w) => each(v, w, (x, base, idx) => (allKnown(x, KNOWN_WORKER, WORKER_KEYS) ? x : filter(x, KNOWN_WORKER, base, idx))),
    gpus: (v, w) => each(v, w, (x, base, idx) => filter(x, KNOWN_GPU, base, idx)),
  });
  return { body, dropped };
}
