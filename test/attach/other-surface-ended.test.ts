/**
 * The merge hands /status' finished partitions to TIMELINE one pipeline at a time
 * (TimelineSurface.otherSurfaceEndedParts). Its contract: the same effects as calling
 * otherSurfaceEnded (tested in timeline-upstream.test.ts and merge.test.ts) for each of the
 * pipeline's partitions that is `done` with a numeric gpu_ms, in their order. Checked here
 * against exactly that, on random logs: re-used ids (several units per key, the newest one
 * counts), split proving on and off (pickups only), partitions in every state, jobs /status
 * lists that TIMELINE never saw, and ends reported again poll after poll.
 */
import { TimelineDriver, tl } from './timeline-driver';

function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type Part = { index: number; state: string; synth_ms: number | null; gpu_ms: number | null };
const STATES = ['pending', 'synthesizing', 'synth_done', 'gpu', 'done', 'failed'];

function scenario(seed: number, split: boolean) {
  const r = rng(seed);
  const pick = <T>(xs: T[]) => xs[Math.floor(r() * xs.length)];
  const jobs = ['snap-a', 'snap-b', 'porep-1000-7', 'unknown-job'];
  const steps: { at: number; lines: string[]; pipelines: { job_id: string; partitions: Part[] }[] }[] = [];
  let t = 1000;
  for (let s = 0; s < 12; s++) {
    const lines: string[] = [];
    for (let k = 0; k < 6; k++) {
      const job = pick(jobs.slice(0, 3));
      const p = Math.floor(r() * 5);
      const w = Math.floor(r() * 3);
      t += 1 + Math.floor(r() * 200);
      if (split) {
        const kind = r();
        if (kind < 0.3) lines.push(tl(t, 'SYNTH_START', job, `partition=${p}`));
        else if (kind < 0.7) lines.push(tl(t, 'GPU_PICKUP', job, `worker=${w},partition=${p}`), tl(t, 'GPU_START', job, `worker=${w},partition=${p}`));
        else lines.push(tl(t, 'GPU_END', job, `worker=${w},partition=${p},gpu_ms=${1 + Math.floor(r() * 150)}`));
      } else lines.push(tl(t, 'GPU_PICKUP', job, `worker=${w},partition=${p}`)); // CUZK_DISABLE_SPLIT_PROVE=1: pickups only
    }
    const pipelines = jobs.map((job_id) => ({
      job_id,
      partitions: Array.from({ length: 1 + Math.floor(r() * 5) }, (_, index) => {
        const state = pick(STATES);
        return { index, state, synth_ms: null, gpu_ms: r() < 0.8 ? 1 + Math.floor(r() * 400) + (r() < 0.3 ? 0.5 : 0) : null };
      }),
    }));
    steps.push({ at: t + 10, lines, pipelines });
  }
  return steps;
}

/** What the drivers expose, and every unit's fields the calls may set. */
function state(d: TimelineDriver) {
  const v = d.view();
  const kinds = ['snap-update', 'porep-c2', 'other'];
  const units = [...d.tl.units.jobs.values()].map((j) => j.units.map((u) => [j.id, u.key, u.end, u.otherEndMs, u.gpuMs]));
  return {
    gpu: kinds.map((k) => v.gpuSecs(k)),
    done: kinds.map((k) => v.partsDone(k)),
    failed: kinds.map((k) => v.partsFailed(k)),
    busy: [0, 1, 2].map((w) => [v.busy(w), v.busySecs(w)]),
    live: v.live(),
    units,
  };
}

test.each([
  ...Array.from({ length: 12 }, (_, i) => [i + 1, true] as const),
  ...Array.from({ length: 12 }, (_, i) => [i + 101, false] as const),
])('seed %i, split proving %s: one call per pipeline = one call per done partition', (seed, split) => {
  const perPart = new TimelineDriver();
  const perPipeline = new TimelineDriver();
  let calls = 0;
  for (const step of scenario(seed, split)) {
    for (const d of [perPart, perPipeline]) {
      d.at(step.at);
      d.write(...step.lines);
    }
    for (const p of step.pipelines) {
      for (const part of p.partitions) {
        if (part.state === 'done' && typeof part.gpu_ms === 'number') {
          perPart.tl.otherSurfaceEnded(p.job_id, part.index, part.gpu_ms);
          calls++;
        }
      }
      perPipeline.tl.otherSurfaceEndedParts(p.job_id, p.partitions);
    }
    expect(state(perPipeline)).toEqual(state(perPart));
  }
  for (const d of [perPart, perPipeline]) d.at(60_000);
  expect(state(perPipeline)).toEqual(state(perPart));
  expect(calls).toBeGreaterThan(0);
  if (!split) expect(perPart.tl.splitMode).toBe('off');
});

test('the scenarios reach what the contract is about: ends recorded on units, and GPU time added without split proving', () => {
  let recorded = 0;
  let addedWithoutSplit = 0;
  for (const [seed, split] of [[1, true], [2, true], [101, false], [102, false]] as const) {
    const d = new TimelineDriver();
    for (const step of scenario(seed, split)) {
      d.at(step.at);
      d.write(...step.lines);
      const before = d.view().gpuSecs('snap-update') + d.view().gpuSecs('porep-c2') + d.view().gpuSecs('other');
      for (const p of step.pipelines) d.tl.otherSurfaceEndedParts(p.job_id, p.partitions);
      const after = d.view().gpuSecs('snap-update') + d.view().gpuSecs('porep-c2') + d.view().gpuSecs('other');
      if (!split && after > before) addedWithoutSplit++;
    }
    for (const j of d.tl.units.jobs.values()) for (const u of j.units) if (u.otherEndMs >= 0) recorded++;
  }
  expect(recorded).toBeGreaterThan(0);
  expect(addedWithoutSplit).toBeGreaterThan(0);
});

test('a re-used id: only the newest unit of a partition takes /status\' end', () => {
  const d = new TimelineDriver();
  d.at(1000);
  d.write(tl(1000, 'GPU_PICKUP', 'snap-x', 'worker=0,partition=2'), tl(1000, 'GPU_START', 'snap-x', 'worker=0,partition=2'));
  d.at(1100);
  d.write(tl(1100, 'GPU_PICKUP', 'snap-x', 'worker=1,partition=2'), tl(1100, 'GPU_START', 'snap-x', 'worker=1,partition=2'));
  d.at(1500);
  d.tl.otherSurfaceEndedParts('snap-x', [
    { index: 0, state: 'pending', gpu_ms: null },
    { index: 1, state: 'gpu', gpu_ms: 10 },
    { index: 2, state: 'done', gpu_ms: 380 },
  ]);
  const units = d.tl.units.jobs.get('snap-x')!.units.filter((u) => u.key === 2);
  expect(units.map((u) => u.otherEndMs)).toEqual([-1, 380]);
});
