/**
 * The comparison of an attach exporter's /metrics with simulate's `truth.upstream` (what
 * upstream cuzk's own accounting makes of the run), per row × surface combination. Each
 * failed check is one line "row/combo check: detail". The rules (the lead may refine them):
 *  - with TIMELINE attached and split prove on:
 *    busy       per worker, cuzk_gpu_worker_busy_seconds_total within 1 ms per stage (pickups,
 *               ended or not) of upstream busy_ns; where stages have no end line the attach
 *               may end them by evidence: busy in [truth − unended, truth + STINT_TIMEOUT];
 *    gpu_seconds  cuzk_partition_gpu_seconds_total by kind within 1 ms per ended partition of
 *               upstream gpu_ns (attach may also count unended stages it closed: + unended);
 *    synth_seconds cuzk_partition_synthesis_seconds_total by kind within 1 ms per SYNTH_END;
 *    partitions cuzk_partitions_completed_total by kind = upstream parts_completed;
 *  - with gRPC attached: proofs — cuzk_proofs_completed_total / cuzk_proofs_failed_total by
 *    kind = upstream proofs_completed / proofs_failed (GetMetrics' counters);
 *  - always, once idle: idle — no worker busy (cuzk_gpu_worker_busy), no live partition in
 *    gpu/finalizing (cuzk_partitions{state});
 *  - /status without TIMELINE, rows where /status sees every partitioned partition end
 *    (Row.statusExact): partitions, GPU and synthesis seconds of porep-c2 and snap-update as
 *    with TIMELINE (per-partition ms); PoSt is invisible there;
 *  - healthy rows: healthy — cuzk_status_mismatch never 1 (sampled during the run and at the end).
 * A row marks a check unknowable for a combination (Row.unknowable) with the reason.
 */
import { sampleValue } from '../attach/merged-harness';
import type { Sample } from '../helpers/prom-text';
import type { CheckName, Combo, RowRun, Truth } from './harness';

const KINDS = ['porep-c2', 'snap-update', 'window-post', 'winning-post'] as const;
/** The longest an attach may leave a stage with no end open (ends it by evidence or a timeout). */
export const STINT_TIMEOUT_S = 120;
const MS = 1e6;

const sum = (s: Sample[], name: string, labels: Record<string, string> = {}): number =>
  s.filter((x) => x.name === name && Object.entries(labels).every(([k, v]) => x.labels[k] === v)).reduce((a, x) => a + x.value, 0);

export async function compareRow(run: RowRun): Promise<string[]> {
  const out: string[] = [];
  for (const [combo, h] of run.attach) {
    const { samples } = await h.metrics();
    const failed = compareCombo(run, combo, samples);
    if (failed.length) {
      // What the exporter itself counted as odd: the first thing to read when a check fails.
      const errs = samples.filter((x) => x.name === 'cuzk_exporter_errors_total' && x.value > 0).map((x) => `${x.labels.reason}=${x.value}`);
      failed.push(`${run.row.id}/${combo} (errors counted: ${errs.join(' ') || 'none'})`);
    }
    out.push(...failed);
  }
  return out;
}

/** The truth a run's attach saw: after a restart, the lives added up. */
function merged(run: RowRun): Truth {
  if (run.lives.length <= 1) return run.truth;
  const up = JSON.parse(JSON.stringify(run.lives[0].upstream)) as Truth;
  for (const life of run.lives.slice(1)) {
    for (const k of KINDS) for (const [f, v] of Object.entries(life.upstream.kinds[k] as Record<string, number>)) up.kinds[k][f] += v;
    life.upstream.workers.forEach((w: Record<string, number>, i: number) => {
      for (const [f, v] of Object.entries(w)) if (f !== 'worker' && f !== 'gpu') up.workers[i][f] += v;
    });
  }
  return { ...run.truth, upstream: up };
}

