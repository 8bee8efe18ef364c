/**
 * The 48-byte cuzk_event record (native/include/cuzk_engine.h). The native engine writes
 * these into our buffer in batches; the attach source encodes the same records from
 * snapshot differences, so one decoder (StateModel.applyEvents) serves both sources.
 * Decoded with DataView: 64-bit fields are read as two 32-bit halves (exact to 2^53),
 * because BigInt reads cost ~100 ns each on the hot path (DESIGN §5).
 */
export const EVENT_SIZE = 48;

export const EV_OFF_SEQ = 0;
export const EV_OFF_T_NS = 8;
export const EV_OFF_JOB = 16;
export const EV_OFF_VALUE = 24;
export const EV_OFF_PARTITION = 32;
export const EV_OFF_TYPE = 36;
export const EV_OFF_KIND = 38;
export const EV_OFF_GPU = 39;
export const EV_OFF_WORKER = 40;
export const EV_OFF_FLAGS = 42;
export const EV_OFF_AUX = 44;

export const EV_JOB_QUEUED = 1;
export const EV_JOB_STARTED = 2;
export const EV_PARTITION = 3;
export const EV_WORKER = 4;
export const EV_GPU_LOCK = 5;
export const EV_JOB_DONE = 6;
export const EV_JOB_EVICTED = 7;
export const EV_QUEUE_DEPTH = 8;
export const EV_SYNTH_ACTIVE = 9;
export const EV_MEMORY = 10;

export const EVF_FIRST = 0x1;
/**
 * Last event of an event group: everything the engine emitted in one critical section of
 * its state lock (one whole transition). A native drain returns whole groups only, so the
 * model never applies half a transition.
 */
export const EVF_GROUP_END = 0x4;
/**
 * Partition moved to FAILED because of its job (cancelled, a sibling failed, engine
 * closing), not by its own error: not counted as a partition failure.
 */
export const EVF_ABANDONED = 0x2;
/**
 * Set only on records we synthesise while re-syncing state from a snapshot: they move state
 * (who is busy, which partition is where) but add nothing to counters or histograms.
 */
export const EVF_RESYNC = 0x8000;
export const NO_KIND = 0xff;
export const NO_GPU = 0xff;
export const NO_WORKER = 0xffff;

const TWO32 = 4294967296;

/** Reads a little-endian u64 as a Number (exact below 2^53). */
export function readU64(view: DataView, off: number): number {
  return view.getUint32(off + 4, true) * TWO32 + view.getUint32(off, true);
}

/** Writes a non-negative integer Number below 2^53 as a little-endian u64. */
export function writeU64(view: DataView, off: number, value: number): void {
  const v = value < 0 ? 0 : Math.round(value);
  view.setUint32(off, v % TWO32, true);
  view.setUint32(off + 4, Math.floor(v / TWO32), true);
}

/** A decoded event, for encoders (attach source, tests); the hot path never builds these. */
export interface EventRecord {
  seq: number;
  tNs: number;
  type: number;
  job?: number;
  value?: number;
  partition?: number;
  kind?: number;
  gpu?: number;
  worker?: number;
  flags?: number;
  aux?: number;
}

/** Encodes records into a fresh buffer in the native layout. */
export function encodeEvents(records: readonly EventRecord[]): DataView {
  const view = new DataView(new ArrayBuffer(Math.max(1, records.length) * EVENT_SIZE));
  records.forEach((r, i) => encodeEvent(view, i * EVENT_SIZE, r));
  return view;
}

export function encodeEvent(view: DataView, off: number, r: EventRecord): void {
  writeU64(view, off + EV_OFF_SEQ, r.seq);
  writeU64(view, off + EV_OFF_T_NS, r.tNs);
  writeU64(view, off + EV_OFF_JOB, r.job ?? 0);
  writeU64(view, off + EV_OFF_VALUE, r.value ?? 0);
  view.setUint32(off + EV_OFF_PARTITION, r.partition ?? 0, true);
  view.setUint16(off + EV_OFF_TYPE, r.type, true);
  view.setUint8(off + EV_OFF_KIND, r.kind ?? NO_KIND);
  view.setUint8(off + EV_OFF_GPU, r.gpu ?? NO_GPU);
  view.setUint16(off + EV_OFF_WORKER, r.worker ?? NO_WORKER, true);
  view.setUint16(off + EV_OFF_FLAGS, r.flags ?? 0, true);
  view.setUint32(off + EV_OFF_AUX, r.aux ?? 0, true);
}
