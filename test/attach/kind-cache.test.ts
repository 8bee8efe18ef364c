/**
 * The /status surface remembers the proof kind of every job it has seen (for TIMELINE's
 * kind-less jobs after they left /status). /status job ids may be up to 1 MiB each, so that
 * memory is bounded in characters as well as in entries: a daemon that names its jobs anew
 * with 20,000-character ids on every poll (the soak's `long_job_id`) must not grow the heap
 * (it did, ~170 KiB/min, when only the entry count was bounded).
 */
import { kindIndex } from '../../src/engine/model/kinds';
import { ErrorCounts } from '../../src/engine/model/error-counts';
import { StatusSurface } from '../../src/engine/sources/attach/status-surface';
import { silentLogger } from '../../src/util/logger';
import { fixture } from './snapshots';

const GOOD = fixture('02-snap-busy-consistent.json').json as { uptime_secs: number; pipelines: { job_id: string; proof_kind: string }[] };

function surface(): StatusSurface {
  // Never started: bodies are fed with applyBody, nothing polls.
  return new StatusSurface({ url: 'http://127.0.0.1:1/status', pollIntervalMs: 1000, timeoutMs: 1000, maxBodyBytes: 1 << 24, errors: new ErrorCounts(), logger: silentLogger });
}

function withJob(id: string, i: number): unknown {
  const s = structuredClone(GOOD);
  s.uptime_secs += i;
  s.pipelines[0].job_id = id;
  return s;
}

test('job ids of 20,000 characters, a new one per poll: at most 1 MiB of them are remembered, the newest', () => {
  const s = surface();
  const kind = kindIndex(GOOD.pipelines[0].proof_kind);
  const ids = Array.from({ length: 300 }, (_, i) => `long-${String(i).padStart(4, '0')}-${'j'.repeat(20_000)}`);
  ids.forEach((id, i) => s.applyBody(withJob(id, i), 1e9 * (i + 1)));
  const known = ids.filter((id) => s.kindOf(id) === kind);
  expect(known.length * ids[0].length).toBeLessThanOrEqual(1 << 20);
  expect(known.length).toBeGreaterThan(40); // the budget is used, not emptied
  expect(known).toEqual(ids.slice(-known.length)); // oldest forgotten first
});

test('ordinary job ids: the entry bound (10,000) applies as before', () => {
  const s = surface();
  const kind = kindIndex(GOOD.pipelines[0].proof_kind);
  const ids = Array.from({ length: 10_050 }, (_, i) => `ps-snap-${String(i).padStart(8, '0')}-41d8-4b6a-9a0e-5c1d2b3e4f50`);
  ids.forEach((id, i) => s.applyBody(withJob(id, i), 1e9 * (i + 1)));
  const known = ids.filter((id) => s.kindOf(id) === kind);
  expect(known).toEqual(ids.slice(-10_000));
});
