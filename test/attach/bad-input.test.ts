/**
 * Issue #4, acceptance 3: untrusted input from the daemon (DESIGN §7). Each case, against a
 * real HTTP stand-in for cuzk and the real AttachSource/Telemetry/server, after one good
 * poll of fixture 02:
 *  - cuzk_up 0 and a counted error by reason — or, for a bad part of an otherwise good
 *    snapshot, cuzk_up 1 and a counted skip (bad_field) — never a wrong number: the
 *    metrics not about the failure stay exactly as they were (a running stint is not
 *    counted through time the daemon did not answer);
 *  - exactly one readable log line (one line, says what went wrong), and no second one
 *    when the next poll brings the same problem;
 *  - a live process with a well-formed /metrics (HTTP 200, `promtool check metrics`
 *    clean) and /status still serving the last good snapshot;
 *  - bounded memory: a 50 MB body is refused by --cuzk.max-body-bytes (default 16 MiB)
 *    without being read whole;
 *  - a good snapshot afterwards brings cuzk_up back to 1 and counts nothing twice.
 */
import * as v8 from 'node:v8';
import * as vm from 'node:vm';
import { find, parse, promtoolCheckMetrics, Sample, value } from '../helpers/prom-text';
import { DEFAULT_MAX_BODY_BYTES, Harness, startHarness, warnings } from './harness';
import { fixture } from './snapshots';
import { Behaviour, StatusServer } from './status-server';

const GOOD = fixture('02-snap-busy-consistent.json');
/**
 * Memory kept, not garbage not yet collected: a full GC, a turn of the event loop (V8 frees
 * dead ArrayBuffers' memory on a background sweep, which the next GC completes), another.
 */
v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;
async function keptMemory(): Promise<number> {
  gc();
  await new Promise((r) => setImmediate(r));
  gc();
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
}
const JOB = 'ps-snap-7f3a9c2e-41d8-4b6a-9a0e-5c1d2b3e4f50';
const MB50 = 50 * 1024 * 1024;
/**
 * Poll deadlines, kept apart so a loaded machine cannot turn one case into another: only the
 * polls that test the deadline itself (a daemon that hangs) get TIMEOUT_MS; every other poll
 * (the good ones before and after, and every other bad input) gets GOOD_TIMEOUT_MS, far more
 * than a small local answer takes however busy the machine.
 */
const TIMEOUT_MS = 300;
const GOOD_TIMEOUT_MS = 30_000;

/** Sets the attach source's poll deadline for the polls that follow. */
function setPollTimeout(h: Harness, ms: number): void {
  const opts = (h.source as unknown as { opts?: { timeoutMs?: unknown } }).opts;
  if (!opts || typeof opts.timeoutMs !== 'number') throw new Error('AttachSource keeps no opts.timeoutMs any more: update setPollTimeout in bad-input.test.ts');
  opts.timeoutMs = ms;
}

/** Fixture 02, changed by `f` (a deep copy: the fixture stays intact). */
function good(f: (s: Record<string, any>) => void = () => {}): string {
  const s = JSON.parse(GOOD.text) as Record<string, any>;
  f(s);
  return JSON.stringify(s);
}
const body = (text: string, status = 200, contentType = 'application/json'): Behaviour => ({ kind: 'body', body: text, status, contentType });

interface Case {
  name: string;
  behaviour?: Behaviour;
  /** Instead of a behaviour: the daemon goes away (its port refuses connections). */
  refuse?: true;
  up: 0 | 1;
  /** cuzk_exporter_errors_total{reason} increments on the first bad poll, and on a second identical one. */
  reason: string | null;
  first?: number;
  again?: number;
  /** The warn line logged (null: nothing is logged, the input is fine). */
  log: RegExp | null;
  /** Every metric not about the failure keeps its value (false where the input legitimately changes them). */
  unchanged?: boolean;
  after?: (h: Harness, before: Sample[], after: Sample[]) => Promise<void> | void;
}

const WEIRD_IDS = ['job "with" quotes', 'line one\nline two\r\n\tend', 'ünïcødé-証明-🚀', 'back\\slash{}=,"', ' '];

