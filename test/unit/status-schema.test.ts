/**
 * validateStatus (src/engine/sources/status-schema.ts), rule by rule from its header and
 * docs/status-json.md: a snapshot is refused whole only for what it cannot do without
 * (not an object, no uptime, no pipelines / gpu_workers list, over a size limit); a bad
 * optional section, pipeline or worker is left out and named in `skipped` (the job id /
 * worker id kept where readable); numbers that cannot be true (a duration longer than the
 * daemon has been up, per-kind counters past their total) go to `implausible`.
 * The limits (LIMITS) are tested at the limit and one past it.
 */
import { BOUNDS } from '../../src/engine/sources/plausibility';
import { LIMITS, validateStatus } from '../../src/engine/sources/status-schema';

type Any = Record<string, any>;

const part = (index: number, state = 'done', synth: number | null = 10, gpu: number | null = 20): Any => ({ index, state, synth_ms: synth, gpu_ms: gpu });
const pipe = (job: string, n = 1, extra: Any = {}): Any => ({
  job_id: job,
  proof_kind: 'porep-c2',
  started_secs_ago: 5,
  total_partitions: n,
  partitions_done: 0,
  partitions: Array.from({ length: n }, (_, i) => part(i)),
  ...extra,
});
const worker = (id: number, extra: Any = {}): Any => ({ worker_id: id, gpu_ordinal: 0, state: 'idle', current_job: null, current_partition: null, busy_secs: null, ...extra });
const counters = (extra: Any = {}): Any => ({ total_completed: 10, total_failed: 2, completed_by_kind: { 'porep-c2': 10 }, failed_by_kind: { 'porep-c2': 2 }, queue_depth: 0, ...extra });
const snap = (extra: Any = {}): Any => ({
  uptime_secs: 1000,
  memory: { total_bytes: 100, used_bytes: 40, available_bytes: 60 },
  synthesis: { max_concurrent: 4, active: 1 },
  pipelines: [pipe('a')],
  gpu_workers: [worker(0)],
  counters: counters(),
  ...extra,
});

function ok(body: unknown) {
  const r = validateStatus(body);
  if (!r.ok) throw new Error(`refused: ${r.error}`);
  return r;
}
function refused(body: unknown): string {
  const r = validateStatus(body);
  if (r.ok) throw new Error('accepted');
  return r.error;
}

describe('refused whole', () => {
  test('not an object', () => {
    for (const b of [null, 3, 'x', [], undefined]) expect(refused(b)).toBe('snapshot is not a JSON object');
  });
  test('uptime_secs missing, negative, not finite, or over 100 years; 0 and the limit itself are uptimes', () => {
    expect(refused(snap({ uptime_secs: undefined }))).toMatch(/^uptime_secs: missing or not a non-negative number$/);
    expect(refused(snap({ uptime_secs: -1 }))).toMatch(/^uptime_secs: missing/);
    expect(refused(snap({ uptime_secs: '5' }))).toMatch(/^uptime_secs: missing/);
    expect(refused(snap({ uptime_secs: Infinity }))).toMatch(/^uptime_secs: missing/);
    expect(refused(snap({ uptime_secs: NaN }))).toMatch(/^uptime_secs: missing/);
    expect(ok(snap({ uptime_secs: 0, pipelines: [] })).status.uptime_secs).toBe(0);
    expect(ok(snap({ uptime_secs: LIMITS.uptimeSecs })).status.uptime_secs).toBe(LIMITS.uptimeSecs);
    expect(refused(snap({ uptime_secs: LIMITS.uptimeSecs + 1 }))).toBe(`uptime_secs: ${LIMITS.uptimeSecs + 1} is not a daemon's uptime (over 100 years)`);
  });
  test('pipelines / gpu_workers missing or not arrays', () => {
    expect(refused(snap({ pipelines: undefined }))).toBe('pipelines: missing or not an array');
    expect(refused(snap({ pipelines: {} }))).toBe('pipelines: missing or not an array');
    expect(refused(snap({ gpu_workers: undefined }))).toBe('gpu_workers: missing or not an array');
    expect(refused(snap({ gpu_workers: 'x' }))).toBe('gpu_workers: missing or not an array');
  });
  test('entry limits: at the limit taken, one past it refused', () => {
    const nulls = (n: number) => new Array(n).fill(null);
    expect(ok(snap({ pipelines: nulls(LIMITS.pipelines) })).skipped).toHaveLength(LIMITS.pipelines);
    expect(refused(snap({ pipelines: nulls(LIMITS.pipelines + 1) }))).toBe(`pipelines: ${LIMITS.pipelines + 1} entries exceeds the limit of ${LIMITS.pipelines}`);
    expect(ok(snap({ gpu_workers: nulls(LIMITS.workers) })).skipped).toHaveLength(LIMITS.workers);
    expect(refused(snap({ gpu_workers: nulls(LIMITS.workers + 1) }))).toBe(`gpu_workers: ${LIMITS.workers + 1} entries exceeds the limit of ${LIMITS.workers}`);
  });
  test('partitions of all pipelines together: the limit counted over every pipeline with a partitions list', () => {
    const lists = (total: number) => {
      const per = 1000;
      const out: Any[] = [];
      for (let left = total, i = 0; left > 0; i++, left -= per) out.push({ job_id: `j${i}`, partitions: new Array(Math.min(per, left)).fill(0) });
      return out;
    };
    const atLimit = validateStatus(snap({ pipelines: [...lists(LIMITS.totalPartitions), 'junk', { partitions: 'x' }] }));
    expect(atLimit.ok).toBe(true);
    expect(refused(snap({ pipelines: lists(LIMITS.totalPartitions + 1) }))).toBe(`pipelines: ${LIMITS.totalPartitions + 1} partitions in all exceeds the limit of ${LIMITS.totalPartitions}`);
  });
});

