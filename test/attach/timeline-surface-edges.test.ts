/**
 * Issue 23: the TIMELINE surface (src/engine/sources/attach/timeline-surface.ts) path by
 * path, scripted and fast enough to run for every mutant: the surface is built alone (no
 * merge, no file, no timer), fed hand-written TIMELINE lines with read times the test sets,
 * and swept when the test says.
 *
 * Expectations come from upstream cuzk's TIMELINE format and behaviour (curio e0294b0f,
 * extern/cuzk/cuzk-core/src/engine.rs `timeline_event`: `TIMELINE,<offset_ms>,<event>,
 * <job_id>,<detail>` on stderr, offsets in ms since the engine started; per partition
 * SYNTH_START / SYNTH_END synth_ms / GPU_QUEUE / GPU_PICKUP / GPU_START / GPU_END gpu_ms;
 * monolithic jobs SYNTH_START kind=<kind> and GPU_QUEUE monolithic; no GPU_END when GPU
 * proving fails; a pickup of a failed job's partition is dropped with no GPU_START;
 * CUZK_DISABLE_SPLIT_PROVE=1 writes no GPU_START/GPU_END), docs/upstream-conformance.md,
 * and the rules in the headers of timeline-surface.ts and timeline-clock.ts (a running
 * stint is exposed up to what the log was read to less a lag of at least 1 s; a unit with
 * no end is given up after max(60 s, 3x the longest stage of its kind); a job with no kind
 * is counted under "other" after unresolvedMs; lines read by the catch-up never count).
 *
 * Clock: a line written at offset X is read at E + (X + 2) ms, so a run's time is its
 * offsets; a quiet log read to offset X exposes X - 1000 ms (the 1 s minimum lag).
 */
import {
  TimelineSurface,
  TIMELINE_ERRORS,
  SNAP_MIN_PARTITION,
  type TimelineOptions,
  type KindSource,
} from '../../src/engine/sources/attach/timeline-surface';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { ErrorCounts } from '../../src/engine/model/error-counts';
import { kindIndex, LIVE_PARTITION_STATES, OTHER_KIND_INDEX, PART_FINALIZING, PART_GPU, PART_SYNTHESIZING, PART_SYNTH_DONE } from '../../src/engine/model/kinds';
import { END_ABANDONED, END_DONE, END_FAILED, END_LOST, END_NONE, END_SKIPPED, END_UNSEEN, MONO, type TlUnit } from '../../src/engine/sources/attach/timeline-jobs';
import type { Logger } from '../../src/util/logger';
import type { Every } from '../../src/engine/sources/timers';

import { PC2, SNAP, WPOST, WIN, OTHER, MS, E, LATE, tl, H, part } from './timeline-surface-harness';