export function compareCombo(run: RowRun, combo: Combo, s: Sample[]): string[] {
  const row = run.row;
  const t = merged(run);
  const up = t.upstream;
  const out: string[] = [];
  const skip = (c: CheckName) => row.unknowable?.[combo]?.[c] !== undefined || row.unknowable?.['*']?.[c] !== undefined;
  const fail = (c: CheckName, detail: string) => out.push(`${row.id}/${combo} ${c}: ${detail}`);
  const timeline = combo.includes('t') && up.config.split_prove && up.config.pipeline;
  const grpc = combo.includes('g');

  if (timeline) {
    if (!skip('busy')) {
      for (const w of up.workers as Array<Record<string, number>>) {
        // By worker: with TIMELINE alone the GPU of a worker is not known (gpu="unknown").
        const got = sum(s, 'cuzk_gpu_worker_busy_seconds_total', { worker: String(w.worker) }) * 1e9;
        const stages = Math.max(1, w.partitions + w.unended + w.skips);
        const lo = w.busy_ns - w.unended_ns - MS * stages;
        const hi = w.busy_ns + MS * stages + (w.unended > 0 || w.skips > 0 ? STINT_TIMEOUT_S * 1e9 : 0);
        if (got < lo || got > hi) fail('busy', `worker ${w.worker}: ${(got / 1e9).toFixed(4)} s, truth ${(w.busy_ns / 1e9).toFixed(4)} s (allowed ${(lo / 1e9).toFixed(4)}..${(hi / 1e9).toFixed(4)})`);
      }
    }
    for (const k of KINDS) {
      const u = up.kinds[k] as Record<string, number>;
      if (!skip('gpu_seconds')) {
        const got = sum(s, 'cuzk_partition_gpu_seconds_total', { proof_kind: k }) * 1e9;
        const lo = u.gpu_ns - MS * Math.max(1, u.parts_completed);
        const hi = u.gpu_ns + u.gpu_unended_ns + MS;
        if (got < lo || got > hi) fail('gpu_seconds', `${k}: ${(got / 1e9).toFixed(4)} s, truth ${(u.gpu_ns / 1e9).toFixed(4)} s over ${u.parts_completed} partitions`);
      }
      if (!skip('synth_seconds')) {
        const got = sum(s, 'cuzk_partition_synthesis_seconds_total', { proof_kind: k }) * 1e9;
        if (Math.abs(got - u.synth_ns) > MS * Math.max(1, u.synth_parts)) fail('synth_seconds', `${k}: ${(got / 1e9).toFixed(4)} s, truth ${(u.synth_ns / 1e9).toFixed(4)} s over ${u.synth_parts} syntheses`);
      }
      if (!skip('partitions')) {
        const got = sum(s, 'cuzk_partitions_completed_total', { proof_kind: k });
        if (got !== u.parts_completed) fail('partitions', `${k}: ${got}, truth ${u.parts_completed}`);
      }
    }
    const other = sum(s, 'cuzk_partition_gpu_seconds_total', { proof_kind: 'other' });
    if (other > 0 && !skip('gpu_seconds')) fail('gpu_seconds', `other: ${other.toFixed(4)} s (every kind is knowable)`);
  }
  // /status without TIMELINE: its per-partition ms for the partitioned kinds (PoSt: blind).
  if (!combo.includes('t') && combo.includes('s') && row.statusExact) {
    for (const k of ['porep-c2', 'snap-update'] as const) {
      const u = up.kinds[k] as Record<string, number>;
      if (!skip('partitions')) {
        const got = sum(s, 'cuzk_partitions_completed_total', { proof_kind: k });
        if (got !== u.parts_completed) fail('partitions', `${k} (from /status): ${got}, truth ${u.parts_completed}`);
      }
      if (!skip('gpu_seconds')) {
        const got = sum(s, 'cuzk_partition_gpu_seconds_total', { proof_kind: k }) * 1e9;
        if (Math.abs(got - u.gpu_ns) > MS * Math.max(1, u.parts_completed)) fail('gpu_seconds', `${k} (from /status): ${(got / 1e9).toFixed(4)} s, truth ${(u.gpu_ns / 1e9).toFixed(4)} s over ${u.parts_completed} partitions`);
      }
      if (!skip('synth_seconds')) {
        const got = sum(s, 'cuzk_partition_synthesis_seconds_total', { proof_kind: k }) * 1e9;
        if (Math.abs(got - u.synth_ns) > MS * Math.max(1, u.synth_parts)) fail('synth_seconds', `${k} (from /status): ${(got / 1e9).toFixed(4)} s, truth ${(u.synth_ns / 1e9).toFixed(4)} s over ${u.synth_parts} syntheses`);
      }
    }
  }
  if (grpc && !skip('proofs')) {
    for (const k of KINDS) {
      const u = up.kinds[k] as Record<string, number>;
      const c = sum(s, 'cuzk_proofs_completed_total', { proof_kind: k });
      const f = sum(s, 'cuzk_proofs_failed_total', { proof_kind: k });
      if (c !== u.proofs_completed || f !== u.proofs_failed) fail('proofs', `${k}: completed ${c} failed ${f}, truth ${u.proofs_completed} / ${u.proofs_failed}`);
    }
  }
  if (!skip('idle')) {
    const busy = s.filter((x) => x.name === 'cuzk_gpu_worker_busy' && x.value !== 0);
    if (busy.length > 0) fail('idle', `workers busy once idle: ${busy.map((x) => x.labels.worker).join(',')}`);
    const live = sum(s, 'cuzk_partitions', { state: 'gpu' }) + sum(s, 'cuzk_partitions', { state: 'finalizing' });
    if (live > 0) fail('idle', `${live} partition(s) in gpu/finalizing once idle`);
  }
  if (row.healthy && !skip('healthy')) {
    const seen = Math.max(run.mismatchSeen.get(combo) ?? 0, sampleValue(s, 'cuzk_status_mismatch') ?? 0);
    if (seen > 0) {
      const reasons = s.filter((x) => x.name === 'cuzk_status_mismatch_reason' && x.value > 0).map((x) => x.labels.reason);
      fail('healthy', `mismatch set on a healthy box${reasons.length ? ` (${reasons.join(',')})` : ' (during the run)'}`);
    }
  }
  return out;
}