const CASES: Case[] = [
  { name: 'malformed JSON', behaviour: body('{"uptime_secs": 5321.42, "pipelines": ['), up: 0, reason: 'malformed_json', log: /body is not JSON/ },
  { name: 'an empty body', behaviour: body(''), up: 0, reason: 'malformed_json', log: /body is not JSON/ },
  { name: 'JSON that is not an object', behaviour: body('[1,2,3]'), up: 0, reason: 'invalid_snapshot', log: /rejected: snapshot is not a JSON object/ },
  { name: '100,000 nested arrays', behaviour: body('['.repeat(100_000) + ']'.repeat(100_000)), up: 0, reason: 'invalid_snapshot', log: /not a JSON object/ },
  { name: 'wrong type: uptime_secs a string', behaviour: body(good((s) => (s.uptime_secs = '6010.03'))), up: 0, reason: 'invalid_snapshot', log: /rejected: uptime_secs/ },
  { name: 'wrong type: uptime_secs negative', behaviour: body(good((s) => (s.uptime_secs = -1))), up: 0, reason: 'invalid_snapshot', log: /rejected: uptime_secs/ },
  { name: 'wrong type: gpu_workers an object', behaviour: body(good((s) => (s.gpu_workers = { 0: 'idle' }))), up: 0, reason: 'invalid_snapshot', log: /rejected: gpu_workers/ },
  { name: 'missing section: pipelines', behaviour: body(good((s) => delete s.pipelines)), up: 0, reason: 'invalid_snapshot', log: /rejected: pipelines: missing/ },
  {
    name: 'missing sections: memory, synthesis, counters (kept as last seen)',
    behaviour: body(good((s) => { delete s.memory; delete s.synthesis; delete s.counters; })),
    up: 1, reason: 'bad_field', first: 3, again: 3, log: /skipped malformed parts of the snapshot: memory: missing; synthesis: missing; counters: missing/, unchanged: true,
  },
  {
    name: 'wrong type in one partition (the job is kept as last seen, not dropped)',
    behaviour: body(good((s) => (s.pipelines[0].partitions[9].gpu_ms = '312'))),
    up: 1, reason: 'bad_field', first: 1, again: 1, log: /skipped malformed parts of the snapshot: pipelines\[0\]: partitions\[9\]: synth_ms\/gpu_ms/, unchanged: true,
  },
  {
    name: 'wrong type in one worker (the worker is kept as last seen, not dropped)',
    behaviour: body(good((s) => (s.gpu_workers[1].busy_secs = '0.088'))),
    up: 1, reason: 'bad_field', first: 1, again: 1, log: /skipped malformed parts of the snapshot: gpu_workers\[1\]: busy_secs/, unchanged: true,
  },
  {
    name: 'wrong type in the counters',
    behaviour: body(good((s) => (s.counters.completed_by_kind['snap-update'] = '31'))),
    up: 1, reason: 'bad_field', first: 1, again: 1, log: /skipped malformed parts of the snapshot: counters/, unchanged: true,
  },
  {
    // Issue 12: a long id used to drop its pipeline (and worker) from the metrics. Job ids
    // are identity, never labels: kept whole whatever their length (the body limit bounds them).
    name: 'a job id of 5,000 characters (kept whole, its pipeline and worker counted)',
    behaviour: body(good((s) => {
      s.pipelines.push({ ...s.pipelines[0], job_id: 'x'.repeat(5000) });
      s.gpu_workers[1].current_job = 'x'.repeat(5000);
    })),
    up: 1, reason: null, log: null,
    after: async (h, _before, after) => {
      const st = (await h.status()) as { pipelines: { job_id: string }[]; gpu_workers: { current_job: string }[] };
      expect(st.pipelines.map((p) => p.job_id.length)).toEqual([JOB.length, 5000]);
      expect(st.gpu_workers[1].current_job).toBe('x'.repeat(5000));
      expect(find(after, 'cuzk_partitions', { proof_kind: 'snap-update', state: 'gpu' })).toBe(4);
      expect(value(after, 'cuzk_gpu_worker_busy', { gpu: '0', worker: '1' })).toBe(1);
    },
  },
  {
    name: 'a 50 MB body with its Content-Length',
    behaviour: { kind: 'stream', bytes: MB50, declareLength: true },
    up: 0, reason: 'body_too_large', log: new RegExp(`body of ${MB50} bytes exceeds the limit of ${DEFAULT_MAX_BODY_BYTES}`),
  },
  {
    name: 'a 50 MB chunked body (no length given)',
    behaviour: { kind: 'stream', bytes: MB50, declareLength: false },
    up: 0, reason: 'body_too_large', log: new RegExp(`body exceeds the limit of ${DEFAULT_MAX_BODY_BYTES} bytes`),
  },
  { name: 'a daemon that never answers', behaviour: { kind: 'hang' }, up: 0, reason: 'timeout', log: new RegExp(`no complete answer within ${TIMEOUT_MS} ms`) },
  { name: 'headers, then no body', behaviour: { kind: 'stall-body' }, up: 0, reason: 'timeout', log: new RegExp(`no complete answer within ${TIMEOUT_MS} ms`) },
  { name: 'a body cut short (connection closed)', behaviour: { kind: 'truncate', body: GOOD.text, sendBytes: 100 }, up: 0, reason: 'connect', log: /connection closed before the body was complete/ },
  { name: 'HTTP 500', behaviour: body('internal error', 500, 'text/plain'), up: 0, reason: 'http_status', log: /HTTP 500 Internal Server Error/ },
  { name: 'HTTP 404 with an HTML page', behaviour: body('<html>not here</html>', 404, 'text/html'), up: 0, reason: 'http_status', log: /HTTP 404 Not Found/ },
  { name: 'connection refused (the daemon went away)', refuse: true, up: 0, reason: 'connect', log: /connection refused/ },
  {
    name: 'an unknown proof kind (folded into "other", counted)',
    behaviour: body(good((s) => s.pipelines.push({ ...s.pipelines[0], job_id: 'ni-porep-1', proof_kind: 'porep-c2-ni' }))),
    up: 1, reason: 'unknown_proof_kind', first: 1, again: 0, log: /folded 1 unknown proof kind into proof_kind="other": "porep-c2-ni"/,
    after: (_h, _before, after) => {
      expect(find(after, 'cuzk_partitions', { proof_kind: 'other', state: 'gpu' })).toBe(2);
      expect(find(after, 'cuzk_partitions', { proof_kind: 'other', state: 'synthesizing' })).toBe(4);
      expect(after.filter((s) => s.labels.proof_kind === 'porep-c2-ni')).toEqual([]);
    },
  },
  {
    name: 'job ids with quotes, newlines, non-ASCII (valid: kept whole, never labels)',
    behaviour: body(good((s) => {
      const [p] = s.pipelines;
      s.pipelines.push(...WEIRD_IDS.map((id) => ({ ...p, job_id: id })));
      s.gpu_workers[0].current_job = WEIRD_IDS[1];
      s.gpu_workers[1].current_job = WEIRD_IDS[2];
    })),
    up: 1, reason: null, log: null,
    after: async (h, _before, after) => {
      const st = (await h.status()) as { pipelines: { job_id: string }[]; gpu_workers: { current_job: string }[] };
      expect(st.pipelines.map((p) => p.job_id)).toEqual([JOB, ...WEIRD_IDS]);
      expect(st.gpu_workers.map((w) => w.current_job)).toEqual([WEIRD_IDS[1], WEIRD_IDS[2]]);
      for (const s of after) for (const v of Object.values(s.labels)) expect(WEIRD_IDS).not.toContain(v);
      expect(find(after, 'cuzk_partitions', { proof_kind: 'snap-update', state: 'gpu' })).toBe(2 * (1 + WEIRD_IDS.length));
      // 12 partitions on the GPU, 2 busy workers: more than one per busy worker is split
      // proving (finalizing tails), not a contradiction (issue 14)
      expect(value(after, 'cuzk_status_mismatch')).toBe(0);
    },
  },
];

