/**
 * cuzk's TIMELINE lines (DESIGN §7c), parsed defensively and fast (bench: >= 1 M lines/s):
 *
 *   TIMELINE,<offset_ms>,<event>,<job_id>,<detail>
 *
 * written by cuzk's engine with eprintln! for every job on every path; in a journal the
 * line may carry a prefix, so a line is matched from its `TIMELINE,`. Details:
 *   SYNTH_START  partition=N | kind=<proof kind>
 *   SYNTH_END    partition=N,synth_ms=M | synth_ms=M
 *   GPU_QUEUE    partition=N | monolithic
 *   GPU_PICKUP   worker=W[,partition=N]
 *   GPU_START    worker=W[,partition=N]
 *   GPU_END      worker=W[,partition=N],gpu_ms=M
 * Unknown detail keys are skipped (a newer cuzk may add some); a missing required key, a
 * number that is not plain decimal digits, a job id that is empty, too long or holds control
 * characters make the line malformed. Nothing here throws or allocates more than the job
 * id (none when a JobIdCache has it) and kind strings of a good line.
 */

export const TL_SYNTH_START = 0;
export const TL_SYNTH_END = 1;
export const TL_GPU_QUEUE = 2;
export const TL_GPU_PICKUP = 3;
export const TL_GPU_START = 4;
export const TL_GPU_END = 5;
/** Known to cuzk's comment (CHAN_SEND) but carrying nothing the exporter uses. */
export const TL_IGNORED = 6;

export const TIMELINE_MARK = 'TIMELINE,';

/** Bounds on untrusted values: far above any real box. */
export const TL_LIMITS = {
  /** Highest worker id accepted (cuzk numbers workers 0..gpus*workers_per_gpu-1). */
  maxWorkerId: 4095,
  /** Highest partition index accepted (PoRep has 10, SnapDeals 16). */
  maxPartition: 4095,
  jobIdLength: 1024,
  kindLength: 64,
  /** Digits in an offset or a duration (15 digits stay exact in a double). */
  maxDigits: 15,
} as const;

export interface TimelineRecord {
  offsetMs: number;
  event: number;
  jobId: string;
  /** -1 when the line has none. */
  worker: number;
  /** -1 when the line has none (a whole job). */
  partition: number;
  /** synth_ms (SYNTH_END) or gpu_ms (GPU_END); -1 otherwise. */
  ms: number;
  /** kind= of a whole-job SYNTH_START, else null. */
  kind: string | null;
  /** GPU_QUEUE monolithic. */
  monolithic: boolean;
}

export function newRecord(): TimelineRecord {
  return { offsetMs: 0, event: 0, jobId: '', worker: -1, partition: -1, ms: -1, kind: null, monolithic: false };
}

export type TimelineParseError = 'malformed' | 'unknown_event' | 'worker_out_of_range';

const COMMA = 44;
const EQ = 61;
const D0 = 48;
const D9 = 57;

/** Decimal digits in s[a, b): the value, or -1 (empty, not digits, too long). */
function digits(s: string, a: number, b: number): number {
  const n = b - a;
  if (n <= 0 || n > TL_LIMITS.maxDigits) return -1;
  let v = 0;
  for (let i = a; i < b; i++) {
    const c = s.charCodeAt(i);
    if (c < D0 || c > D9) return -1;
    v = v * 10 + (c - D0);
  }
  return v;
}

function eventCode(s: string, a: number, b: number): number {
  // Switch on length first: no substring allocated for the common events.
  switch (b - a) {
    case 7:
      return s.startsWith('GPU_END', a) ? TL_GPU_END : -1;
    case 9:
      if (s.startsWith('SYNTH_END', a)) return TL_SYNTH_END;
      if (s.startsWith('GPU_QUEUE', a)) return TL_GPU_QUEUE;
      if (s.startsWith('GPU_START', a)) return TL_GPU_START;
      if (s.startsWith('CHAN_SEND', a)) return TL_IGNORED;
      return -1;
    case 10:
      return s.startsWith('GPU_PICKUP', a) ? TL_GPU_PICKUP : -1;
    case 11:
      return s.startsWith('SYNTH_START', a) ? TL_SYNTH_START : -1;
    default:
      return -1;
  }
}

/**
 * A job id: printable, no control characters (a binary line is not a job). Returns a
 * non-negative hash of s[a, b) (for JobIdCache), or -1 when it is not a valid id.
 */
function idHash(s: string, a: number, b: number, max: number): number {
  if (b <= a || b - a > max) return -1;
  let h = 0;
  for (let i = a; i < b; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x20 || c === 0x7f || c === 0xfffd) return -1;
    h = (Math.imul(h, 31) + c) | 0;
  }
  return h & 0x7fffffff;
}

const ID_SLOTS = 256;

/**
 * The job ids of recent lines, so that the ~100 lines of one job yield one string: without
 * it every line slices a new id out of the read piece and the jobs map hashes it again
 * (with the ESC scan, most of the surface's time past the parse in the bench), and an id
 * kept in that map as a slice keeps its whole read piece (up to 64 KiB) alive. A slot
 * holds the last id with its hash; a collision only costs a fresh copy.
 */
