/**
 * cuzk's gRPC answers as untrusted bytes and text (DESIGN §7b; the surface that polls them is
 * grpc-surface.ts): the proto we carry, GetStatus' answer bounded on the wire before it is
 * decoded, and GetMetrics' text and GetStatus' message parsed and validated. Pure functions:
 * nothing here holds state or talks to a daemon.
 */
import * as path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { kindIndex } from '../../model/kinds';
import { findPackageRoot } from '../../../util/package-root';

/** Bounds on untrusted answers. */
export const GRPC_LIMITS = { workers: 4096, stringLength: 1024, metricLines: 20_000, kinds: 64 } as const;

let protoCache: grpc.GrpcObject | null = null;
/** cuzk.v1 as grpc-js sees it, from the package's own proto file (works from an installed tarball). */
export function loadCuzkProto(): grpc.GrpcObject {
  if (protoCache) return protoCache;
  const file = path.join(findPackageRoot(), 'proto', 'cuzk', 'v1', 'proving.proto');
  const def = protoLoader.loadSync(file, { keepCase: true, longs: String, enums: String, defaults: true, oneofs: true });
  protoCache = grpc.loadPackageDefinition(def);
  return protoCache;
}

/**
 * How many times top-level field `field` occurs in a protobuf message, walking the bytes
 * without decoding anything; stops past `limit`. Every occurrence counts, whatever its wire
 * type: protobufjs decodes a message field as length-delimited whatever the tag's wire type
 * says (`08 00` is an empty GPUStatus to it), so counting only wire type 2 would let
 * `08 00` x 7.8 M past the bound. Infinity if the bytes are not a well-formed message (the
 * decoder will say why).
 */
export function countRepeatedField(b: Uint8Array, field: number, limit: number): number {
  let i = 0;
  let n = 0;
  const len = b.length;
  const varint = (): number => {
    let v = 0;
    let mul = 1;
    for (let k = 0; k < 10; k++) {
      if (i >= len) return -1;
      const c = b[i++];
      v += (c & 0x7f) * mul;
      if (c < 0x80) return v;
      mul *= 128;
    }
    return -1;
  };
  while (i < len) {
    const tag = varint();
    if (tag < 8) return Infinity; // no tag (-1), or field number 0, which protobuf forbids
    const wire = tag % 8;
    const no = Math.floor(tag / 8);
    if (no === field && ++n > limit) return n;
    if (wire === 0) {
      if (varint() < 0) return Infinity;
    } else if (wire === 1) i += 8;
    else if (wire === 5) i += 4;
    else if (wire === 2) {
      const l = varint();
      if (l < 0 || i + l > len) return Infinity;
      i += l;
    } else return Infinity;
  }
  return i === len ? n : Infinity; // a fixed64/fixed32 cut short runs past the end
}

/**
 * The service with GetStatus' answer bounded before it is decoded (issue 20): its `gpus`
 * entries are counted on the wire first, so 7.8 M empty GPUStatus messages (under the size
 * limit) are refused without allocating 7.8 M objects.
 */
export function guardedService(maxGpus: number): grpc.ServiceDefinition {
  const base = provingEngineService();
  const gs = base.GetStatus;
  return {
    ...base,
    GetStatus: {
      ...gs,
      responseDeserialize: (buf: Buffer) => {
        const n = countRepeatedField(buf, 1, maxGpus);
        if (n > maxGpus) throw new Error(`parse refused: GetStatusResponse ${n === Infinity ? 'is not a protobuf message' : `has more than ${maxGpus} gpus entries`}`);
        return gs.responseDeserialize(buf);
      },
    },
  };
}

export function provingEngineService(): grpc.ServiceDefinition {
  const v1 = (loadCuzkProto().cuzk as grpc.GrpcObject).v1 as grpc.GrpcObject;
  return (v1.ProvingEngine as grpc.ServiceClientConstructor).service;
}

/** What GetMetrics' text says, parsed defensively. */
export interface CuzkMetricsText {
  uptimeSeconds: number | null;
  totalCompleted: number | null;
  totalFailed: number | null;
  queueDepth: number | null;
  runningJobs: number | null;
  gpuWorkers: number | null;
  /** Per kind name as cuzk spells it here (porep_c2...). */
  completed: Map<string, number>;
  failed: Map<string, number>;
  /** Samples of known metrics that were unusable (bad value, too many kinds). */
  bad: number;
}

const isCount = (v: number) => Number.isFinite(v) && v >= 0 && v <= Number.MAX_SAFE_INTEGER;

/** Parses cuzk's GetMetrics text. Unknown metrics are skipped; never throws. */
export function parseCuzkMetrics(text: string): CuzkMetricsText {
  const out: CuzkMetricsText = {
    uptimeSeconds: null,
    totalCompleted: null,
    totalFailed: null,
    queueDepth: null,
    runningJobs: null,
    gpuWorkers: null,
    completed: new Map(),
    failed: new Map(),
    bad: 0,
  };
  let p = 0;
  let lines = 0;
  const n = text.length;
  while (p < n && lines < GRPC_LIMITS.metricLines) {
    let e = text.indexOf('\n', p);
    if (e < 0) e = n;
    lines++;
    const c = text.charCodeAt(p);
    if (c !== 35 /* # */ && e > p) parseSample(text, p, e, out);
    p = e + 1;
  }
  return out;
}