describe('sections', () => {
  test('a healthy snapshot: every section as given, nothing skipped or implausible; unknown top-level fields kept', () => {
    const s = snap({ backend: 'cuda', extra_field: { x: 1 } });
    const r = ok(s);
    expect(r.skipped).toEqual([]);
    expect(r.implausible).toEqual([]);
    expect(r.skippedJobIds).toEqual([]);
    expect(r.skippedWorkerIds).toEqual([]);
    expect(r.status.memory).toEqual(s.memory);
    expect(r.status.synthesis).toEqual(s.synthesis);
    expect(r.status.counters).toEqual(s.counters);
    expect(r.status.backend).toBe('cuda');
    expect(r.status.extra_field).toEqual({ x: 1 });
    expect(r.status.pipelines).toEqual(s.pipelines);
    expect(r.status.gpu_workers).toEqual(s.gpu_workers);
  });
  test('memory, synthesis, counters missing: each named "missing" (cuzk always sends them); the rest kept', () => {
    const r = ok(snap({ memory: undefined, synthesis: undefined, counters: undefined }));
    expect(r.skipped).toEqual(['memory: missing', 'synthesis: missing', 'counters: missing']);
    expect(r.status.pipelines).toHaveLength(1);
  });
  test('a malformed memory / synthesis section is left out and named, copying only the known fields of a good one', () => {
    for (const bad of [null, 5, { total_bytes: 1, used_bytes: 1 }, { total_bytes: 1, used_bytes: -1, available_bytes: 0 }, { total_bytes: 1.5, used_bytes: 1, available_bytes: 0 }, { total_bytes: 1, used_bytes: 1, available_bytes: '0' }]) {
      const r = ok(snap({ memory: bad }));
      expect(r.skipped).toEqual(['memory']);
      expect('memory' in r.status).toBe(false);
    }
    for (const k of ['total_bytes', 'used_bytes', 'available_bytes']) {
      const m: Any = { total_bytes: 1, used_bytes: 1, available_bytes: 1 };
      m[k] = -1;
      expect(ok(snap({ memory: m })).skipped).toEqual(['memory']);
    }
    expect(ok(snap({ memory: { total_bytes: 0, used_bytes: 0, available_bytes: 0, junk: 1 } })).status.memory).toEqual({ total_bytes: 0, used_bytes: 0, available_bytes: 0 });
    for (const bad of [[], { max_concurrent: 1 }, { max_concurrent: -1, active: 0 }, { max_concurrent: 1, active: 0.5 }, { max_concurrent: 1, active: null }]) {
      const r = ok(snap({ synthesis: bad }));
      expect(r.skipped).toEqual(['synthesis']);
      expect('synthesis' in r.status).toBe(false);
    }
    expect(ok(snap({ synthesis: { max_concurrent: 0, active: 0, junk: 1 } })).status.synthesis).toEqual({ max_concurrent: 0, active: 0 });
  });
  test('counters: every field checked; by-kind maps of counts with bounded keys; the optional maps checked when present', () => {
    const bad: unknown[] = [
      'x',
      counters({ total_completed: -1 }),
      counters({ total_failed: 1.5 }),
      counters({ queue_depth: undefined }),
      counters({ completed_by_kind: undefined }),
      counters({ failed_by_kind: [] }),
      counters({ completed_by_kind: { 'porep-c2': -1 } }),
      counters({ failed_by_kind: { 'porep-c2': 'x' } }),
      counters({ completed_by_kind: { ['k'.repeat(LIMITS.stringLength + 1)]: 1 } }),
      counters({ cancelled_by_kind: null }),
      counters({ cancelled_by_kind: { a: -1 } }),
      counters({ queue_depth_by_kind: 3 }),
      counters({ queue_depth_by_kind: { a: 0.5 } }),
      counters({ total_completed: Number.MAX_SAFE_INTEGER + 2 }),
    ];
    for (const c of bad) {
      const r = ok(snap({ counters: c }));
      expect([JSON.stringify(c).slice(0, 60), r.skipped]).toEqual([JSON.stringify(c).slice(0, 60), ['counters']]);
      expect('counters' in r.status).toBe(false);
    }
    const full = counters({ cancelled_by_kind: { 'porep-c2': 1 }, queue_depth_by_kind: { 'porep-c2': 3 }, junk: 1 });
    const r = ok(snap({ counters: full }));
    expect(r.status.counters).toEqual({
      total_completed: 10,
      total_failed: 2,
      completed_by_kind: { 'porep-c2': 10 },
      failed_by_kind: { 'porep-c2': 2 },
      queue_depth: 0,
      cancelled_by_kind: { 'porep-c2': 1 },
      queue_depth_by_kind: { 'porep-c2': 3 },
    });
    // a key of exactly the string limit is a key
    expect(ok(snap({ counters: counters({ total_completed: 11, completed_by_kind: { 'porep-c2': 10, ['k'.repeat(LIMITS.stringLength)]: 1 } }) })).skipped).toEqual([]);
  });
  test('a count is any integer JSON carries exactly: 2^53 - 1 (Number.MAX_SAFE_INTEGER) is one, in every section', () => {
    // 2^53 - 1 = 9,007,199,254,740,991 is the largest integer a double holds exactly; the
    // next integers (2^53 + 1 ...) are not, and are refused (the counters test above).
    const max = 9_007_199_254_740_991;
    expect(max).toBe(Number.MAX_SAFE_INTEGER);
    const r = ok(snap({ memory: { total_bytes: max, used_bytes: 0, available_bytes: max }, synthesis: { max_concurrent: max, active: 0 }, counters: counters({ total_completed: max, completed_by_kind: { 'porep-c2': max } }) }));
    expect([r.skipped, r.implausible]).toEqual([[], []]);
    expect(r.status.memory).toEqual({ total_bytes: max, used_bytes: 0, available_bytes: max });
    expect(r.status.synthesis).toEqual({ max_concurrent: max, active: 0 });
    expect(r.status.counters?.total_completed).toBe(max);
  });
  test('counters: at most LIMITS.kinds keys per map', () => {
    const map = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, 0]));
    expect(ok(snap({ counters: counters({ cancelled_by_kind: map(LIMITS.kinds) }) })).skipped).toEqual([]);
    expect(ok(snap({ counters: counters({ cancelled_by_kind: map(LIMITS.kinds + 1) }) })).skipped).toEqual(['counters']);
  });
  test('per-kind counters adding up past their total (beyond the slack) are implausible: the section is left out', () => {
    const slack = BOUNDS.kindSumSlack;
    const at = ok(snap({ counters: counters({ total_completed: 10, completed_by_kind: { a: 10, b: slack } }) }));
    expect(at.implausible).toEqual([]);
    expect(at.status.counters).toBeDefined();
    const over = ok(snap({ counters: counters({ total_completed: 10, completed_by_kind: { a: 10, b: slack + 1 } }) }));
    expect(over.implausible).toEqual(['counters: completed_by_kind adds up to more than total_completed']);
    expect(over.skipped).toEqual([]);
    expect('counters' in over.status).toBe(false);
    const failed = ok(snap({ counters: counters({ total_failed: 2, failed_by_kind: { a: 2 + slack + 1 } }) }));
    expect(failed.implausible).toEqual(['counters: failed_by_kind adds up to more than total_failed']);
    expect(ok(snap({ counters: counters({ total_failed: 2, failed_by_kind: { a: 2 + slack } }) })).implausible).toEqual([]);
  });
  test('gpus: all valid or the section is left out', () => {
    const g = (extra: Any = {}) => ({ ordinal: 0, name: 'RTX', ...extra });
    const good = [g(), g({ ordinal: 1, uuid: 'GPU-1', pci_bus_id: null }), g({ ordinal: 2, uuid: null, pci_bus_id: '0000:01:00.0' })];
    expect(ok(snap({ gpus: good })).status.gpus).toEqual(good);
    expect(ok(snap({ gpus: new Array(LIMITS.gpus).fill(g()) })).skipped).toEqual([]);
    for (const bad of [{}, [g(), null], [g({ ordinal: -1 })], [g({ name: 5 })], [g({ name: 'n'.repeat(LIMITS.stringLength + 1) })], [g({ uuid: 5 })], [g({ pci_bus_id: 5 })], new Array(LIMITS.gpus + 1).fill(g())]) {
      const r = ok(snap({ gpus: bad }));
      expect(r.skipped).toEqual(['gpus']);
      expect('gpus' in r.status).toBe(false);
    }
    expect('gpus' in ok(snap()).status).toBe(false);
  });
});