describe('construction and the follower side', () => {
  test('every reason declared at 0; named for its file, standard input or label; nothing seen yet', () => {
    const h = new H();
    for (const r of [...TIMELINE_ERRORS, 'implausible', 'unknown_proof_kind']) expect([r, h.err(r)]).toEqual([r, 0]);
    expect([...h.errors.entries()].map(([r]) => r).sort()).toEqual([...TIMELINE_ERRORS, 'implausible', 'unknown_proof_kind'].sort());
    expect(h.s.name).toBe('timeline');
    expect(h.s.target).toBe('/nonexistent/cuzk.log');
    expect(new H({ path: '-' }).s.target).toBe('standard input');
    expect(new H({ path: '-', label: 'journalctl -fu cuzk' }).s.target).toBe('journalctl -fu cuzk');
    expect(h.s.up).toBe(false);
    expect(h.s.everUp).toBe(false);
    expect(h.s.lastOffsetMs).toBe(-1);
    expect(h.s.nowNs()).toBe(0);
    expect(h.s.claim(0)).toBeNull();
    expect(h.s.workerIds()).toEqual([]);
    expect(h.s.splitMode).toBe('unknown');
    expect(h.s.pendingBytes).toBe(0);
    h.s.sweep(); // no run yet: nothing to do
    expect(h.s.jobs.size).toBe(0);
  });

  test('start() runs the sweep on the given timers (1 s by default, unref), stop() stops it; sweepMs 0: no sweep timer', async () => {
    const calls: { period: number; fn: () => void; opts?: { unref?: boolean } }[] = [];
    let stopped = 0;
    const every: Every = (period, fn, opts) => {
      calls.push({ period, fn, opts });
      return () => void stopped++;
    };
    const h = new H({ sweepMs: undefined, every, pollMs: 777, confirmMs: 500 });
    h.s.start();
    const sweeps = calls.filter((c) => c.period !== 777);
    expect(sweeps.map((c) => [c.period, c.opts])).toEqual([[1000, { unref: true }]]);
    // The timer's callback is a sweep: a tentative pickup with no GPU_START for > confirmMs
    // while the split mode is unknown means CUZK_DISABLE_SPLIT_PROVE.
    h.nowMs = 100;
    h.write(tl(100, 'GPU_PICKUP', 'job-a', 'worker=0,partition=0'));
    h.readTo(2000);
    expect(h.s.splitMode).toBe('unknown');
    sweeps[0].fn();
    expect(h.s.splitMode).toBe('off');
    const before = stopped;
    await h.s.stop();
    expect(stopped - before).toBeGreaterThanOrEqual(1);
    const sweepStops = stopped - before;
    // The follower's look runs on the same timers, at pollMs.
    expect(calls.filter((c) => c.period === 777)).toHaveLength(1);

    const calls2: number[] = [];
    let stopped2 = 0;
    const h2 = new H({ sweepMs: 0, pollMs: 777, every: (p) => (calls2.push(p), () => void stopped2++) });
    h2.s.start();
    expect(calls2.filter((p) => p !== 777)).toEqual([]);
    await h2.s.stop();
    // One stopper fewer than the surface with a sweep timer (the follower's own, if any, alike).
    expect(sweepStops - stopped2).toBe(1);

    const calls4: number[] = [];
    const h4 = new H({ sweepMs: undefined, every: (p) => (calls4.push(p), () => undefined) });
    h4.s.start();
    expect(calls4.sort((a, b) => a - b)).toEqual([100, 1000]); // defaults: a look every 100 ms, a sweep every second
    await h4.s.stop();

    const calls3: number[] = [];
    const h3 = new H({ sweepMs: 250, pollMs: 777, every: (p) => (calls3.push(p), () => undefined) });
    h3.s.start();
    expect(calls3.filter((p) => p !== 777)).toEqual([250]);
    await h3.s.stop();
  });

  test('state(): down counted once per reason while down, again after being up; up logged once', () => {
    const h = new H();
    h.s.state(false, 'timeline_missing', 'no file yet');
    expect(h.err('timeline_missing')).toBe(1);
    expect(h.s.up).toBe(false);
    expect(h.s.everUp).toBe(false);
    h.s.state(false, 'timeline_missing', 'no file yet');
    expect(h.err('timeline_missing')).toBe(1); // the same reason while down: once
    h.s.state(false, 'timeline_read', 'cannot read');
    expect(h.err('timeline_read')).toBe(1); // another reason: counted
    expect(h.warns()).toEqual(['no file yet', 'cannot read']); // the same message within a minute: throttled
    h.s.state(true, null, 'following /x');
    expect(h.s.up).toBe(true);
    expect(h.s.everUp).toBe(true);
    expect(h.infos()).toEqual(['following /x']);
    h.s.state(true, null, 'following /x');
    expect(h.infos()).toEqual(['following /x']); // up while up: not logged again
    h.s.state(true, 'timeline_eof', 'at its end');
    expect(h.err('timeline_eof')).toBe(1); // a reason while up is counted
    h.s.state(false, 'timeline_missing', 'gone');
    expect(h.err('timeline_missing')).toBe(2); // was up: counted again
    expect(h.s.up).toBe(false);
    expect(h.s.everUp).toBe(true);
    h.s.state(false, 'timeline_missing', 'gone');
    expect(h.err('timeline_missing')).toBe(2);
    h.s.state(true, null, 'back');
    expect(h.infos()).toEqual(['following /x', 'back']);
    h.s.state(false, 'timeline_missing', 'gone again');
    expect(h.err('timeline_missing')).toBe(3);
    expect(h.warns()).toContain('gone again');
  });

  test('its log lines name the surface and its source', () => {
    const h = new H({ path: '-', label: 'journalctl -fu cuzk' });
    h.s.lost('timeline_skipped', 'skipped');
    expect(h.logs).toEqual([{ level: 'warn', msg: 'skipped', fields: { surface: 'timeline', source: 'journalctl -fu cuzk' } }]);
  });

  test('start-up catch-up: an existing file is read from its last 8 MiB by default (as history)', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tl-edges-'));
    try {
      const file = path.join(dir, 'cuzk.log');
      const filler = `${'x'.repeat(1023)}\n`.repeat(2048); // 2 MiB of other output
      fs.writeFileSync(file, tl(100, 'GPU_QUEUE', 'porep-1-1', 'partition=0') + filler + tl(200, 'GPU_QUEUE', 'porep-1-2', 'partition=0'));
      const h = new H({ path: file, every: () => () => undefined });
      h.s.start();
      for (let i = 0; i < 50 && h.s.jobs.size < 2; i++) await h.s.poll();
      await h.s.stop();
      expect([...h.s.jobs.keys()].sort()).toEqual(['porep-1-1', 'porep-1-2']);
      expect(h.s.up).toBe(true);
      const small = new H({ path: file, every: () => () => undefined, catchUpBytes: 4096 });
      small.s.start();
      for (let i = 0; i < 50 && small.s.jobs.size < 1; i++) await small.s.poll();
      await small.s.stop();
      expect([...small.s.jobs.keys()]).toEqual(['porep-1-2']);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  test('lost() and overlong() count their reasons; an overlong non-TIMELINE line is nothing', () => {
    const h = new H({ maxLineBytes: 300 });
    h.s.lost('timeline_skipped', 'skipped 9 MiB');
    h.s.lost('timeline_rewritten', 'rewritten');
    expect(h.err('timeline_skipped')).toBe(1);
    expect(h.err('timeline_rewritten')).toBe(1);
    expect(h.warns()).toEqual(['skipped 9 MiB', 'rewritten']);
    h.s.overlong(false);
    expect(h.err('timeline_line_too_long')).toBe(0);
    h.s.overlong(true);
    expect(h.err('timeline_line_too_long')).toBe(1);
    expect(h.warns()[2]).toBe('a TIMELINE line longer than 300 bytes was dropped');
  });

  test('caughtUp() only moves the read marks forward; newFile() forgets the end-of-file fact', () => {
    const h = new H();
    h.s.caughtUp(E + 5000 * MS);
    expect(h.s.clock.lastEofHr).toBe(E + 5000 * MS);
    expect(h.s.clock.eofFactHr).toBe(E + 5000 * MS);
    h.s.caughtUp(E + 4000 * MS);
    expect(h.s.clock.lastEofHr).toBe(E + 5000 * MS);
    expect(h.s.clock.eofFactHr).toBe(E + 5000 * MS);
    expect(h.s.readUntilHr()).toBe(E + 4000 * MS); // less the 1 s lag
    h.s.newFile();
    expect(h.s.clock.eofFactHr).toBe(-Infinity);
    expect(h.s.clock.lastEofHr).toBe(E + 5000 * MS);
    h.s.caughtUp(E + 4500 * MS);
    expect(h.s.clock.eofFactHr).toBe(E + 4500 * MS);
  });

  test('lines(): the log counts as up once lines come; a torn head waiting for its rest is held (pendingBytes)', () => {
    const h = new H();
    const colour = '\x1b[2m2026-12-01T10:00:00.123456Z\x1b[0m \x1b[32m INFO\x1b[0m \x1b[2mcuzk_core::engine\x1b[0m: GPU_TIMING hot_path worker_id=1';
    h.s.lines(`TIMELINE,12,GPU_PICKUP,job-a${colour}\n`, false, E + 14 * MS);
    expect(h.s.everUp).toBe(true);
    expect(h.s.pendingBytes).toBe('TIMELINE,12,GPU_PICKUP,job-a'.length);
    h.s.lines(',worker=0,partition=0\n', false, E + 14 * MS);
    expect(h.s.pendingBytes).toBe(0);
    expect(h.s.eventsTotal).toBe(1);
    expect(h.s.workerIds()).toEqual([0]);
  });
});

describe('lines that are not used', () => {
  test('malformed, unknown event, worker out of range: counted each by reason, the text (first 120 characters) logged', () => {
    const h = new H();
    const longJob = 'j'.repeat(200);
    h.write(`TIMELINE,abc,GPU_PICKUP,${longJob},worker=0\n`);
    expect(h.err('timeline_malformed')).toBe(1);
    const text = `TIMELINE,abc,GPU_PICKUP,${longJob},worker=0`.slice(0, 120);
    expect(h.warns()).toEqual([`a TIMELINE line does not parse: ${JSON.stringify(text.slice(0, 64) + '…')}`]);
    h.write(tl(5, 'GPU_REWIND', 'job-a', 'worker=0'));
    expect(h.err('timeline_unknown_event')).toBe(1);
    expect(h.warns()[1]).toBe(`a TIMELINE line has an unknown event: ${JSON.stringify('TIMELINE,5,GPU_REWIND,job-a,worker=0')}`);
    h.write(tl(6, 'GPU_PICKUP', 'job-a', 'worker=4096,partition=0'));
    expect(h.err('timeline_worker_out_of_range')).toBe(1);
    expect(h.warns()[2]).toBe(`a TIMELINE line names a worker id above 4095: ${JSON.stringify('TIMELINE,6,GPU_PICKUP,job-a,worker=4096,partition=0')}`);
    expect(h.err('timeline_malformed')).toBe(1);
    expect(h.err('timeline_unknown_event')).toBe(1);
    expect(h.s.eventsTotal).toBe(0);
    expect(h.s.jobs.size).toBe(0);
  });

  test('a line cut to its first 120 characters in the log: a short malformed line whole', () => {
    const h = new H();
    h.write('TIMELINE,1,GPU_PICKUP\n'); // no job
    expect(h.warns()).toEqual([`a TIMELINE line does not parse: ${JSON.stringify('TIMELINE,1,GPU_PICKUP')}`]);
  });

  test('a torn line that cannot be put back together: timeline_torn, its head (first 120 characters) quoted', () => {
    const h = new H();
    const colour = '\x1b[2m2026-12-01T10:00:00.123456Z\x1b[0m \x1b[32m INFO\x1b[0m \x1b[2mcuzk_core::engine\x1b[0m: GPU_TIMING hot_path worker_id=1';
    const job = 'q'.repeat(130);
    h.write(`TIMELINE,8123,GPU_END,${job}${colour}\n`, tl(8124, 'GPU_QUEUE', 'job-b', 'partition=0'));
    expect(h.err('timeline_torn')).toBe(1);
    const head = `TIMELINE,8123,GPU_END,${job}`.slice(0, 120);
    expect(h.warns()).toEqual([`a TIMELINE line torn by other output could not be put back together: ${JSON.stringify(head.slice(0, 64) + '…')}`]);
    expect(h.s.eventsTotal).toBe(1);
  });

  test('a TIMELINE line over maxLineBytes: dropped, timeline_line_too_long', () => {
    const h = new H({ maxLineBytes: 200 });
    h.write(tl(5, 'GPU_QUEUE', 'x'.repeat(300), 'partition=0'), tl(6, 'GPU_QUEUE', 'job-b', 'partition=0'));
    expect(h.err('timeline_line_too_long')).toBe(1);
    expect(h.warns()).toEqual(['a TIMELINE line longer than 200 bytes was dropped']);
    expect(h.s.eventsTotal).toBe(1);
  });
});

/** hrtime of offset X of the first run (read LATE ms after it was written). */
const hrOf = (x: number) => E + (x + LATE) * MS;

describe('durations: no longer than the engine has been up, no longer than their lines span', () => {
  test('GPU_END gpu_ms over offset + 1 s: implausible, nothing counted; at offset + 1 s exactly: only the span from its pickup', () => {
    const h = new H();
    h.nowMs = 2000;
    h.write(tl(2000, 'GPU_PICKUP', 'porep-1-1', 'worker=0,partition=0'), tl(2000, 'GPU_START', 'porep-1-1', 'worker=0,partition=0'));
    h.nowMs = 2500;
    h.write(tl(2500, 'GPU_END', 'porep-1-1', 'worker=0,partition=0,gpu_ms=3501'));
    expect(h.err('implausible')).toBe(1);
    expect(h.warns()).toEqual(['TIMELINE: gpu_ms 3501 is longer than the engine has been up (2500 ms); not counted']);
    expect([h.gpuMs(PC2), h.parts(PC2), h.busyMs(0), h.s.workers.busy[0]]).toEqual([0, 0, 0, 0]);
    expect(h.unit('porep-1-1').end).toBe(END_DONE);
    h.nowMs = 3000;
    h.write(tl(3000, 'GPU_PICKUP', 'porep-1-1', 'worker=0,partition=1'), tl(3000, 'GPU_START', 'porep-1-1', 'worker=0,partition=1'));
    h.nowMs = 3500;
    h.write(tl(3500, 'GPU_END', 'porep-1-1', 'worker=0,partition=1,gpu_ms=4500'));
    expect(h.err('implausible')).toBe(2);
    expect(h.warns()[1]).toBe('TIMELINE: GPU_END of job "porep-1-1" claims gpu_ms 4500, but its GPU_PICKUP was 500 ms earlier; only that span counted');
    expect([h.gpuMs(PC2), h.parts(PC2), h.busyMs(0)]).toEqual([500, 1, 500]);
    expect(h.s.workers.parts[0]).toBe(1);
  });

  test('SYNTH_END synth_ms over offset + 1 s: implausible, not counted; at offset + 1 s: only the span from its SYNTH_START', () => {
    const h = new H();
    h.nowMs = 4000;
    h.write(tl(4000, 'SYNTH_START', 'porep-1-2', 'partition=0'), tl(4000, 'SYNTH_START', 'porep-1-2', 'partition=1'));
    h.nowMs = 4300;
    h.write(tl(4300, 'SYNTH_END', 'porep-1-2', 'partition=0,synth_ms=5301'));
    expect(h.err('implausible')).toBe(1);
    expect(h.warns()).toEqual(['TIMELINE: synth_ms 5301 is longer than the engine has been up (4300 ms); not counted']);
    expect(h.synthMs(PC2)).toBe(0);
    expect(h.unit('porep-1-2', 0).state).toBe(PART_SYNTH_DONE);
    h.write(tl(4300, 'SYNTH_END', 'porep-1-2', 'partition=1,synth_ms=5300'));
    expect(h.err('implausible')).toBe(2);
    expect(h.warns()[1]).toBe('TIMELINE: SYNTH_END of job "porep-1-2" claims synth_ms 5300, but its SYNTH_START was 300 ms earlier; only that span counted');
    expect(h.synthMs(PC2)).toBe(300);
  });

  test('within the lines’ span plus 2 ms (whole-ms truncation): counted as claimed; 1 ms more: the span', () => {
    const h = new H();
    const J = 'porep-2-2';
    h.nowMs = 1000;
    h.write(tl(1000, 'SYNTH_START', J, 'partition=0'), tl(1000, 'SYNTH_START', J, 'partition=1'));
    h.nowMs = 1500;
    h.write(tl(1500, 'SYNTH_END', J, 'partition=0,synth_ms=502'));
    expect([h.synthMs(PC2), h.err('implausible')]).toEqual([502, 0]);
    h.write(tl(1500, 'SYNTH_END', J, 'partition=1,synth_ms=503'));
    expect([h.synthMs(PC2), h.err('implausible')]).toEqual([1002, 1]);
    // A SYNTH_END whose SYNTH_START was never seen: no span to hold it to.
    h.write(tl(1500, 'SYNTH_END', J, 'partition=2,synth_ms=700'));
    expect([h.synthMs(PC2), h.err('implausible')]).toEqual([1702, 1]);
    h.nowMs = 2000;
    h.write(tl(2000, 'GPU_PICKUP', J, 'worker=0,partition=0'), tl(2000, 'GPU_START', J, 'worker=0,partition=0'));
    h.write(tl(2000, 'GPU_PICKUP', J, 'worker=1,partition=1'), tl(2000, 'GPU_START', J, 'worker=1,partition=1'));
    h.nowMs = 2400;
    h.write(tl(2400, 'GPU_END', J, 'worker=0,partition=0,gpu_ms=402'));
    expect([h.gpuMs(PC2), h.err('implausible')]).toEqual([402, 1]);
    h.write(tl(2400, 'GPU_END', J, 'worker=1,partition=1,gpu_ms=403'));
    expect([h.gpuMs(PC2), h.err('implausible')]).toEqual([802, 2]);
    expect([h.busyMs(0), h.busyMs(1)]).toEqual([400, 400]);
  });

  test('the catch-up’s lines: state only, nothing counted, no error', () => {
    const h = new H();
    h.nowMs = 3000;
    h.history(
      tl(1000, 'SYNTH_START', 'porep-3-3', 'partition=0'),
      tl(1200, 'SYNTH_END', 'porep-3-3', 'partition=0,synth_ms=9999'),
      tl(1200, 'GPU_PICKUP', 'porep-3-3', 'worker=0,partition=0'),
      tl(1200, 'GPU_START', 'porep-3-3', 'worker=0,partition=0'),
      tl(1700, 'GPU_END', 'porep-3-3', 'worker=0,partition=0,gpu_ms=500'),
      tl(1800, 'GPU_PICKUP', 'porep-3-3', 'worker=0,partition=1'),
      tl(1800, 'GPU_START', 'porep-3-3', 'worker=0,partition=1'),
      tl(1900, 'GPU_END', 'porep-3-3', 'worker=0,partition=1,gpu_ms=9999'),
    );
    expect(h.err('implausible')).toBe(0);
    expect(h.warns()).toEqual([]);
    expect([h.gpuMs(PC2), h.synthMs(PC2), h.parts(PC2), h.busyMs(0)]).toEqual([0, 0, 0, 0]);
    expect(h.s.eventsTotal).toBe(8);
    expect(h.s.jobById('porep-3-3')!.units.map((u) => u.end)).toEqual([END_DONE, END_DONE]);
  });

  test('per-partition observations: a partition’s index, 0 for a monolithic job', () => {
    const h = new H();
    const seen: string[] = [];
    h.s.observer = {
      partitionGpu: (k, s, _j, p) => void seen.push(`gpu ${k} ${s} ${p}`),
      partitionSynthesis: (k, s, _j, p) => void seen.push(`synth ${k} ${s} ${p}`),
    };
    const W = 'winpost-1000-0a0b';
    h.nowMs = 1000;
    h.write(tl(1000, 'SYNTH_START', W, 'kind=winning-post'), tl(1000, 'SYNTH_START', 'snap-1-1', 'partition=3'));
    h.nowMs = 1250;
    h.write(tl(1250, 'SYNTH_END', W, 'synth_ms=250'), tl(1250, 'SYNTH_END', 'snap-1-1', 'partition=3,synth_ms=250'));
    h.write(tl(1250, 'GPU_QUEUE', W, 'monolithic'), tl(1250, 'GPU_PICKUP', W, 'worker=0'), tl(1250, 'GPU_START', W, 'worker=0'));
    h.feed(...part('snap-1-1', 3, 1, 1250, 1500));
    h.nowMs = 1500;
    h.write(tl(1500, 'GPU_END', W, 'worker=0,gpu_ms=250'));
    expect(seen).toEqual([`synth ${WIN} 0.25 0`, `synth ${SNAP} 0.25 3`, `gpu ${SNAP} 0.25 3`, `gpu ${WIN} 0.25 0`]);
  });
});

describe('proof kinds', () => {
  test('a monolithic SYNTH_START names its kind; PoRep or SnapDeals monolithic is batched proving; PoSt is not', () => {
    const h = new H();
    h.nowMs = 100;
    h.write(tl(100, 'SYNTH_START', 'wd-1', 'kind=window-post'));
    expect([h.s.jobById('wd-1')!.kind, h.s.jobById('wd-1')!.evidence]).toEqual([WPOST, 'timeline']);
    expect(h.s.kinds.counts.get('timeline')).toBe(1);
    expect(h.s.batchedSeen).toBe(false);
    h.write(tl(100, 'SYNTH_START', 'b-1', 'kind=porep-c2'));
    expect(h.s.jobById('b-1')!.kind).toBe(PC2);
    expect(h.s.batchedSeen).toBe(true);
    const h2 = new H();
    h2.write(tl(100, 'SYNTH_START', 'b-2', 'kind=snap-update'));
    expect(h2.s.jobById('b-2')!.kind).toBe(SNAP);
    expect(h2.s.batchedSeen).toBe(true);
    const h3 = new H();
    h3.write(tl(100, 'SYNTH_START', 'b-3', 'kind=winning-post'));
    expect(h3.s.batchedSeen).toBe(false);
    expect(h3.err('unknown_proof_kind')).toBe(0);
  });

  test('an unknown kind name: folded into "other", counted, logged; a job whose kind is known keeps it', () => {
    const h = new H();
    h.write(tl(100, 'SYNTH_START', 'z-1', 'kind=zk-fancy'));
    expect(h.s.jobById('z-1')!.kind).toBe(OTHER);
    expect(h.err('unknown_proof_kind')).toBe(1);
    expect(h.warns()).toEqual(['folded an unknown proof kind into proof_kind="other": "zk-fancy"']);
    expect(h.s.batchedSeen).toBe(false);
    // The same id started again naming another kind: the kind known stands, nothing folded.
    h.write(tl(200, 'SYNTH_START', 'w-1', 'kind=porep-c2'), tl(300, 'SYNTH_START', 'w-1', 'kind=zk-other'));
    expect(h.s.jobById('w-1')!.kind).toBe(PC2);
    expect(h.err('unknown_proof_kind')).toBe(1);
    expect(h.s.kinds.counts.get('timeline')).toBe(2);
  });

  test('a partitioned job: partition index 10 or more is SnapDeals; 9 says nothing', () => {
    const h = new H();
    h.write(tl(100, 'SYNTH_START', 'job-a', 'partition=9'));
    expect(h.s.jobById('job-a')!.kind).toBe(-1);
    h.write(tl(100, 'SYNTH_START', 'job-a', `partition=${SNAP_MIN_PARTITION}`));
    expect([h.s.jobById('job-a')!.kind, h.s.jobById('job-a')!.evidence]).toEqual([SNAP, 'partition_index']);
    expect(h.s.kinds.counts.get('partition_index')).toBe(1);
  });

  test('the resolver (other surfaces) and Curio’s request ids resolve a job at its first line, before any sweep', () => {
    const h = new H();
    const asked: string[] = [];
    h.s.resolver = (id) => (asked.push(id), id === 'job-r' ? { kind: WPOST, evidence: 'status' } : id === 'job-neg' ? { kind: -1, evidence: 'status' } : null);
    h.write(tl(10, 'SYNTH_START', 'job-r', 'partition=0'), tl(10, 'SYNTH_START', 'porep-9-9', 'partition=0'), tl(10, 'SYNTH_START', 'job-neg', 'partition=0'));
    expect([h.s.jobById('job-r')!.kind, h.s.jobById('job-r')!.evidence]).toEqual([WPOST, 'status']);
    expect([h.s.jobById('porep-9-9')!.kind, h.s.jobById('porep-9-9')!.evidence]).toEqual([PC2, 'request_id']);
    expect(h.s.jobById('job-neg')!.kind).toBe(-1);
    expect(asked).toContain('job-r');
  });

  test('resolvePending(): what the other surfaces learnt since, its waiting time counted then', () => {
    const h = new H();
    const J = 'job-p';
    h.nowMs = 1000;
    h.write(tl(1000, 'SYNTH_START', J, 'partition=0'));
    h.nowMs = 1200;
    h.write(tl(1200, 'SYNTH_END', J, 'partition=0,synth_ms=200'));
    h.feed(...part(J, 0, 0, 1200, 1700));
    expect(h.s.jobById(J)!.kind).toBe(-1);
    expect([h.gpuMs(OTHER), h.gpuMs(SNAP)]).toEqual([0, 0]);
    h.s.resolvePending(); // nothing known yet
    expect(h.s.jobById(J)!.kind).toBe(-1);
    let known = false;
    h.s.resolver = (id) => (known && id === J ? { kind: SNAP, evidence: 'grpc_status' } : null);
    known = true;
    h.s.resolvePending();
    expect([h.s.jobById(J)!.kind, h.s.jobById(J)!.evidence]).toEqual([SNAP, 'grpc_status']);
    expect([h.gpuMs(SNAP), h.synthMs(SNAP), h.parts(SNAP)]).toEqual([500, 200, 1]);
    expect(h.s.kinds.counts.get('grpc_status')).toBe(1);
  });

  test('a job that ended with no kind: "other" after unresolvedMs (counted, logged) — not a moment before', () => {
    const h = new H({ unresolvedMs: 5000 });
    const J = 'job-u';
    h.nowMs = 1000;
    h.feed(...part(J, 0, 0, 1000, 1500));
    h.at(1500 + 5000 + 1000 - 1); // the run's clock is 1 s behind what was read
    expect(h.s.jobById(J)!.kind).toBe(-1);
    expect(h.err('timeline_unresolved_kind')).toBe(0);
    h.at(1500 + 5000 + 1000);
    expect([h.s.jobById(J)!.kind, h.s.jobById(J)!.evidence]).toEqual([OTHER, 'unresolved']);
    expect(h.err('timeline_unresolved_kind')).toBe(1);
    expect(h.gpuMs(OTHER)).toBe(500);
    expect(h.warns()).toEqual([
      'a partitioned job ended without its proof kind becoming known; counted under proof_kind="other" (attach --cuzk.status-url or --cuzk.grpc-address to resolve kinds)',
    ]);
    expect(h.s.kinds.counts.get('unresolved')).toBe(1);
  });

  test('unresolvedMs defaults to 60 s; a job with nothing waiting goes to "other" uncounted', () => {
    const h = new H();
    h.nowMs = 1000;
    h.feed(...part('job-u', 0, 0, 1000, 1500));
    h.history(...part('job-h', 0, 1, 1000, 1500)); // the catch-up's: nothing counted, nothing waits
    const u = h.s.jobById('job-u')!;
    const hj = h.s.jobById('job-h')!;
    h.at(1500 + 59_999 + 1000);
    expect([u.kind, hj.kind]).toEqual([-1, -1]);
    h.at(1500 + 60_000 + 1000); // also quiet for 60 s: forgotten, its kind settled first
    expect([u.kind, hj.kind]).toEqual([OTHER, OTHER]);
    expect(h.err('timeline_unresolved_kind')).toBe(1);
    expect(h.s.kinds.counts.get('unresolved')).toBe(2);
    expect(h.gpuMs(OTHER)).toBe(500);
  });

  test('GetMetrics’ proof counts: known kinds matched first, the rest inferred only when certain', () => {
    const h = new H();
    h.s.proofsEnded(Float64Array.from([1, 0, 0, 0, 0]), hrOf(0)); // before any line: nothing
    h.nowMs = 1000;
    const [a0, a1, a2] = part('job-a', 0, 0, 1000, 2000);
    const [p0, p1, p2] = part('porep-1-1', 0, 2, 1000, 2500);
    const [b0, b1, b2] = part('job-b', 0, 1, 1000, 3000);
    h.feed(a0, a1, p0, p1, b0, b1, a2, p2, b2);
    const a = h.s.jobById('job-a')!;
    const b = h.s.jobById('job-b')!;
    const p = h.s.jobById('porep-1-1')!;
    expect([a.endedT, b.endedT, p.endedT].map((t) => h.s.toHr(t))).toEqual([hrOf(2000), hrOf(3000), hrOf(2500)]);
    const counts = (o: Record<string, number>) => {
      const f = new Float64Array(OTHER + 1);
      for (const [k, n] of Object.entries(o)) f[kindIndex(k)] = n;
      return f;
    };
    // Two kinds unexplained: nothing inferred.
    h.s.proofsEnded(counts({ 'porep-c2': 1, 'snap-update': 1, 'window-post': 1 }), hrOf(3500));
    expect([a.kind, b.kind]).toEqual([-1, -1]);
    expect(p.accounted).toBe(true); // the PoRep it counted is that job's
    // Not as many unexplained as jobs without a kind: nothing.
    h.s.proofsEnded(counts({ 'snap-update': 3 }), hrOf(3500));
    expect([a.kind, b.kind]).toEqual([-1, -1]);
    h.s.proofsEnded(counts({ 'snap-update': 1 }), hrOf(3500));
    expect([a.kind, b.kind]).toEqual([-1, -1]);
    // A PoRep again: the PoRep job was counted already; one kind left, one job too many.
    h.s.proofsEnded(counts({ 'porep-c2': 1 }), hrOf(3500));
    expect([a.kind, b.kind]).toEqual([-1, -1]);
    h.s.proofsEnded(counts({ 'snap-update': 2 }), hrOf(3500));
    expect([a.kind, a.evidence, b.kind, b.evidence]).toEqual([SNAP, 'grpc_metrics', SNAP, 'grpc_metrics']);
    expect([a.accounted, b.accounted, p.accounted]).toEqual([true, true, true]);
    expect(h.s.kinds.counts.get('grpc_metrics')).toBe(2);
  });

  test('GetMetrics: a job is a candidate from its end to 30 s after; once matched, never again; the oldest first', () => {
    const h = new H();
    h.nowMs = 1000;
    const [a0, a1, a2] = part('porep-1-1', 0, 0, 1000, 2000);
    const [b0, b1, b2] = part('porep-1-2', 0, 1, 1000, 2500);
    const [c0, c1, c2] = part('job-c', 0, 2, 1000, 3000);
    h.feed(a0, a1, b0, b1, c0, c1, a2, b2, c2);
    const p1 = h.s.jobById('porep-1-1')!;
    const p2 = h.s.jobById('porep-1-2')!;
    const c = h.s.jobById('job-c')!;
    const one = (k: number, n = 1) => {
      const f = new Float64Array(OTHER + 1);
      f[k] = n;
      return f;
    };
    // Answered before job-c ended: job-c is no candidate; one PoRep: the older of the two.
    h.s.proofsEnded(one(WPOST), hrOf(3000) - 1);
    expect(c.kind).toBe(-1);
    h.s.proofsEnded(one(PC2), hrOf(2500));
    expect([p1.accounted, p2.accounted]).toEqual([true, false]);
    // job-c ended exactly at the answer: a candidate; the PoRep left explains p2, not c.
    h.s.proofsEnded(one(PC2), hrOf(3000));
    expect([p2.accounted, c.kind]).toEqual([true, -1]);
    // 30 s after its end: no longer a candidate; 1 ns less: still one.
    h.s.proofsEnded(one(WPOST), hrOf(3000) + 30e9);
    expect(c.kind).toBe(-1);
    h.s.proofsEnded(one(WPOST), hrOf(3000) + 30e9 - 1);
    expect([c.kind, c.evidence]).toEqual([WPOST, 'grpc_metrics']);
  });
});

describe('pickups, starts and split proving', () => {
  /** A surface in split mode, known from one finished partition (500 ms) of porep-0-0 on worker 7. */
  function split(o: Partial<TimelineOptions> = {}): H {
    const h = new H(o);
    h.feed(...part('porep-0-0', 0, 7, 100, 600));
    expect(h.s.splitMode).toBe('on');
    expect(h.infos()).toEqual([]); // unknown -> on: nothing to say
    return h;
  }

  test('a pickup with no GPU_START: a skip after confirmMs (5 s), not a moment before; nothing counted', () => {
    const h = split();
    h.feed(tl(2000, 'GPU_PICKUP', 'porep-1-1', 'worker=0,partition=1'));
    expect(h.s.claim(0)).toBeNull(); // tentative: vouches for nothing
    h.at(2000 + 5000 + 1000);
    expect(h.s.skips).toBe(0);
    expect(h.s.workers.busy[0]).toBe(1);
    h.at(2000 + 5000 + 1000 + 1);
    expect(h.s.skips).toBe(1);
    expect(h.unit('porep-1-1').end).toBe(END_SKIPPED);
    expect(h.s.jobById('porep-1-1')!.failed).toBe(true);
    expect([h.s.workers.busy[0], h.busyMs(0), h.parts(PC2)]).toEqual([0, 0, 1]);
    // The job failed: its next partition picked up is dropped at once (no GPU_START follows).
    h.feed(tl(9000, 'GPU_PICKUP', 'porep-1-1', 'worker=0,partition=2'));
    expect(h.s.skips).toBe(2);
    const u = h.unit('porep-1-1', 1);
    expect([u.key, u.state, u.end, u.worker, u.pickT]).toEqual([2, PART_GPU, END_SKIPPED, 0, h.s.jobById('porep-1-1')!.units[1].pickT]);
    expect(h.off(u.pickT)).toBe(9000);
    expect(h.s.workers.busy[0]).toBe(0);
    // A retry of the job (Curio re-uses the id) starts over: its pickups are real again.
    h.feed(tl(9500, 'SYNTH_START', 'porep-1-1', 'partition=2'));
    expect(h.s.jobById('porep-1-1')!.failed).toBe(false);
    h.feed(tl(9600, 'SYNTH_END', 'porep-1-1', 'partition=2,synth_ms=100'), tl(9600, 'GPU_PICKUP', 'porep-1-1', 'worker=0,partition=2'));
    expect(h.s.skips).toBe(2);
    expect(h.s.workers.busy[0]).toBe(1);
  });

  test('confirmMs is an option (ms)', () => {
    const h = split({ confirmMs: 200 });
    h.feed(tl(2000, 'GPU_PICKUP', 'porep-1-1', 'worker=0,partition=1'));
    h.at(2000 + 200 + 1000);
    expect(h.s.skips).toBe(0);
    h.at(2000 + 200 + 1000 + 1);
    expect(h.s.skips).toBe(1);
  });

  test('split mode unknown: a pickup with no GPU_START for confirmMs means CUZK_DISABLE_SPLIT_PROVE: real work, logged once', () => {
    const h = new H();
    h.feed(tl(2000, 'GPU_PICKUP', 'porep-1-1', 'worker=0,partition=1'));
    h.at(2000 + 5000 + 1000);
    expect(h.s.splitMode).toBe('unknown');
    h.at(2000 + 5000 + 1000 + 1);
    expect(h.s.splitMode).toBe('off');
    expect(h.s.skips).toBe(0);
    expect(h.s.workers.tentative[0]).toBe(0);
    expect(h.unit('porep-1-1').started).toBe(true);
    expect(h.warns()).toEqual([
      'GPU pickups are not followed by GPU_START lines: cuzk runs with CUZK_DISABLE_SPLIT_PROVE=1 (no GPU_START/GPU_END); worker busy time from TIMELINE is an upper bound and GPU seconds need --cuzk.status-url',
    ]);
    expect(h.s.claim(0)).toBeNull(); // busy is an upper bound only
    // Pickups are not tentative in this mode: no skip however long.
    h.feed(tl(9000, 'GPU_PICKUP', 'porep-1-2', 'worker=1,partition=0'));
    expect(h.s.workers.tentative[1]).toBe(0);
    h.at(30_000);
    expect(h.s.skips).toBe(0);
    // The next pickup on a worker means its previous stage ended there, unseen.
    h.feed(tl(31_000, 'GPU_PICKUP', 'porep-1-2', 'worker=1,partition=1'));
    expect(h.unit('porep-1-2', 0).end).toBe(END_UNSEEN);
    expect(h.s.workers.busy[1]).toBe(1);
    // A GPU_START again: split proving is on.
    h.feed(tl(31_000, 'GPU_START', 'porep-1-2', 'worker=1,partition=1'));
    expect(h.s.splitMode).toBe('on');
    expect(h.infos()).toContain('GPU_START lines seen again: split proving is on');
  });

  test('split mode unknown: the next pickup more than 50 ms later means no split proving; at 50 ms the first was a skip', () => {
    const h = new H();
    h.feed(tl(1000, 'GPU_PICKUP', 'job-a', 'worker=0,partition=0'), tl(1050, 'GPU_PICKUP', 'job-b', 'worker=0,partition=0'));
    expect(h.s.splitMode).toBe('unknown');
    expect(h.s.skips).toBe(1);
    expect(h.unit('job-a').end).toBe(END_SKIPPED);
    expect(h.s.workers.tentative[0]).toBe(1);
    h.feed(tl(1101, 'GPU_PICKUP', 'job-c', 'worker=0,partition=0'));
    expect(h.s.splitMode).toBe('off');
    expect(h.s.skips).toBe(1);
    expect(h.unit('job-b').end).toBe(END_UNSEEN);
    expect(h.unit('job-b').started).toBe(true);
    expect(h.s.workers.tentative[0]).toBe(0);
  });

  test('split on: a pickup followed by the same worker’s next pickup (no GPU_START) was a skip, however long the gap', () => {
    const h = split();
    h.feed(tl(3000, 'GPU_PICKUP', 'job-a', 'worker=0,partition=0'), tl(4000, 'GPU_PICKUP', 'job-b', 'worker=0,partition=0'));
    expect(h.s.splitMode).toBe('on');
    expect(h.s.skips).toBe(1);
    expect(h.unit('job-a').end).toBe(END_SKIPPED);
    expect(h.s.workers.own[0]).toBe(h.unit('job-b'));
  });

  test('a skip while an earlier partition finalizes: the worker is back on it', () => {
    const h = split();
    h.feed(tl(1000, 'GPU_PICKUP', 'porep-1-1', 'worker=0,partition=0'), tl(1000, 'GPU_START', 'porep-1-1', 'worker=0,partition=0'));
    h.feed(tl(1500, 'GPU_PICKUP', 'porep-2-2', 'worker=0,partition=0'));
    const first = h.unit('porep-1-1');
    expect(first.state).toBe(PART_FINALIZING);
    expect(h.s.supersededOnGpu()).toBe(2); // the finalizing one, and a pickup still tentative
    h.at(1500 + 5000 + 1000 + 1);
    expect(h.s.skips).toBe(1);
    expect(first.state).toBe(PART_GPU);
    expect(h.s.workers.own[0]).toBe(first);
    expect(h.s.supersededOnGpu()).toBe(0);
    h.feed(tl(8000, 'GPU_END', 'porep-1-1', 'worker=0,partition=0,gpu_ms=7000'));
    expect(h.busyMs(0)).toBe(7000);
  });

  test('the same pickup line twice (a duplicated log): nothing new', () => {
    const h = split();
    const d = 'worker=0,partition=0';
    h.feed(tl(1000, 'GPU_PICKUP', 'porep-1-1', d), tl(1000, 'GPU_START', 'porep-1-1', d), tl(1000, 'GPU_PICKUP', 'porep-1-1', d));
    expect(h.s.jobById('porep-1-1')!.units).toHaveLength(1);
    expect([h.s.skips, h.s.workers.busy[0], h.s.workers.tentative[0]]).toEqual([0, 1, 0]);
    h.feed(tl(1400, 'GPU_END', 'porep-1-1', `${d},gpu_ms=400`));
    expect([h.parts(PC2), h.gpuMs(PC2), h.busyMs(0)]).toEqual([2, 900, 400]);
  });

  test('a later pickup of the same partition (a re-queue) is a new instance', () => {
    const h = split();
    const d = 'worker=0,partition=0';
    h.feed(tl(1000, 'GPU_PICKUP', 'porep-1-1', d), tl(1000, 'GPU_START', 'porep-1-1', d), tl(1300, 'GPU_PICKUP', 'porep-1-1', d), tl(1300, 'GPU_START', 'porep-1-1', d));
    expect(h.s.jobById('porep-1-1')!.units).toHaveLength(2);
    expect(h.unit('porep-1-1', 0).state).toBe(PART_FINALIZING);
  });

  test('a GPU_START whose pickup was lost stands for it: confirmed at once, never a skip', () => {
    const h = split();
    h.feed(tl(1000, 'GPU_START', 'porep-1-1', 'worker=0,partition=0'));
    const u = h.unit('porep-1-1');
    expect([u.state, u.started, h.s.workers.tentative[0], h.s.workers.busy[0]]).toEqual([PART_GPU, true, 0, 1]);
    h.at(20_000);
    expect(h.s.skips).toBe(0);
    h.feed(tl(21_000, 'GPU_END', 'porep-1-1', 'worker=0,partition=0,gpu_ms=20000'));
    expect([h.busyMs(0), h.gpuMs(PC2)]).toEqual([20_000, 20_500]);
  });

  test('a monolithic GPU_START (no partition=) confirms what its worker picked up of that job', () => {
    const h = split();
    h.feed(tl(1000, 'GPU_PICKUP', 'wd-1', 'worker=0,partition=0'), tl(1000, 'GPU_START', 'wd-1', 'worker=0'));
    expect([h.s.workers.tentative[0], h.unit('wd-1').started]).toEqual([0, true]);
    expect(h.s.jobById('wd-1')!.units).toHaveLength(1);
  });

  test('a GPU_START for a partition its worker has moved on from: marked started, the worker keeps its pickup', () => {
    const h = split();
    const d0 = 'worker=0,partition=0';
    h.feed(tl(1000, 'GPU_PICKUP', 'porep-1-1', d0), tl(1000, 'GPU_START', 'porep-1-1', d0), tl(1200, 'GPU_PICKUP', 'porep-1-1', 'worker=0,partition=1'));
    h.feed(tl(1200, 'GPU_START', 'porep-1-1', d0)); // late duplicate of p0's start
    expect(h.s.jobById('porep-1-1')!.units).toHaveLength(2);
    expect(h.s.workers.own[0]).toBe(h.unit('porep-1-1', 1));
  });
});

describe('GPU_END', () => {
  function split(): H {
    const h = new H();
    h.feed(...part('porep-0-0', 0, 7, 100, 600));
    return h;
  }

  test('WindowPoSt’s GPU_END carries partition=: matched to the monolithic unit by job and worker', () => {
    const h = split();
    const W = 'wdpost-1-0-[1 2]';
    h.feed(tl(1000, 'SYNTH_START', W, 'kind=window-post'), tl(1500, 'SYNTH_END', W, 'synth_ms=500'), tl(1500, 'GPU_QUEUE', W, 'monolithic'));
    h.feed(tl(1600, 'GPU_PICKUP', W, 'worker=1'), tl(1600, 'GPU_START', W, 'worker=1'), tl(4000, 'GPU_END', W, 'worker=1,partition=7,gpu_ms=2400'));
    expect(h.s.jobById(W)!.units).toHaveLength(1);
    expect([h.gpuMs(WPOST), h.synthMs(WPOST), h.parts(WPOST), h.busyMs(1), h.s.workers.busy[1]]).toEqual([2400, 500, 1, 2400, 0]);
  });

  test('the end of a partition its worker moved on from (finalizing): done, the worker stays on the newer one', () => {
    const h = split();
    h.feed(tl(1000, 'GPU_PICKUP', 'porep-1-1', 'worker=0,partition=0'), tl(1000, 'GPU_START', 'porep-1-1', 'worker=0,partition=0'));
    h.feed(tl(1500, 'GPU_PICKUP', 'porep-1-1', 'worker=0,partition=1'), tl(1500, 'GPU_START', 'porep-1-1', 'worker=0,partition=1'));
    h.feed(tl(1600, 'GPU_END', 'porep-1-1', 'worker=0,partition=0,gpu_ms=600'));
    expect(h.unit('porep-1-1', 0).end).toBe(END_DONE);
    expect([h.s.workers.busy[0], h.busyMs(0)]).toEqual([1, 0]);
    expect(h.s.workers.own[0]).toBe(h.unit('porep-1-1', 1));
    h.feed(tl(2000, 'GPU_END', 'porep-1-1', 'worker=0,partition=1,gpu_ms=500'));
    expect([h.s.workers.busy[0], h.busyMs(0), h.parts(PC2), h.s.workers.parts[0]]).toEqual([0, 1000, 3, 2]);
  });

  test('an end line naming another worker than the unit’s: the unit still ends, on its own worker', () => {
    const h = split();
    h.feed(tl(1000, 'GPU_PICKUP', 'porep-1-1', 'worker=0,partition=0'), tl(1000, 'GPU_START', 'porep-1-1', 'worker=0,partition=0'));
    h.feed(tl(1400, 'GPU_END', 'porep-1-1', 'worker=3,partition=0,gpu_ms=400'));
    expect(h.s.jobById('porep-1-1')!.units).toHaveLength(1);
    expect([h.s.workers.busy[0], h.busyMs(0), h.s.workers.parts[0], h.s.workers.parts[3]]).toEqual([0, 400, 1, 0]);
  });

  test('an end with neither pickup nor start seen: gpu_ms dates the stage on its worker', () => {
    const h = split();
    h.feed(tl(5000, 'GPU_END', 'porep-1-1', 'worker=2,partition=4,gpu_ms=1200'));
    const u = h.unit('porep-1-1');
    expect([u.key, u.end, u.worker, u.started, h.off(u.pickT)]).toEqual([4, END_DONE, 2, true, 3800]);
    expect([h.busyMs(2), h.parts(PC2), h.gpuMs(PC2), h.s.workers.busy[2]]).toEqual([1200, 2, 1700, 0]);
    expect(h.s.workerIds()).toEqual([2, 7]);
    h.feed(tl(5100, 'GPU_END', 'porep-1-6', 'worker=4,partition=0,gpu_ms=100'));
    expect(h.unit('porep-1-6').key).toBe(0);
    // A monolithic job's: one monolithic unit whatever partition= says.
    h.feed(tl(6000, 'SYNTH_START', 'win-1', 'kind=winning-post'), tl(6100, 'SYNTH_END', 'win-1', 'synth_ms=100'));
    h.feed(tl(7000, 'GPU_END', 'win-1', 'worker=2,partition=3,gpu_ms=300'));
    // (The queued unit whose pickup was lost waits on, until the synthesis timeout gives it up.)
    expect(h.s.jobById('win-1')!.units.map((x) => [x.key, x.end])).toEqual([[MONO, END_NONE], [MONO, END_DONE]]);
    expect([h.gpuMs(WIN), h.busyMs(2)]).toEqual([300, 1500]);
  });

  test('an end of a pickup whose GPU_START was lost: real work (confirmed), counted', () => {
    const h = split();
    h.feed(tl(1000, 'GPU_PICKUP', 'porep-1-1', 'worker=0,partition=0'), tl(1500, 'GPU_END', 'porep-1-1', 'worker=0,partition=0,gpu_ms=500'));
    expect([h.s.skips, h.busyMs(0), h.parts(PC2), h.unit('porep-1-1').started]).toEqual([0, 500, 2, true]);
    h.at(20_000);
    expect(h.s.skips).toBe(0);
  });
});

describe('GPU_END repeated (upstream: one per partition attempt, engine.rs finalizer)', () => {
  const D = 'worker=0,partition=0';
  function done(): H {
    const h = new H();
    h.feed(...part('porep-1-1', 0, 0, 1000, 1500));
    expect([h.gpuMs(PC2), h.parts(PC2), h.busyMs(0)]).toEqual([500, 1, 500]);
    return h;
  }

  test('the same line twice (a log fed twice): counted once, the repeat refused and counted as its reason', () => {
    const h = done();
    h.feed(tl(1500, 'GPU_END', 'porep-1-1', `${D},gpu_ms=500`));
    expect([h.gpuMs(PC2), h.parts(PC2), h.busyMs(0), h.s.workers.parts[0]]).toEqual([500, 1, 500, 1]);
    expect(h.err('timeline_end_repeated')).toBe(1);
    expect(h.warns()).toEqual([
      'a GPU_END of job "porep-1-1" partition 0 at offset 1500 ms (gpu_ms 500) repeats one that ended at 1500 ms: not counted (a partition is proven once per job instance; a log fed twice or a forged line)',
    ]);
    expect(h.s.jobById('porep-1-1')!.units).toHaveLength(1);
  });

  test('a zero-length stage repeated at the same offset: refused too (an end no later than the last one)', () => {
    const h = new H();
    h.feed(...part('porep-1-1', 0, 0, 1000, 1000));
    h.feed(tl(1000, 'GPU_END', 'porep-1-1', `${D},gpu_ms=0`));
    expect([h.parts(PC2), h.err('timeline_end_repeated')]).toEqual([1, 1]);
  });

  test('a forged later end whose stage would overlap the one that ended: refused; on another worker too', () => {
    const h = done();
    // Dated by its gpu_ms to start at 1400, before the stage that ended at 1500.
    h.feed(tl(1900, 'GPU_END', 'porep-1-1', `${D},gpu_ms=500`));
    h.feed(tl(2000, 'GPU_END', 'porep-1-1', 'worker=3,partition=0,gpu_ms=1000'));
    expect([h.gpuMs(PC2), h.parts(PC2), h.busyMs(0), h.busyMs(3)]).toEqual([500, 1, 500, 0]);
    expect(h.err('timeline_end_repeated')).toBe(2);
  });

  test('within the lines’ 2 ms truncation slack: a new stage (its pickup lost), counted', () => {
    const h = done();
    // Claimed start 1498: 2 ms before the last end, inside SPAN_SLACK_MS.
    h.feed(tl(2498, 'GPU_END', 'porep-1-1', `${D},gpu_ms=1000`));
    expect([h.gpuMs(PC2), h.parts(PC2), h.err('timeline_end_repeated')]).toEqual([1500, 2, 0]);
    // 3 ms before the next one's end: refused.
    h.feed(tl(3495, 'GPU_END', 'porep-1-1', `${D},gpu_ms=1000`));
    expect([h.gpuMs(PC2), h.parts(PC2), h.err('timeline_end_repeated')]).toEqual([1500, 2, 1]);
  });

  test('a retry of the job (same id, synthesized again) whose pickup was lost: its end is a new stage, counted', () => {
    const h = done();
    h.feed(tl(3000, 'SYNTH_START', 'porep-1-1', 'partition=0'), tl(4000, 'SYNTH_END', 'porep-1-1', 'partition=0,synth_ms=1000'));
    h.feed(tl(5000, 'GPU_END', 'porep-1-1', `${D},gpu_ms=600`));
    expect([h.gpuMs(PC2), h.parts(PC2), h.busyMs(0), h.err('timeline_end_repeated')]).toEqual([1100, 2, 1100, 0]);
  });

  test('another partition of the same job, overlapping in time: not a repeat', () => {
    const h = done();
    h.feed(tl(1600, 'GPU_END', 'porep-1-1', 'worker=1,partition=1,gpu_ms=400'));
    expect([h.gpuMs(PC2), h.parts(PC2), h.err('timeline_end_repeated')]).toEqual([900, 2, 0]);
  });

  test('a monolithic job’s end repeated (WindowPoSt’s carries partition=): refused', () => {
    const h = new H();
    const W = 'wdpost-1-0-[1 2]';
    h.feed(tl(1000, 'SYNTH_START', W, 'kind=window-post'), tl(1500, 'SYNTH_END', W, 'synth_ms=500'), tl(1500, 'GPU_QUEUE', W, 'monolithic'));
    h.feed(tl(1600, 'GPU_PICKUP', W, 'worker=1'), tl(1600, 'GPU_START', W, 'worker=1'), tl(4000, 'GPU_END', W, 'worker=1,partition=7,gpu_ms=2400'));
    h.feed(tl(4000, 'GPU_END', W, 'worker=1,partition=7,gpu_ms=2400'));
    expect([h.gpuMs(WPOST), h.parts(WPOST), h.busyMs(1), h.err('timeline_end_repeated')]).toEqual([2400, 1, 2400, 1]);
  });

  test('a SYNTH_END repeated: its synthesis counted once, no unit left waiting for a GPU', () => {
    const h = new H();
    h.feed(tl(1000, 'SYNTH_START', 'porep-1-1', 'partition=0'), tl(2000, 'SYNTH_END', 'porep-1-1', 'partition=0,synth_ms=1000'));
    h.feed(tl(2000, 'SYNTH_END', 'porep-1-1', 'partition=0,synth_ms=1000'));
    // A forged later one whose synthesis would overlap the one that ended.
    h.feed(tl(2500, 'SYNTH_END', 'porep-1-1', 'partition=0,synth_ms=1000'));
    expect([h.synthMs(PC2), h.err('timeline_end_repeated')]).toEqual([1000, 2]);
    expect(h.warns()[0]).toBe(
      'a SYNTH_END of job "porep-1-1" partition 0 at offset 2000 ms (synth_ms 1000) repeats one that ended at 2000 ms: not counted (a partition is synthesized once per job instance; a log fed twice or a forged line)',
    );
    expect(h.s.jobById('porep-1-1')!.units).toHaveLength(1);
    h.feed(tl(2600, 'GPU_PICKUP', 'porep-1-1', 'worker=0,partition=0'), tl(2600, 'GPU_START', 'porep-1-1', 'worker=0,partition=0'));
    h.feed(tl(3000, 'GPU_END', 'porep-1-1', 'worker=0,partition=0,gpu_ms=400'));
    // Nothing left live: no phantom unit in synth_done.
    expect(Array.from(h.s.units.kLive.slice(PC2 * LIVE_PARTITION_STATES, (PC2 + 1) * LIVE_PARTITION_STATES))).toEqual([0, 0, 0, 0, 0]);
  });

  test('a SYNTH_END after the last one ended, its start lost (a new instance of the job): counted', () => {
    const h = new H();
    h.feed(tl(1000, 'SYNTH_START', 'porep-1-1', 'partition=0'), tl(2000, 'SYNTH_END', 'porep-1-1', 'partition=0,synth_ms=1000'));
    // Dated to start at 1998: within the 2 ms slack.
    h.feed(tl(2998, 'SYNTH_END', 'porep-1-1', 'partition=0,synth_ms=1000'));
    expect([h.synthMs(PC2), h.err('timeline_end_repeated')]).toEqual([2000, 0]);
  });

  test('history lines: a repeat is refused without counting an error (the catch-up never counts)', () => {
    const h = new H();
    h.history(...part('porep-1-1', 0, 0, 1000, 1500), tl(1500, 'GPU_END', 'porep-1-1', `${D},gpu_ms=500`));
    expect([h.parts(PC2), h.err('timeline_end_repeated')]).toEqual([0, 0]);
    expect(h.s.jobById('porep-1-1')!.units).toHaveLength(1);
  });
});

describe('what the sweep gives up', () => {
  function split(o: Partial<TimelineOptions> = {}): H {
    const h = new H(o);
    h.feed(tl(100, 'GPU_START', 'winpost-1-0a', 'worker=7,partition=0')); // split proving on; no stage length seen
    h.feed(tl(100, 'GPU_END', 'winpost-1-0a', 'worker=7,partition=0,gpu_ms=0'));
    return h;
  }
  const D0 = 'worker=0,partition=0';

  test('no GPU_END within 60 s of its pickup: given up (lost), the job failed, the stint credited to the cap', () => {
    const h = split();
    h.feed(tl(1000, 'GPU_PICKUP', 'porep-1-1', D0), tl(1000, 'GPU_START', 'porep-1-1', D0));
    h.feed(tl(30_000, 'GPU_QUEUE', 'porep-1-1', 'partition=5')); // the job stays in use
    h.at(1000 + 60_000 + 1000);
    const u = h.unit('porep-1-1');
    expect(u.end).toBe(END_NONE);
    h.at(1000 + 60_000 + 1000 + 1);
    expect(u.end).toBe(END_LOST);
    expect(h.s.jobById('porep-1-1')!.failed).toBe(true);
    expect(h.err('timeline_gpu_end_missing')).toBe(1);
    expect(h.warns()).toEqual([
      'no GPU_END for job "porep-1-1" partition 0 within 60 s of its pickup: given up (cuzk writes no GPU_END when GPU proving fails)',
    ]);
    // No stage seen yet: the cap is the timeout itself.
    expect([h.s.workers.busy[0], h.busyMs(0), h.parts(PC2), h.failed(PC2)]).toEqual([0, 60_000, 0, 0]);
    expect(h.s.staleClaim('porep-1-1', 0)).toBe(true);
  });

  test('a monolithic job’s message names no partition; gpuTimeoutMs fixes the timeout', () => {
    const h = split({ gpuTimeoutMs: 5000 });
    h.feed(tl(1000, 'GPU_PICKUP', 'wd-1', 'worker=0'), tl(1000, 'GPU_START', 'wd-1', 'worker=0'));
    h.at(1000 + 5000 + 1000);
    expect(h.unit('wd-1').end).toBe(END_NONE);
    h.at(1000 + 5000 + 1000 + 1);
    expect(h.unit('wd-1').end).toBe(END_LOST);
    expect(h.warns()).toEqual(['no GPU_END for job "wd-1" within 5 s of its pickup: given up (cuzk writes no GPU_END when GPU proving fails)']);
    expect(h.busyMs(0)).toBe(5000);
  });

  test('the timeout and the cap follow the longest stage seen: 3x and 1.5x, per kind, else any kind’s', () => {
    const h = split();
    h.feed(...part('porep-1-1', 0, 0, 1000, 31_000)); // a 30 s PoRep stage
    h.feed(tl(40_000, 'GPU_PICKUP', 'porep-1-1', 'worker=0,partition=1'), tl(40_000, 'GPU_START', 'porep-1-1', 'worker=0,partition=1'));
    h.feed(tl(40_000, 'GPU_PICKUP', 'snap-1-1', 'worker=1,partition=1'), tl(40_000, 'GPU_START', 'snap-1-1', 'worker=1,partition=1'));
    for (let t = 50_000; t < 140_000; t += 20_000) h.feed(tl(t, 'GPU_QUEUE', 'porep-1-1', 'partition=9'), tl(t, 'GPU_QUEUE', 'snap-1-1', 'partition=9'));
    // No SnapDeals stage seen: any kind's longest (30 s) stands for it.
    h.at(40_000 + 90_000 + 1000);
    expect([h.unit('porep-1-1', 1).end, h.unit('snap-1-1').end]).toEqual([END_NONE, END_NONE]);
    h.at(40_000 + 90_000 + 1000 + 1);
    expect([h.unit('porep-1-1', 1).end, h.unit('snap-1-1').end]).toEqual([END_LOST, END_LOST]);
    expect(h.warns()[0]).toContain('within 90 s of its pickup');
    expect([h.busyMs(0) - 30_000, h.busyMs(1)]).toEqual([45_000, 45_000]);

    const h2 = split();
    h2.feed(...part('porep-1-1', 0, 0, 1000, 31_000));
    h2.feed(...part('snap-1-1', 0, 1, 1000, 11_000)); // SnapDeals' own: 10 s
    h2.feed(tl(40_000, 'GPU_PICKUP', 'snap-1-1', 'worker=1,partition=1'), tl(40_000, 'GPU_START', 'snap-1-1', 'worker=1,partition=1'));
    h2.feed(tl(60_000, 'GPU_QUEUE', 'snap-1-1', 'partition=9'), tl(90_000, 'GPU_QUEUE', 'snap-1-1', 'partition=9'));
    h2.at(40_000 + 60_000 + 1000);
    expect(h2.unit('snap-1-1', 1).end).toBe(END_NONE);
    h2.at(40_000 + 60_000 + 1000 + 1);
    expect(h2.unit('snap-1-1', 1).end).toBe(END_LOST);
    expect(h2.busyMs(1) - 10_000).toBe(15_000);
  });

  test('a tentative pickup is not timed out as a lost end (it is a skip first); without split proving it is', () => {
    const h = split({ confirmMs: 120_000, gpuTimeoutMs: 5000 });
    h.feed(tl(1000, 'GPU_PICKUP', 'porep-1-1', D0), tl(3000, 'GPU_QUEUE', 'porep-1-1', 'partition=1'));
    h.at(20_000);
    expect(h.unit('porep-1-1').end).toBe(END_NONE);
    const h2 = new H({ confirmMs: 120_000, gpuTimeoutMs: 5000 });
    h2.feed(tl(1000, 'GPU_PICKUP', 'porep-1-1', D0), tl(3000, 'GPU_QUEUE', 'porep-1-1', 'partition=1'));
    h2.at(20_000);
    expect(h2.unit('porep-1-1').end).toBe(END_LOST);
  });

  test('a partition whose worker has since finished later ones, with no GPU_END: given up 2 s after (not failed)', () => {
    const h = split();
    h.feed(tl(1000, 'GPU_PICKUP', 'porep-1-1', D0), tl(1000, 'GPU_START', 'porep-1-1', D0));
    h.feed(...part('porep-1-1', 1, 0, 1500, 2000));
    const u = h.unit('porep-1-1', 0);
    expect([u.state, h.s.workers.busy[0], h.busyMs(0)]).toEqual([PART_FINALIZING, 0, 1000]);
    expect(h.s.supersededOnGpu()).toBe(1);
    h.at(2000 + 2000 + 1000);
    expect(u.end).toBe(END_NONE);
    h.at(2000 + 2000 + 1000 + 1);
    expect(u.end).toBe(END_LOST);
    expect(h.s.jobById('porep-1-1')!.failed).toBe(false);
    expect(h.err('timeline_gpu_end_missing')).toBe(1);
    expect(h.warns()).toEqual([
      'no GPU_END for job "porep-1-1" partition 0 though its worker has finished the partitions it picked up after it: given up (cuzk writes no GPU_END when GPU proving fails)',
    ]);
    expect(h.busyMs(0)).toBe(1000);
    expect(h.s.supersededOnGpu()).toBe(0);
  });

  test('the same with a long stage seen: not before 1.5x it since the worker went idle; a monolithic one named so', () => {
    const h = split();
    h.feed(...part('wd-0', 0, 3, 100, 4100)); // 4 s: 1.5x = 6 s
    h.feed(tl(5000, 'GPU_PICKUP', 'wd-1', 'worker=0'), tl(5000, 'GPU_START', 'wd-1', 'worker=0'));
    h.feed(...part('porep-1-1', 1, 0, 5500, 6000));
    h.at(6000 + 6000 + 1000);
    expect(h.unit('wd-1').end).toBe(END_NONE);
    h.at(6000 + 6000 + 1000 + 1);
    expect(h.unit('wd-1').end).toBe(END_LOST);
    expect(h.warns()[0]).toBe(
      'no GPU_END for job "wd-1" though its worker has finished the partitions it picked up after it: given up (cuzk writes no GPU_END when GPU proving fails)',
    );
  });

  test('a synthesis with no SYNTH_END: given up after 600 s, or 3x the longest synthesis seen', () => {
    const h = new H();
    h.feed(tl(1000, 'SYNTH_START', 'porep-1-1', 'partition=0'));
    for (let t = 200_000; t < 700_000; t += 200_000) h.feed(tl(t, 'GPU_QUEUE', 'porep-1-1', 'partition=9'));
    h.at(1000 + 600_000 + 1000);
    expect(h.unit('porep-1-1').end).toBe(END_NONE);
    h.at(1000 + 600_000 + 1000 + 1);
    expect(h.unit('porep-1-1').end).toBe(END_ABANDONED);
    expect(h.s.staleClaim('porep-1-1', 0)).toBe(true);

    const h2 = new H();
    h2.feed(tl(1000, 'SYNTH_START', 'porep-1-1', 'partition=0'), tl(301_000, 'SYNTH_END', 'porep-1-1', 'partition=0,synth_ms=300000'));
    h2.feed(tl(301_000, 'SYNTH_START', 'porep-1-1', 'partition=1'));
    for (let t = 400_000; t < 1_300_000; t += 200_000) h2.feed(tl(t, 'SYNTH_START', 'porep-1-1', 'partition=2'));
    h2.at(301_000 + 900_000 + 1000);
    expect(h2.unit('porep-1-1', 1).end).toBe(END_NONE);
    h2.at(301_000 + 900_000 + 1000 + 1);
    expect(h2.unit('porep-1-1', 1).end).toBe(END_ABANDONED);
  });

  test('queued and never picked up (upstream replaced it in its queue): given up 600 s after its SYNTH_END', () => {
    const h = new H();
    h.feed(tl(1000, 'SYNTH_START', 'porep-1-1', 'partition=0'), tl(2000, 'SYNTH_END', 'porep-1-1', 'partition=0,synth_ms=1000'));
    h.feed(tl(9000, 'GPU_QUEUE', 'porep-1-1', 'partition=0')); // does not move its ready time
    const u = h.unit('porep-1-1');
    expect([u.state, h.s.jobById('porep-1-1')!.units.length]).toEqual([PART_SYNTH_DONE, 1]);
    for (let t = 200_000; t < 700_000; t += 200_000) h.feed(tl(t, 'SYNTH_START', 'porep-1-1', 'partition=9'));
    h.at(2000 + 600_000 + 1000);
    expect(u.end).toBe(END_NONE);
    h.at(2000 + 600_000 + 1000 + 1);
    expect(u.end).toBe(END_ABANDONED);
  });

  test('GPU_QUEUE alone (its SYNTH_END lost): the synthesis is over, ready from then; given up 600 s later', () => {
    const h = new H();
    h.feed(tl(1000, 'SYNTH_START', 'porep-1-1', 'partition=0'), tl(2000, 'GPU_QUEUE', 'porep-1-1', 'partition=0'));
    const u = h.unit('porep-1-1');
    expect(u.state).toBe(PART_SYNTH_DONE);
    h.feed(tl(3000, 'GPU_QUEUE', 'porep-1-2', 'partition=0'));
    const v = h.unit('porep-1-2');
    expect(v.state).toBe(PART_SYNTH_DONE);
    for (let t = 200_000; t < 700_000; t += 200_000) h.feed(tl(t, 'SYNTH_START', 'porep-1-1', 'partition=9'), tl(t, 'SYNTH_START', 'porep-1-2', 'partition=9'));
    h.at(2000 + 600_000 + 1000 + 1);
    expect([u.end, v.end]).toEqual([END_ABANDONED, END_NONE]);
    h.at(3000 + 600_000 + 1000 + 1);
    expect(v.end).toBe(END_ABANDONED);
  });
});

describe('another surface saw the GPU stage end', () => {
  const D0 = 'worker=0,partition=0';
  function split(): H {
    const h = new H();
    h.feed(tl(100, 'GPU_START', 'winpost-1-0a', 'worker=7,partition=0'), tl(100, 'GPU_END', 'winpost-1-0a', 'worker=7,partition=0,gpu_ms=0'));
    return h;
  }

  test('split on, no GPU_END after it: a GPU failure once the log was read 2 lags past that end', () => {
    const h = split();
    h.feed(tl(1000, 'GPU_PICKUP', 'porep-1-1', D0), tl(1000, 'GPU_START', 'porep-1-1', D0));
    h.s.otherSurfaceEnded('nope', 0, 400); // unknown job: nothing
    h.s.otherSurfaceEnded('porep-1-1', 0, 400);
    const u = h.unit('porep-1-1');
    expect(u.otherEndMs).toBe(400);
    h.s.otherSurfaceEnded('porep-1-1', 0, 999); // the first word stands
    expect(u.otherEndMs).toBe(400);
    h.at(1000 + 400 + 2000 + 1000);
    expect(u.end).toBe(END_NONE);
    h.at(1000 + 400 + 2000 + 1000 + 1);
    expect(u.end).toBe(END_FAILED);
    expect(h.s.jobById('porep-1-1')!.failed).toBe(true);
    expect([h.failed(PC2), h.parts(PC2), h.gpuMs(PC2), h.busyMs(0), h.s.workers.busy[0]]).toEqual([1, 0, 400, 400, 0]);
    expect(h.s.staleClaim('porep-1-1', 0)).toBe(true);
  });

  test('split off: /status’ word is the end, done, at the next sweep', () => {
    const h = new H();
    h.feed(tl(1000, 'GPU_PICKUP', 'porep-1-1', D0), tl(1051, 'GPU_PICKUP', 'porep-1-2', 'worker=1,partition=0'), tl(1102, 'GPU_PICKUP', 'porep-1-2', 'worker=1,partition=1'));
    expect(h.s.splitMode).toBe('off');
    h.s.otherSurfaceEnded('porep-1-1', 0, 400);
    h.at(1200);
    const u = h.unit('porep-1-1');
    expect([u.end, u.gpuMs, h.parts(PC2), h.gpuMs(PC2), h.busyMs(0)]).toEqual([END_DONE, 400, 1, 400, 400]);
    // A stage that already ended unseen (the worker's next pickup) gets its GPU time from /status once.
    const v = h.unit('porep-1-2', 0);
    expect(v.end).toBe(END_UNSEEN);
    h.s.otherSurfaceEnded('porep-1-2', 0, 30);
    h.s.otherSurfaceEnded('porep-1-2', 0, 30);
    expect([v.gpuMs, h.parts(PC2), h.gpuMs(PC2)]).toEqual([30, 2, 430]);
    expect(h.s.staleClaim('porep-1-2', 0)).toBe(false);
  });

  test('split on: a unit that ended already, or is not on the GPU, takes no word', () => {
    const h = split();
    h.feed(...part('porep-1-1', 0, 0, 1000, 1500), tl(1500, 'SYNTH_START', 'porep-1-1', 'partition=1'));
    h.s.otherSurfaceEnded('porep-1-1', 0, 400);
    h.s.otherSurfaceEnded('porep-1-1', 1, 400);
    expect(h.s.jobById('porep-1-1')!.units.map((u) => u.otherEndMs)).toEqual([-1, -1]);
    expect(h.parts(PC2)).toBe(1);
  });

  test('a re-used id: the word is about the newest instance of that partition', () => {
    const h = split();
    h.feed(...part('porep-1-1', 0, 0, 1000, 1500));
    h.feed(tl(2000, 'GPU_PICKUP', 'porep-1-1', D0), tl(2000, 'GPU_START', 'porep-1-1', D0));
    h.s.otherSurfaceEnded('porep-1-1', 0, 300);
    expect(h.s.jobById('porep-1-1')!.units.map((u) => u.otherEndMs)).toEqual([-1, 300]);
  });

  test('otherSurfaceEndedParts: the same as one call per done partition with a gpu_ms', () => {
    const setup = () => {
      const h = split();
      for (let p = 0; p < 4; p++) h.feed(tl(1000 + p, 'GPU_PICKUP', 'porep-1-1', `worker=${p},partition=${p}`), tl(1000 + p, 'GPU_START', 'porep-1-1', `worker=${p},partition=${p}`));
      h.feed(tl(1010, 'GPU_PICKUP', 'porep-1-1', 'worker=5,partition=6'), tl(1010, 'GPU_START', 'porep-1-1', 'worker=5,partition=6'));
      h.feed(...part('porep-1-1', 0, 0, 1100, 1200), tl(1300, 'GPU_PICKUP', 'porep-1-1', D0), tl(1300, 'GPU_START', 'porep-1-1', D0)); // p0 again
      return h;
    };
    const parts = [
      { index: 0, state: 'done', gpu_ms: 50 },
      { index: 1, state: 'gpu', gpu_ms: 70 },
      { index: 2, state: 'done', gpu_ms: null },
      { index: 3, state: 'done', gpu_ms: 90 },
      { index: 6, state: 'done', gpu_ms: 110 }, // past the list's length: searched alone
    ];
    const a = setup();
    a.s.otherSurfaceEndedParts('porep-1-1', parts);
    a.s.otherSurfaceEndedParts('nope', parts);
    const b = setup();
    b.s.otherSurfaceEnded('porep-1-1', 0, 50);
    b.s.otherSurfaceEnded('porep-1-1', 3, 90);
    b.s.otherSurfaceEnded('porep-1-1', 6, 110);
    const ends = (h: H) => h.s.jobById('porep-1-1')!.units.map((u) => [u.key, u.otherEndMs]);
    expect(ends(a)).toEqual(ends(b));
    expect(ends(a)).toEqual([[0, -1], [1, -1], [2, -1], [3, 90], [6, 110], [0, -1], [0, 50]]);
    // A second, shorter list after a longer one: the scratch holds nothing over.
    const c = setup();
    c.s.otherSurfaceEndedParts('porep-1-1', parts);
    c.s.otherSurfaceEndedParts('porep-1-1', [{ index: 1, state: 'done', gpu_ms: 70 }]);
    expect(ends(c)).toEqual([[0, -1], [1, 70], [2, -1], [3, 90], [6, 110], [0, -1], [0, 50]]);
    const d = setup();
    d.s.otherSurfaceEndedParts('porep-1-1', [{ index: 0.5, state: 'done', gpu_ms: 5 }, { index: -1, state: 'done', gpu_ms: 5 }, { index: 2, state: 'done', gpu_ms: 20 }]);
    expect(ends(d)).toEqual([[0, -1], [1, -1], [2, 20], [3, -1], [6, -1], [0, -1], [0, -1]]);
  });
});

describe('forgetting jobs', () => {
  test('an ended job quiet for 60 s is forgotten; one still in flight after 600 s quiet, unless a worker holds it', () => {
    const h = new H({ gpuTimeoutMs: 10_000_000 });
    h.feed(...part('porep-1-1', 0, 0, 1000, 2000));
    h.feed(tl(2000, 'GPU_PICKUP', 'porep-1-2', 'worker=1,partition=0'), tl(2000, 'GPU_START', 'porep-1-2', 'worker=1,partition=0'));
    h.feed(tl(2000, 'GPU_QUEUE', 'porep-1-3', 'partition=0'));
    h.at(2000 + 60_000 + 1000 - 1);
    expect(h.s.jobById('porep-1-1')).toBeDefined();
    h.at(2000 + 60_000 + 1000);
    expect(h.s.jobById('porep-1-1')).toBeUndefined();
    h.at(2000 + 600_000 + 1000 - 1);
    expect(h.s.jobById('porep-1-3')).toBeDefined();
    h.at(2000 + 600_000 + 1000);
    expect(h.s.jobById('porep-1-3')).toBeUndefined();
    h.at(2000 + 900_000);
    expect(h.s.jobById('porep-1-2')).toBeDefined(); // worker 1 is on it
    expect(h.s.jobs.size).toBe(1);
  });

  test('a job forgotten with no kind known: counted under "other" first', () => {
    const h = new H({ unresolvedMs: 10_000_000 });
    h.feed(...part('job-x', 0, 0, 1000, 2000));
    const j = h.s.jobById('job-x')!;
    h.at(2000 + 60_000 + 1000);
    expect(h.s.jobById('job-x')).toBeUndefined();
    expect([j.kind, h.gpuMs(OTHER), h.err('timeline_unresolved_kind')]).toEqual([OTHER, 1000, 1]);
  });

  test('more than 10,000 jobs: swept at once, the oldest forgotten down to 9,000', () => {
    const h = new H({ confirmMs: 100 });
    h.feed(tl(5000, 'GPU_PICKUP', 'job-held', 'worker=0,partition=0')); // tentative: the sweep would settle it
    const lines: string[] = [];
    for (let i = 1; i < 10_000; i++) lines.push(tl(5500, 'GPU_QUEUE', `f-${i}`, 'partition=0'));
    h.nowMs = 5500;
    h.write(...lines);
    expect(h.s.jobs.size).toBe(10_000);
    expect(h.s.splitMode).toBe('unknown'); // no sweep yet: under a second since the last
    h.write(tl(5500, 'GPU_QUEUE', 'f-10000', 'partition=0'));
    expect(h.s.splitMode).toBe('off');
    expect(h.s.jobs.size).toBe(9000);
    expect(h.s.jobById('job-held')).toBeDefined();
    expect(h.s.jobById('f-1')).toBeUndefined();
    expect(h.s.jobById('f-10000')).toBeDefined();
  });

  test('a line sweeps when 1 s of offsets passed since the last sweep', () => {
    const h = new H({ confirmMs: 100 });
    h.feed(tl(5000, 'GPU_PICKUP', 'job-a', 'worker=0,partition=0'));
    h.feed(tl(5999, 'GPU_QUEUE', 'job-b', 'partition=0'));
    expect(h.s.splitMode).toBe('unknown');
    h.feed(tl(6000, 'GPU_QUEUE', 'job-b', 'partition=1'));
    expect(h.s.splitMode).toBe('off');
  });
});

describe('daemon restarts', () => {
  test('offsets back by more than 1 s: counted, stints end where exposed, jobs dropped (no kind: "other"), modes reset', () => {
    const h = new H();
    h.feed(...part('job-u', 0, 1, 1000, 3000)); // unknown kind, 2 s stage
    h.feed(tl(3000, 'SYNTH_START', 'b-1', 'kind=porep-c2'));
    expect(h.s.batchedSeen).toBe(true);
    h.feed(tl(4000, 'GPU_PICKUP', 'porep-1-1', 'worker=0,partition=0'), tl(4000, 'GPU_START', 'porep-1-1', 'worker=0,partition=0'));
    h.feed(tl(5000, 'GPU_QUEUE', 'porep-1-1', 'partition=1'));
    const u = h.s.jobById('job-u')!;
    const v0 = h.s.workersVersion;
    h.nowMs = 6000;
    h.write(tl(100, 'GPU_QUEUE', 'porep-2-2', 'partition=0'));
    expect(h.err('timeline_restart')).toBe(1);
    expect(h.warns()).toContain('cuzk restarted (TIMELINE offsets went back from 5000 ms to 100 ms); keeping totals');
    expect([...h.s.jobs.keys()]).toEqual(['porep-2-2']);
    expect([u.kind, h.err('timeline_unresolved_kind'), h.gpuMs(OTHER)]).toEqual([OTHER, 1, 2000]);
    expect([h.s.splitMode, h.s.batchedSeen, h.s.lastOffsetMs, h.s.clock.runs]).toEqual(['unknown', false, 100, 2]);
    expect([h.s.workers.busy[0], h.busyMs(0)]).toEqual([0, 1000]); // to its last line (5000)
    expect(h.s.workerIds()).toEqual([]);
    expect(h.s.workersVersion).not.toBe(v0);
    expect(h.s.claim(0)).toBeNull();
  });

  test('a restart in the catch-up: state only, not counted', () => {
    const h = new H();
    h.nowMs = 9000;
    h.history(tl(5000, 'GPU_QUEUE', 'porep-1-1', 'partition=0'), tl(100, 'GPU_QUEUE', 'porep-2-2', 'partition=0'));
    expect(h.err('timeline_restart')).toBe(0);
    expect(h.warns()).toEqual([]);
    expect([...h.s.jobs.keys()]).toEqual(['porep-2-2']);
  });

  test('after a restart the next sweep is due 1 s into the new run', () => {
    const h = new H({ confirmMs: 100 });
    h.feed(tl(5000, 'GPU_QUEUE', 'porep-1-1', 'partition=0'));
    h.nowMs = 6000;
    h.write(tl(100, 'GPU_PICKUP', 'porep-2-2', 'worker=0,partition=0'));
    h.nowMs = 7000;
    h.write(tl(1100, 'GPU_QUEUE', 'porep-2-2', 'partition=1'));
    expect(h.s.splitMode).toBe('off');
  });

  test('a line going back less than 1 s that the reads vouch for: held; the next line says whose it was', () => {
    // New run: the next line is also from before what the reads vouch for.
    const mk = () => {
      const h = new H();
      h.feed(tl(1000, 'GPU_QUEUE', 'porep-1-1', 'partition=0'), tl(5000, 'GPU_QUEUE', 'porep-1-1', 'partition=1'));
      h.readTo(10_000); // read to its end at 10 s: nothing more
      h.write(tl(4800, 'GPU_QUEUE', 'porep-2-2', 'partition=0'));
      return h;
    };
    const h = mk();
    expect(h.s.jobById('porep-2-2')).toBeUndefined();
    expect(h.s.eventsTotal).toBe(2);
    expect(h.off(h.s.nowNs())).toBe(9000);
    h.readTo(10_500);
    expect(h.off(h.s.nowNs())).toBe(9000); // frozen while held
    h.nowMs = 10_050;
    h.write(tl(4850, 'GPU_QUEUE', 'porep-2-2', 'partition=1'));
    expect(h.err('timeline_restart')).toBe(1);
    expect([...h.s.jobs.keys()]).toEqual(['porep-2-2']);
    expect(h.s.jobById('porep-2-2')!.units).toHaveLength(2);
    expect(h.s.lastOffsetMs).toBe(4850);
    expect(h.s.eventsTotal).toBe(4);

    // The old run's: the next line is past what the reads vouch for.
    const o = mk();
    o.nowMs = 10_050;
    o.write(tl(10_040, 'GPU_QUEUE', 'porep-1-1', 'partition=2'));
    expect(o.err('timeline_restart')).toBe(0);
    expect([...o.s.jobs.keys()].sort()).toEqual(['porep-1-1', 'porep-2-2']);
    expect(o.s.lastOffsetMs).toBe(10_040);

    // Nothing after it for 2 s of reads: the old run's.
    const q = mk();
    q.readTo(10_000 + 1999);
    q.s.nowNs();
    expect(q.s.jobById('porep-2-2')).toBeUndefined();
    q.readTo(10_000 + 2000);
    q.s.nowNs();
    expect(q.s.jobById('porep-2-2')).toBeDefined();
    expect(q.err('timeline_restart')).toBe(0);
    const r = mk();
    r.readTo(10_000 + 2000);
    r.s.sweep();
    expect(r.s.jobById('porep-2-2')).toBeDefined();
  });

  test('a line claiming to be more than 30 s ahead of real time: refused and counted', () => {
    const h = new H();
    h.feed(tl(1000, 'GPU_QUEUE', 'porep-1-1', 'partition=0'));
    h.nowMs = 2000;
    h.write(tl(2000 + 30_000, 'GPU_QUEUE', 'porep-1-2', 'partition=0'));
    expect(h.s.jobById('porep-1-2')).toBeDefined();
    h.write(tl(2000 + 30_001, 'GPU_QUEUE', 'porep-1-3', 'partition=0'));
    expect(h.s.jobById('porep-1-3')).toBeUndefined();
    expect(h.err('timeline_clock')).toBe(1);
    expect(h.warns()).toEqual([
      'a TIMELINE line claims offset 32001 ms, more than 30000 ms ahead of real time since its daemon started: refused (another daemon\'s log mixed in, or a clock running fast)',
    ]);
    const h2 = new H({ maxClockLeadMs: 5000 });
    h2.feed(tl(1000, 'GPU_QUEUE', 'porep-1-1', 'partition=0'));
    h2.write(tl(1000 + 5001, 'GPU_QUEUE', 'porep-1-3', 'partition=0'));
    expect(h2.err('timeline_clock')).toBe(1);
  });
});

describe('what the merge reads', () => {
  test('claim(): busy, since when, until when, the job, kind and partition; monolithic: partition -1', () => {
    const h = new H();
    h.feed(...part('porep-0-0', 0, 2, 100, 600));
    h.feed(tl(1000, 'GPU_PICKUP', 'porep-1-1', 'worker=1,partition=3'), tl(1000, 'GPU_START', 'porep-1-1', 'worker=1,partition=3'));
    expect(h.s.claim(1)).toEqual({ busy: true, sinceHr: hrOf(1000), untilHr: h.s.readUntilHr(), sample: false, kind: PC2, job: 'porep-1-1', partition: 3 });
    expect(h.s.readUntilHr()).toBe(hrOf(1000) - 1e9);
    h.feed(tl(1400, 'GPU_END', 'porep-1-1', 'worker=1,partition=3,gpu_ms=400'));
    expect(h.s.claim(1)).toEqual({ busy: false, sinceHr: hrOf(1400), untilHr: hrOf(1400) - 1e9, sample: false, kind: -1, job: null, partition: -1 });
    h.feed(tl(1500, 'SYNTH_START', 'wd-1', 'kind=window-post'), tl(1600, 'GPU_PICKUP', 'wd-1', 'worker=1'), tl(1600, 'GPU_START', 'wd-1', 'worker=1'));
    expect(h.s.claim(1)).toMatchObject({ busy: true, kind: WPOST, job: 'wd-1', partition: -1 });
    // A batch's partition line of a monolithic job: still -1.
    h.feed(tl(1700, 'SYNTH_START', 'b-1', 'kind=snap-update'), tl(1800, 'GPU_PICKUP', 'b-1', 'worker=2,partition=4'), tl(1800, 'GPU_START', 'b-1', 'worker=2,partition=4'));
    expect(h.s.claim(2)).toMatchObject({ busy: true, kind: SNAP, job: 'b-1', partition: -1 });
    expect(h.s.claim(3)).toBeNull(); // inside the arrays, never seen
    expect(h.s.claim(500)).toBeNull();
    expect(h.s.workerIds()).toEqual([1, 2]);
    expect(h.s.toHr(h.s.jobById('wd-1')!.units[0].pickT)).toBe(hrOf(1600));
  });

  test('nowNs(): the read clock less the lag, never back; running stints exposed no further than their cap', () => {
    const h = new H();
    h.feed(...part('porep-0-0', 0, 0, 100, 600)); // 500 ms seen: cap 750 ms
    h.feed(tl(1000, 'GPU_PICKUP', 'porep-1-1', 'worker=0,partition=1'), tl(1000, 'GPU_START', 'porep-1-1', 'worker=0,partition=1'));
    h.readTo(5000);
    expect(h.off(h.s.nowNs())).toBe(4000);
    expect(h.off(h.s.workers.floor[0])).toBe(1750);
    h.s.caughtUp(hrOf(3000));
    expect(h.off(h.s.nowNs())).toBe(4000);
  });

  test('workersVersion moves when a worker is first seen, not on every line', () => {
    const h = new H();
    const v0 = h.s.workersVersion;
    h.feed(tl(100, 'GPU_PICKUP', 'job-a', 'worker=3,partition=0'));
    const v1 = h.s.workersVersion;
    expect(v1).not.toBe(v0);
    h.feed(tl(100, 'GPU_START', 'job-a', 'worker=3,partition=0'));
    expect(h.s.workersVersion).toBe(v1);
    expect(h.s.jobs).toBe(h.s.units.jobs);
  });

  test('staleClaim(): a failed job, or the newest unit of that partition skipped, lost, failed or given up', () => {
    const h = new H();
    h.feed(...part('porep-0-0', 0, 7, 100, 600));
    h.feed(...part('porep-1-1', 0, 0, 1000, 1500), tl(1500, 'GPU_PICKUP', 'porep-1-1', 'worker=0,partition=1'), tl(1500, 'GPU_START', 'porep-1-1', 'worker=0,partition=1'));
    expect(h.s.staleClaim(null, 0)).toBe(false);
    expect(h.s.staleClaim('nope', 0)).toBe(false);
    expect(h.s.staleClaim('porep-1-1', 0)).toBe(false); // done
    expect(h.s.staleClaim('porep-1-1', 1)).toBe(false); // on the GPU
    expect(h.s.staleClaim('porep-1-1', 2)).toBe(false); // never seen
    h.feed(tl(2000, 'GPU_PICKUP', 'porep-1-2', 'worker=1,partition=0'), tl(2100, 'GPU_PICKUP', 'porep-1-3', 'worker=1,partition=0'));
    expect(h.s.staleClaim('porep-1-2', 0)).toBe(true); // skipped: its job failed
    h.feed(tl(2200, 'SYNTH_START', 'wd-1', 'kind=window-post'), tl(2300, 'GPU_PICKUP', 'wd-1', 'worker=2'), tl(2300, 'GPU_START', 'wd-1', 'worker=2'));
    h.s.otherSurfaceEnded('wd-1', -1, 10);
    h.at(2300 + 10 + 2000 + 1000 + 1);
    expect(h.unit('wd-1').end).toBe(END_FAILED);
    expect(h.s.staleClaim('wd-1', 5)).toBe(true); // a monolithic job: any partition is its unit
    expect(TimelineSurface.staleEnd({ end: END_SKIPPED } as TlUnit)).toBe(true);
    expect(TimelineSurface.staleEnd({ end: END_LOST } as TlUnit)).toBe(true);
    expect(TimelineSurface.staleEnd({ end: END_FAILED } as TlUnit)).toBe(true);
    expect(TimelineSurface.staleEnd({ end: END_ABANDONED } as TlUnit)).toBe(true);
    expect(TimelineSurface.staleEnd({ end: END_DONE } as TlUnit)).toBe(false);
    expect(TimelineSurface.staleEnd({ end: END_NONE } as TlUnit)).toBe(false);
    expect(TimelineSurface.staleEnd({ end: END_UNSEEN } as TlUnit)).toBe(false);
  });

  test('staleClaim(): the newest unit of the partition decides, not an older one', () => {
    const h = new H();
    h.feed(...part('porep-0-0', 0, 7, 100, 600));
    h.feed(tl(1000, 'GPU_PICKUP', 'porep-1-1', 'worker=0,partition=0'), tl(1000, 'GPU_START', 'porep-1-1', 'worker=0,partition=0'));
    h.feed(tl(1500, 'GPU_PICKUP', 'porep-1-1', 'worker=0,partition=1'), tl(1500, 'GPU_START', 'porep-1-1', 'worker=0,partition=1'));
    h.feed(tl(2000, 'GPU_END', 'porep-1-1', 'worker=0,partition=1,gpu_ms=500'));
    h.at(2000 + 2000 + 1000 + 1); // p0 given up: its worker finished p1
    expect(h.unit('porep-1-1', 0).end).toBe(END_LOST);
    expect(h.s.staleClaim('porep-1-1', 0)).toBe(true);
    h.feed(tl(6000, 'GPU_PICKUP', 'porep-1-1', 'worker=0,partition=0'), tl(6000, 'GPU_START', 'porep-1-1', 'worker=0,partition=0'));
    expect(h.s.staleClaim('porep-1-1', 0)).toBe(false);
  });
});