/** Metrics that legitimately change on any poll, or are about the failure itself. */
const VOLATILE = new Set(['cuzk_up', 'cuzk_surface_up', 'cuzk_exporter_errors_total', 'cuzk_exporter_scrape_duration_seconds', 'cuzk_exporter_events_total']);
/**
 * Stints: running ones grow between two good polls (the workers of fixture 02 stay busy),
 * and a case that moves workers to other jobs ends stints.
 */
const RUNNING = new Set(['cuzk_gpu_worker_busy_seconds_total', 'cuzk_gpu_worker_current_partition_seconds', 'cuzk_gpu_worker_partitions_total']);

const keyed = (samples: Sample[], skip: Set<string>) =>
  Object.fromEntries(samples.filter((s) => !skip.has(s.name)).map((s) => [`${s.name}${JSON.stringify(s.labels)}`, s.value]));

function counters(samples: Sample[]): Record<string, number> {
  return Object.fromEntries(
    samples.filter((s) => /_(total|count|sum|bucket)$/.test(s.name) && !VOLATILE.has(s.name) && !RUNNING.has(s.name)).map((s) => [`${s.name}${JSON.stringify(s.labels)}`, s.value]),
  );
}

async function scrape(h: Harness): Promise<{ body: string; samples: Sample[] }> {
  const { status, body } = await h.metrics();
  expect(status).toBe(200);
  const lint = promtoolCheckMetrics(body);
  if (lint.skipped !== undefined) console.warn(lint.skipped);
  else expect(lint).toEqual({ ok: true, output: '' });
  return { body, samples: parse(body) };
}