/** Whitespace (not the line's end), then a token: sticky, run from the position after the labels. */
const VALUE_TOKEN = /[^\S\n]*(\S*)/y;
const SCALARS = new Map<string, Exclude<keyof CuzkMetricsText, 'completed' | 'failed' | 'bad'>>([
  ['cuzk_proofs_completed_total', 'totalCompleted'],
  ['cuzk_proofs_failed_total', 'totalFailed'],
  ['cuzk_uptime_seconds', 'uptimeSeconds'],
  ['cuzk_queue_depth', 'queueDepth'],
  ['cuzk_running_jobs', 'runningJobs'],
  ['cuzk_gpu_workers', 'gpuWorkers'],
]);

function parseSample(s: string, a: number, b: number, out: CuzkMetricsText): void {
  let i = a;
  while (i < b && s.charCodeAt(i) !== 123 /* { */ && s.charCodeAt(i) !== 32) i++;
  const name = s.slice(a, i);
  let kind: string | null = null;
  if (s.charCodeAt(i) === 123) {
    const close = s.indexOf('}', i);
    if (close < 0 || close > b) return void out.bad++;
    const m = /^proof_kind="([^"\\]{1,64})"$/.exec(s.slice(i + 1, close));
    kind = m ? m[1] : '';
    i = close + 1;
  }
  // cuzk writes counts as plain decimal integers; anything else (an empty value, 0x10, 1e3,
  // NaN) is not a count: Number('') would be 0 and Number('0x10') 16.
  // The first whitespace-separated token of the rest of the line (no split: this runs for
  // every sample of every poll of every target).
  VALUE_TOKEN.lastIndex = i;
  const t = VALUE_TOKEN.exec(s);
  const text = t && t.index + t[0].length <= b ? t[1] : '';
  const value = /^\d{1,16}$/.test(text) ? Number(text) : NaN;
  const key = SCALARS.get(name);
  if (key !== undefined) {
    if (kind !== null || !isCount(value)) return void out.bad++;
    out[key] = value;
  } else if (name === 'cuzk_proofs_completed' || name === 'cuzk_proofs_failed') {
    const map = name === 'cuzk_proofs_completed' ? out.completed : out.failed;
    if (!kind || !isCount(value) || (!map.has(kind) && map.size >= GRPC_LIMITS.kinds)) return void out.bad++;
    map.set(kind, value);
  }
}

/** cuzk's GetMetrics kind spelling (porep_c2) to our slot; -1 if unknown. */
export function metricsKindIndex(name: string): number {
  return kindIndex(name.replace(/_/g, '-'));
}

export interface GpuStatusMsg {
  ordinal: number;
  name: string;
  current_job_id: string;
  current_proof_kind: string;
}

export interface StatusMsg {
  gpus: GpuStatusMsg[];
  queues: { proof_kind: string; pending: number; in_progress: number }[];
  uptimeSeconds: number;
  totalCompleted: number;
  totalFailed: number;
}

/**
 * grpc-js's text for a failed connection, without its wrappers: "No connection established.
 * Last error: Error: connect ENOENT /run/cuzk.sock. Resolution note: " becomes "connect ENOENT
 * /run/cuzk.sock"; a resolution note with content is kept in brackets.
 */
export function grpcDetail(d: string): string {
  return d
    .replace(/^No connection established\. Last error: (?:Error: )?/, '')
    .replace(/\.?\s*Resolution note:\s*$/, '')
    .replace(/\.\s*Resolution note:\s*(.+)$/, ' (resolution: $1)');
}

/** Validates a GetStatusResponse as proto-loader decoded it (longs as strings). */
export function validateStatus(m: unknown): StatusMsg | string {
  if (typeof m !== 'object' || m === null) return 'not a message';
  const r = m as Record<string, unknown>;
  const num = (v: unknown): number => (typeof v === 'number' ? v : typeof v === 'string' && /^\d{1,16}$/.test(v) ? Number(v) : NaN);
  const str = (v: unknown): string | null => (typeof v === 'string' && v.length <= GRPC_LIMITS.stringLength ? v : null);
  if (!Array.isArray(r.gpus) || r.gpus.length > GRPC_LIMITS.workers) return `gpus: not a list of at most ${GRPC_LIMITS.workers} workers`;
  const gpus: GpuStatusMsg[] = [];
  for (let i = 0; i < r.gpus.length; i++) {
    const g = r.gpus[i] as Record<string, unknown>;
    const ordinal = num(g?.ordinal);
    const name = str(g?.name);
    const job = str(g?.current_job_id);
    const kind = str(g?.current_proof_kind);
    if (!isCount(ordinal) || ordinal >= GRPC_LIMITS.workers || name === null || job === null || kind === null) return `gpus[${i}]: malformed or over-long field`;
    gpus.push({ ordinal, name, current_job_id: job, current_proof_kind: kind });
  }
  const queues: StatusMsg['queues'] = [];
  if (Array.isArray(r.queues)) {
    for (const q of r.queues.slice(0, GRPC_LIMITS.kinds) as Record<string, unknown>[]) {
      const kind = str(q?.proof_kind);
      const pending = num(q?.pending);
      const inProgress = num(q?.in_progress);
      if (kind === null || !isCount(pending) || !isCount(inProgress)) return 'queues: malformed entry';
      queues.push({ proof_kind: kind, pending, in_progress: inProgress });
    }
  }
  const uptimeSeconds = num(r.uptime_seconds);
  const totalCompleted = num(r.total_proofs_completed);
  const totalFailed = num(r.total_proofs_failed);
  if (!isCount(uptimeSeconds) || !isCount(totalCompleted) || !isCount(totalFailed)) return 'uptime/total counters: not counts';
  return { gpus, queues, uptimeSeconds, totalCompleted, totalFailed };
}