export class JobIdCache {
  private readonly ids: string[] = new Array<string>(ID_SLOTS).fill('');

  /** s[a, b) as a string, the cached one when it is the same text. */
  get(s: string, a: number, b: number, hash: number): string {
    const slot = hash & (ID_SLOTS - 1);
    const c = this.ids[slot];
    if (c.length === b - a && s.startsWith(c, a)) return c;
    // A copy, not a slice: a slice would keep the read piece alive (utf16le round-trips
    // every code unit, lone surrogates included).
    const id = Buffer.from(s.slice(a, b), 'utf16le').toString('utf16le');
    this.ids[slot] = id;
    return id;
  }
}

/**
 * Parses the TIMELINE record that starts at s[start] (the `T` of `TIMELINE,`) and ends
 * before s[end] (no line terminator). Fills `out`; returns null or why the line is unusable.
 */
export function parseTimeline(s: string, start: number, end: number, out: TimelineRecord, ids?: JobIdCache): TimelineParseError | null {
  if (end > start && s.charCodeAt(end - 1) === 13) end--; // CRLF
  let p = start + TIMELINE_MARK.length;
  let q = s.indexOf(',', p);
  if (q < 0 || q >= end) return 'malformed';
  const offset = digits(s, p, q);
  if (offset < 0) return 'malformed';
  p = q + 1;
  q = s.indexOf(',', p);
  if (q < 0 || q >= end) return 'malformed';
  const ev = eventCode(s, p, q);
  if (ev < 0) {
    // An event name we do not know (a newer cuzk) is not garbage: it is well formed if it
    // is an upper-case word.
    for (let i = p; i < q; i++) {
      const c = s.charCodeAt(i);
      if (!((c >= 65 && c <= 90) || c === 95 || (c >= D0 && c <= D9))) return 'malformed';
    }
    return q > p && q - p <= 64 ? 'unknown_event' : 'malformed';
  }
  p = q + 1;
  q = s.indexOf(',', p);
  if (q < 0 || q > end) q = end; // a detail-less line: the job id runs to the end
  const hash = idHash(s, p, q, TL_LIMITS.jobIdLength);
  if (hash < 0) return 'malformed';
  const jobA = p;
  const jobB = q;
  out.offsetMs = offset;
  out.event = ev;
  out.worker = -1;
  out.partition = -1;
  out.ms = -1;
  out.kind = null;
  out.monolithic = false;
  let sawMs = false;
  // Detail: key=value pairs (or the bare word monolithic), comma-separated.
  p = q + 1;
  while (p < end) {
    q = s.indexOf(',', p);
    if (q < 0 || q > end) q = end;
    let eq = -1;
    for (let i = p; i < q; i++) {
      if (s.charCodeAt(i) === EQ) {
        eq = i;
        break;
      }
    }
    if (eq < 0) {
      if (q - p === 10 && s.startsWith('monolithic', p)) out.monolithic = true;
      else if (q > p) return 'malformed';
    } else {
      const klen = eq - p;
      const c0 = s.charCodeAt(p);
      if (klen === 6 && c0 === 119 && s.startsWith('worker', p)) {
        const w = digits(s, eq + 1, q);
        if (w < 0) return 'malformed';
        if (w > TL_LIMITS.maxWorkerId) return 'worker_out_of_range';
        out.worker = w;
      } else if (klen === 9 && c0 === 112 && s.startsWith('partition', p)) {
        const n = digits(s, eq + 1, q);
        if (n < 0 || n > TL_LIMITS.maxPartition) return 'malformed';
        out.partition = n;
      } else if (klen === 6 && s.startsWith('gpu_ms', p)) {
        const n = digits(s, eq + 1, q);
        if (n < 0) return 'malformed';
        out.ms = n;
        sawMs = ev === TL_GPU_END;
      } else if (klen === 8 && s.startsWith('synth_ms', p)) {
        const n = digits(s, eq + 1, q);
        if (n < 0) return 'malformed';
        out.ms = n;
        sawMs = ev === TL_SYNTH_END;
      } else if (klen === 4 && s.startsWith('kind', p)) {
        if (idHash(s, eq + 1, q, TL_LIMITS.kindLength) < 0) return 'malformed';
        out.kind = s.slice(eq + 1, q);
      } else if (klen === 0) return 'malformed';
      // other keys: skipped
    }
    p = q + 1;
  }
  // Required keys per event.
  switch (ev) {
    case TL_SYNTH_START:
      if (out.partition < 0 && out.kind === null) return 'malformed';
      break;
    case TL_SYNTH_END:
      if (!sawMs) return 'malformed';
      break;
    case TL_GPU_QUEUE:
      if (out.partition < 0 && !out.monolithic) return 'malformed';
      break;
    case TL_GPU_PICKUP:
    case TL_GPU_START:
      if (out.worker < 0) return 'malformed';
      break;
    case TL_GPU_END:
      if (out.worker < 0 || !sawMs) return 'malformed';
      break;
    default:
      break;
  }
  out.jobId = ids ? ids.get(s, jobA, jobB, hash) : s.slice(jobA, jobB);
  return null;
}