describe.each(CASES)('$name', (c) => {
  let daemon: StatusServer;
  let h: Harness;

  beforeAll(async () => {
    daemon = await StatusServer.start();
    h = await startHarness({ url: daemon.url, timeoutMs: GOOD_TIMEOUT_MS });
  });
  afterAll(async () => {
    await h.close();
    await daemon.close();
  });

  test('counted, logged once, no wrong number, well-formed /metrics, recovers', async () => {
    setPollTimeout(h, GOOD_TIMEOUT_MS);
    daemon.behaviour = body(GOOD.text);
    await h.source.pollOnce();
    const base = await scrape(h);
    expect(value(base.samples, 'cuzk_up')).toBe(1);
    h.logs.length = 0;
    const errorsBefore = Object.fromEntries(base.samples.filter((s) => s.name === 'cuzk_exporter_errors_total').map((s) => [s.labels.reason, s.value]));

    const mem0 = await keptMemory();
    if (c.refuse) await daemon.close();
    else daemon.behaviour = c.behaviour!;
    setPollTimeout(h, c.reason === 'timeout' ? TIMEOUT_MS : GOOD_TIMEOUT_MS);
    await h.source.pollOnce();
    const bad = await scrape(h);

    expect(value(bad.samples, 'cuzk_up')).toBe(c.up);
    for (const [reason, n] of Object.entries(errorsBefore)) {
      const want = n + (reason === c.reason ? (c.first ?? 1) : 0);
      expect([reason, value(bad.samples, 'cuzk_exporter_errors_total', { reason })]).toEqual([reason, want]);
    }
    // One readable line (one record, no raw line break), or none for valid input.
    const lines = warnings(h.logs);
    if (c.log === null) expect(lines).toEqual([]);
    else {
      expect(lines).toHaveLength(1);
      expect(h.logs.every((l) => !/[\r\n]/.test(l))).toBe(true);
      expect(lines[0].msg).toMatch(c.log);
      expect(lines[0].source).toBe(daemon.url);
    }

    // No wrong number: nothing but the failure's own series moved; while the daemon does
    // not answer, even running stints stand still.
    if (c.up === 0 || c.unchanged) {
      const skip = c.up === 0 ? VOLATILE : new Set([...VOLATILE, ...RUNNING]);
      expect(keyed(bad.samples, skip)).toEqual(keyed(base.samples, skip));
    }
    if (c.up === 0) {
      // The last good snapshot is still served, with the reason it is stale.
      const st = (await h.status()) as { pipelines: { job_id: string }[]; exporter: { up: boolean; last_error: string } };
      expect(st.pipelines[0].job_id).toBe(JOB);
      expect(st.exporter.up).toBe(false);
      expect(st.exporter.last_error).toMatch(c.log!);
      const ready = await fetch(`${h.server.url}/-/ready`);
      expect(ready.status).toBe(503);
    }
    expect((await fetch(`${h.server.url}/-/healthy`)).status).toBe(200);
    if (c.behaviour?.kind === 'stream') {
      // Refused without reading it whole: the stand-in could not hand over more than the
      // limit plus what loopback socket buffers hold, and nothing of it is kept (heap and
      // buffers after a full GC: what was read and dropped is garbage, which, uncollected,
      // a loaded machine's GC timing made look like up to 35 MB of growth).
      await daemon.streamDone;
      expect(daemon.streamed).toBeLessThan(c.behaviour.declareLength ? 16 * 1024 * 1024 : DEFAULT_MAX_BODY_BYTES + 16 * 1024 * 1024);
      expect((await keptMemory()) - mem0).toBeLessThan(8 * 1024 * 1024);
    }
    if (c.after) await c.after(h, base.samples, bad.samples);

    // The same problem again: counted again, not logged again.
    await h.source.pollOnce();
    const again = await scrape(h);
    if (c.reason) expect(value(again.samples, 'cuzk_exporter_errors_total', { reason: c.reason })).toBe(errorsBefore[c.reason] + (c.first ?? 1) + (c.again ?? 1));
    expect(warnings(h.logs)).toHaveLength(c.log === null ? 0 : 1);

    // A good snapshot again: up, and nothing counted twice.
    if (c.refuse) return;
    setPollTimeout(h, GOOD_TIMEOUT_MS);
    daemon.behaviour = body(GOOD.text);
    await h.source.pollOnce();
    const back = await scrape(h);
    expect(value(back.samples, 'cuzk_up')).toBe(1);
    expect(counters(back.samples)).toEqual(counters(c.up === 0 || c.unchanged ? base.samples : again.samples));
    if (c.up === 0) expect(h.logs.some((l) => /"level":"info".*source is up/.test(l))).toBe(true);
  });
});