describe('pipelines', () => {
  const one = (p: unknown, uptime = 1000) => ok(snap({ uptime_secs: uptime, pipelines: [p] }));
  test('each rule: the pipeline is left out, named with its index and reason; its job id kept where readable', () => {
    const cases: Array<[unknown, string]> = [
      [5, 'not an object'],
      [pipe(''), 'job_id: not a non-empty string'],
      [{ ...pipe('a'), job_id: 5 }, 'job_id: not a non-empty string'],
      [pipe('a', 1, { proof_kind: '' }), 'proof_kind: not a non-empty string'],
      [pipe('a', 1, { proof_kind: 7 }), 'proof_kind: not a non-empty string'],
      [pipe('a', 1, { proof_kind: 'k'.repeat(LIMITS.stringLength + 1) }), 'proof_kind: not a non-empty string'],
      [pipe('a', 1, { started_secs_ago: -1 }), 'started_secs_ago: not a non-negative number'],
      [pipe('a', 1, { started_secs_ago: null }), 'started_secs_ago: not a non-negative number'],
      [pipe('a', 1, { total_partitions: -1 }), 'total_partitions: not a count within limits'],
      [pipe('a', 1, { total_partitions: 1.5 }), 'total_partitions: not a count within limits'],
      [pipe('a', 1, { partitions_done: -1 }), 'partitions_done: not a count'],
      [pipe('a', 1, { partitions: 'x' }), 'partitions: not an array of total_partitions entries'],
      [pipe('a', 1, { total_partitions: 2 }), 'partitions: not an array of total_partitions entries'],
      [pipe('a', 2, { partitions: [part(0), 7] }), 'partitions[1]: not an object'],
      [pipe('a', 2, { partitions: [part(0), part(0)] }), 'partitions[1]: index is not 1'],
      [pipe('a', 1, { partitions: [part(0, 'running')] }), 'partitions[0]: unknown state'],
      [pipe('a', 1, { partitions: [{ ...part(0), state: 5 }] }), 'partitions[0]: unknown state'],
      [pipe('a', 1, { partitions: [part(0, 'done', -1)] }), 'partitions[0]: synth_ms/gpu_ms not null or a non-negative number'],
      [pipe('a', 1, { partitions: [part(0, 'done', 1, -1)] }), 'partitions[0]: synth_ms/gpu_ms not null or a non-negative number'],
      [pipe('a', 1, { partitions: [{ index: 0, state: 'done', gpu_ms: 1 }] }), 'partitions[0]: synth_ms/gpu_ms not null or a non-negative number'],
      [pipe('a', 1, { job_handle: -1 }), 'job_handle: not a count'],
    ];
    for (const [p, why] of cases) {
      const r = one(p);
      expect([why, r.skipped]).toEqual([why, [`pipelines[0]: ${why}`]]);
      expect(r.status.pipelines).toEqual([]);
      expect(r.implausible).toEqual([]);
      const id = typeof p === 'object' && p !== null ? (p as Any).job_id : undefined;
      expect([why, r.skippedJobIds]).toEqual([why, typeof id === 'string' && id.length > 0 ? [id] : []]);
    }
  });
  test('every partition state cuzk names is a state; synth_ms / gpu_ms null before the stage', () => {
    const states = ['pending', 'synthesizing', 'synth_done', 'gpu', 'done', 'failed'];
    const p = pipe('a', states.length, { partitions: states.map((s, i) => part(i, s, i < 1 ? null : 5, i < 3 ? null : 5)) });
    const r = one(p);
    expect(r.skipped).toEqual([]);
    expect(r.status.pipelines[0]).toBe(p); // used as parsed
  });
  test('limits: 1,024 partitions a pipeline, a job id of any length up to 1 MiB, a kind of 1,024 characters', () => {
    expect(one(pipe('a', LIMITS.partitionsPerPipeline)).skipped).toEqual([]);
    expect(one(pipe('a', LIMITS.partitionsPerPipeline + 1)).skipped).toEqual(['pipelines[0]: total_partitions: not a count within limits']);
    const long = 'j'.repeat(LIMITS.jobIdLength);
    expect(one(pipe(long)).status.pipelines[0].job_id).toBe(long);
    const tooLong = one(pipe('j'.repeat(LIMITS.jobIdLength + 1)));
    expect(tooLong.skipped).toEqual(['pipelines[0]: job_id: not a non-empty string']);
    expect(tooLong.skippedJobIds).toEqual([]);
    expect(one(pipe('a', 1, { proof_kind: 'k'.repeat(LIMITS.stringLength) })).skipped).toEqual([]);
  });
  test('durations longer than the daemon has been up (plus the slack) are implausible, named with the bound', () => {
    const up = 100; // s: max 100,000 ms + slack
    const max = up * 1000 + BOUNDS.durationSlackMs;
    expect(one(pipe('a', 1, { started_secs_ago: max / 1000 }), up).implausible).toEqual([]);
    const started = one(pipe('a', 1, { started_secs_ago: max / 1000 + 0.01 }), up);
    expect(started.implausible).toEqual([`pipelines[0]: started_secs_ago ${max / 1000 + 0.01} is longer than the daemon has been up`]);
    expect(started.skipped).toEqual([]);
    expect(started.skippedJobIds).toEqual(['a']);
    expect(started.status.pipelines).toEqual([]);
    expect(one(pipe('a', 1, { partitions: [part(0, 'done', max, max)] }), up).implausible).toEqual([]);
    expect(one(pipe('a', 1, { partitions: [part(0, 'done', max + 1, 1)] }), up).implausible).toEqual([`pipelines[0]: partitions[0]: synth_ms ${max + 1} is longer than the daemon has been up (${max} ms)`]);
    expect(one(pipe('a', 1, { partitions: [part(0, 'done', 1, max + 1)] }), up).implausible).toEqual([`pipelines[0]: partitions[0]: gpu_ms ${max + 1} is longer than the daemon has been up (${max} ms)`]);
    expect(one(pipe('a', 1, { started_secs_ago: 1, partitions: [part(0, 'gpu', null, null)] }), 0).implausible).toEqual([]); // 1 s: the slack
  });
  test('a duplicate job id: the first kept, the second named', () => {
    const r = ok(snap({ pipelines: [pipe('a'), pipe('b'), pipe('a', 1, { proof_kind: 'snap' })] }));
    expect(r.status.pipelines.map((p) => [p.job_id, p.proof_kind])).toEqual([
      ['a', 'porep-c2'],
      ['b', 'porep-c2'],
    ]);
    expect(r.skipped).toEqual(['pipelines[2]: duplicate job_id']);
    expect(r.skippedJobIds).toEqual([]);
  });
  test('the snapshot itself is not changed; its good pipelines are the parsed objects', () => {
    const s = snap({ pipelines: [pipe('a'), 3, pipe('b')] });
    const before = JSON.stringify(s);
    const r = ok(s);
    expect(JSON.stringify(s)).toBe(before);
    expect(r.status.pipelines).toEqual([s.pipelines[0], s.pipelines[2]]);
    expect(r.status.pipelines[1]).toBe(s.pipelines[2]);
    expect(r.skipped).toEqual(['pipelines[1]: not an object']);
  });
});

