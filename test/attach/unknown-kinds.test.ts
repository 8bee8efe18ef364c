/**
 * Issue #4, acceptance 4: a daemon reporting 10,000 distinct proof kinds we do not know,
 * in its pipelines and in counters.completed_by_kind/failed_by_kind, creates no more series
 * than a daemon reporting one: every unknown kind is folded into proof_kind="other", and
 * what was folded is counted in cuzk_exporter_errors_total{reason="unknown_proof_kind"}
 * (once per new job and once per new counter key, not once per poll).
 */
import { parse, promtoolCheckMetrics, Sample, value } from '../helpers/prom-text';
import { Harness, startHarness, warnings } from './harness';
import { idle, pipeline, proving, snapshot } from './snapshots';
import { StatusServer } from './status-server';

const N = 10_000;
const kindName = (i: number) => `future-proof-${i}`;

/** N jobs, one per unknown kind; job i has a finished partition and one on the GPU. */
function body(opts: { jobs: number; jobOffset: number; kinds: number; completedEach: number; gpuMs: number }): Record<string, unknown> {
  const pipelines = Array.from({ length: opts.jobs }, (_, i) =>
    pipeline(`job-${opts.jobOffset + i}`, kindName(i % opts.kinds), [
      ['done', 100, 10],
      ['gpu', 100, opts.gpuMs],
    ]),
  );
  const completed: Record<string, number> = { 'snap-update': 5 };
  const failed: Record<string, number> = {};
  for (let i = 0; i < opts.kinds; i++) {
    completed[kindName(i)] = opts.completedEach;
    failed[kindName(i)] = 1;
  }
  // 16 workers: 10,000 proofs ending between two polls a second or so apart is within what
  // 16 can finish ((elapsed + 10 s) x 100 x workers, docs/hostile-inputs.md), not with 2.
  const idleWorkers = Array.from({ length: 15 }, (_, i) => idle(i + 1, i % 2));
  return snapshot({ uptime: 100 + opts.completedEach, pipelines, workers: [proving(0, 0, 'job-0', 1, 0.5), ...idleWorkers], completed, failed });
}

let daemon: StatusServer;
let h: Harness;

beforeEach(async () => {
  daemon = await StatusServer.start();
  h = await startHarness({ url: daemon.url });
});
afterEach(async () => {
  await h.close();
  await daemon.close();
});

async function poll(b: Record<string, unknown>): Promise<Sample[]> {
  daemon.serveJson(b);
  await h.source.pollOnce();
  const { status, body: text } = await h.metrics();
  expect(status).toBe(200);
  const lint = promtoolCheckMetrics(text);
  if (lint.skipped !== undefined) console.warn(lint.skipped);
  else expect(lint).toEqual({ ok: true, output: '' });
  return parse(text);
}

const seriesKeys = (samples: Sample[]) => samples.map((s) => `${s.name}${JSON.stringify(s.labels)}`).sort();
const folded = (samples: Sample[]) => value(samples, 'cuzk_exporter_errors_total', { reason: 'unknown_proof_kind' });

test('10,000 unknown proof kinds make exactly the series one unknown kind makes', async () => {
  // Reference: the same daemon life with a single unknown kind and a single job.
  const one = await poll(body({ jobs: 1, jobOffset: 0, kinds: 1, completedEach: 1, gpuMs: 5 }));
  const oneLater = await poll(body({ jobs: 1, jobOffset: 1, kinds: 1, completedEach: 2, gpuMs: 7 }));
  await h.close();
  await daemon.close();
  daemon = await StatusServer.start();
  h = await startHarness({ url: daemon.url });

  const first = await poll(body({ jobs: N, jobOffset: 0, kinds: N, completedEach: 1, gpuMs: 5 }));
  expect(value(first, 'cuzk_up')).toBe(1);
  expect(seriesKeys(first)).toEqual(seriesKeys(one));
  const kinds = new Set(first.filter((s) => s.labels.proof_kind !== undefined).map((s) => s.labels.proof_kind));
  expect([...kinds].sort()).toEqual(['other', 'porep-c2', 'snap-update', 'window-post', 'winning-post']);
  // Everything is there, under "other".
  expect(value(first, 'cuzk_partitions', { proof_kind: 'other', state: 'gpu' })).toBe(N);
  // Folded: N new jobs, and N new keys in each of completed_by_kind and failed_by_kind.
  expect(folded(first)).toBe(3 * N);
  // One log line for the poll, not one per kind.
  const w = warnings(h.logs);
  expect(w).toHaveLength(1);
  expect(w[0].msg).toMatch(new RegExp(`^folded ${N} unknown proof kinds into proof_kind="other": "future-proof-0", "future-proof-1", "future-proof-2" \\(\\+${N - 3} more\\)$`));

  // Next poll: every unknown kind completed one more proof, their GPU partitions finished
  // (not in the snapshot any more: their jobs aged out), and N new jobs of the same kinds
  // arrived. Nothing new to fold but the new jobs; the proofs are counted under "other".
  const second = await poll(body({ jobs: N, jobOffset: N, kinds: N, completedEach: 2, gpuMs: 7 }));
  expect(seriesKeys(second)).toEqual(seriesKeys(oneLater));
  expect(folded(second)).toBe(3 * N + N);
  expect(value(second, 'cuzk_proofs_completed_total', { proof_kind: 'other' })).toBe(N);
  expect(value(second, 'cuzk_proofs_failed_total', { proof_kind: 'other' })).toBe(0);
  expect(value(second, 'cuzk_proofs_completed_total', { proof_kind: 'snap-update' })).toBe(0);
  // The new jobs' finished partitions (10 ms each) count; the old jobs left with theirs.
  expect(value(second, 'cuzk_partition_gpu_seconds_total', { proof_kind: 'other' })).toBe((N * 10 * 1e6) / 1e9);
  expect(value(second, 'cuzk_partitions', { proof_kind: 'other', state: 'gpu' })).toBe(N);
  expect(warnings(h.logs)).toHaveLength(2);

  // The same snapshot again: nothing new, nothing folded, nothing logged.
  const third = await poll(body({ jobs: N, jobOffset: N, kinds: N, completedEach: 2, gpuMs: 7 }));
  expect(folded(third)).toBe(folded(second));
  expect(warnings(h.logs)).toHaveLength(2);
});