describe('gpu_workers', () => {
  const one = (w: unknown, uptime = 1000) => ok(snap({ uptime_secs: uptime, gpu_workers: [w] }));
  const proving = (extra: Any = {}) => worker(3, { state: 'proving', current_job: 'a', current_partition: 0, busy_secs: 1, ...extra });
  test('each rule: the worker is left out, named; its id kept where readable and within limits', () => {
    const cases: Array<[unknown, string, number[]]> = [
      [null, 'not an object', []],
      [worker(-1), 'worker_id: not a count within limits', []],
      [worker(LIMITS.workerId + 1), 'worker_id: not a count within limits', []],
      [worker(1, { gpu_ordinal: -1 }), 'gpu_ordinal: not a count within limits', [1]],
      [worker(1, { gpu_ordinal: LIMITS.gpus }), 'gpu_ordinal: not a count within limits', [1]],
      [worker(1, { state: 'busy' }), 'state: not "idle" or "proving"', [1]],
      [worker(LIMITS.workerId, { state: 'busy' }), 'state: not "idle" or "proving"', [LIMITS.workerId]], // the largest id allowed is kept
      [worker(1, { current_job: 5 }), 'current_job: not null or a string', [1]],
      [worker(1, { current_job: undefined }), 'current_job: not null or a string', [1]],
      [worker(1, { current_partition: -1 }), 'current_partition: not null or a count', [1]],
      [worker(1, { current_partition: 'x' }), 'current_partition: not null or a count', [1]],
      [worker(1, { busy_secs: -0.5 }), 'busy_secs: not null or a non-negative number', [1]],
      [proving({ current_job: null }), 'state "proving" without current_job/current_partition', [3]],
      [proving({ current_partition: null }), 'state "proving" without current_job/current_partition', [3]],
    ];
    for (const [w, why, ids] of cases) {
      const r = one(w);
      expect([why, r.skipped]).toEqual([why, [`gpu_workers[0]: ${why}`]]);
      expect([why, r.skippedWorkerIds]).toEqual([why, ids]);
      expect(r.status.gpu_workers).toEqual([]);
    }
  });
  test('good workers as parsed: idle, proving, ids and ordinals at their limits', () => {
    for (const w of [worker(0), proving(), worker(LIMITS.workerId, { gpu_ordinal: LIMITS.gpus - 1 }), worker(2, { current_job: 'x'.repeat(LIMITS.stringLength + 10) })]) {
      const r = one(w);
      expect(r.skipped).toEqual([]);
      expect(r.status.gpu_workers[0]).toBe(w);
    }
  });
  test('busy_secs longer than the daemon has been up is implausible', () => {
    const max = 10 * 1000 + BOUNDS.durationSlackMs;
    expect(one(proving({ busy_secs: max / 1000 }), 10).implausible).toEqual([]);
    const r = one(proving({ busy_secs: max / 1000 + 0.5 }), 10);
    expect(r.implausible).toEqual([`gpu_workers[0]: busy_secs ${max / 1000 + 0.5} is longer than the daemon has been up`]);
    expect(r.skipped).toEqual([]);
    expect(r.skippedWorkerIds).toEqual([3]);
  });
  test('a duplicate worker id: the first kept, the second named', () => {
    const r = ok(snap({ gpu_workers: [worker(0), worker(1), worker(0, { gpu_ordinal: 1 })] }));
    expect(r.status.gpu_workers.map((w) => [w.worker_id, w.gpu_ordinal])).toEqual([
      [0, 0],
      [1, 0],
    ]);
    expect(r.skipped).toEqual(['gpu_workers[2]: duplicate worker_id']);
    expect(r.skippedWorkerIds).toEqual([]);
  });
});
