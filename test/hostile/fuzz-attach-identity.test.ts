/**
 * Issue 20: fast-check generators for the attach side's identity, clock and size checks.
 *  - identity: one honest daemon (random wall-clock steps, restarts, jitter) is never a
 *    conflict and every restart is seen; two daemons alternating (never three answers of one
 *    in a row) never make a restart;
 *  - clock: random interleavings of two daemons' TIMELINE lines, offsets sent back, jumps
 *    ahead and fast clocks: every worker's busy seconds never decrease and never exceed the
 *    elapsed time plus the lead tolerance and the restart slack;
 *  - sizes: the counts taken before decoding (objects in a JSON body, entries of a protobuf
 *    repeated field) are exact up to their limit, whatever the input.
 * CUZK_FUZZ_RUNS / CUZK_FUZZ_SEED as the other fuzzers.
 */
import fc from 'fast-check';
import { countRepeatedField } from '../../src/engine/sources/attach/grpc-wire';
import { DEFAULT_MAX_LEAD_MS, RESTART_SLACK_NS } from '../../src/engine/sources/attach/timeline-clock';
import { IdentityGuard, RESTART_SLACK_S } from '../../src/engine/sources/plausibility';
import { jsonContainerCountBytes } from '../../src/util/strict-json';
import { TimelineDriver, tl } from '../attach/timeline-driver';

const RUNS = Number(process.env.CUZK_FUZZ_RUNS ?? 150);
const SEED = Number(process.env.CUZK_FUZZ_SEED ?? 20261202);
const opts = { numRuns: RUNS, seed: SEED };

describe('identity', () => {
  test('one honest daemon: restarts seen, never a conflict', () => {
    const step = fc.record({ dtS: fc.double({ min: 0, max: 600, noNaN: true }), restart: fc.boolean(), startedS: fc.double({ min: 0, max: 1, noNaN: true }), jitterS: fc.double({ min: 0, max: 0.5, noNaN: true }) });
    fc.assert(
      fc.property(fc.double({ min: 0, max: 1e7, noNaN: true }), fc.array(step, { minLength: 1, maxLength: 40 }), (up0, steps) => {
        const g = new IdentityGuard();
        let hr = 1e12;
        let up = up0;
        let reported = up0;
        expect(g.check(up, hr)).toBe('first');
        for (const s of steps) {
          hr += s.dtS * 1e9;
          // A restart: the new process started some time within the step; uptime since then.
          const restarted = s.restart && up > s.dtS + RESTART_SLACK_S + 1;
          up = restarted ? s.dtS * s.startedS : up + s.dtS;
          // Answers reach us late by up to 0.5 s; an uptime never goes back without a restart.
          reported = restarted ? up + s.jitterS : Math.max(reported, up + s.jitterS);
          const v = g.check(reported, hr);
          expect(v).not.toBe('conflict');
          if (restarted) expect(v).toBe('restart');
        }
      }),
      opts,
    );
  });

  test('two daemons alternating at one address (never three of one in a row): never a restart', () => {
    fc.assert(
      fc.property(
        fc.double({ min: 1000, max: 1e6, noNaN: true }),
        fc.double({ min: 1000, max: 1e6, noNaN: true }),
        fc.boolean(),
        fc.array(fc.record({ dtS: fc.double({ min: 0, max: 10, noNaN: true }), bRun: fc.integer({ min: 1, max: 2 }) }), { minLength: 1, maxLength: 30 }),
        (upA, gap, older, steps) => {
          // B has been up longer, or started later but well before our first look (an
          // uptime near 0 would be a plausible restart).
          const upB = older || upA - gap < 1000 ? upA + gap : upA - gap;
          const g = new IdentityGuard();
          let hr = 1e12;
          let t = 0;
          g.check(upA, hr);
          for (const s of steps) {
            for (let i = 0; i < s.bRun; i++) {
              hr += s.dtS * 1e9;
              t += s.dtS;
              expect(g.check(upB + t, hr)).toBe('conflict');
            }
            hr += 1e8;
            t += 0.1;
            expect(g.check(upA + t, hr)).toBe('same');
          }
        },
      ),
      opts,
    );
  });
});

describe('clock', () => {
  const LEAD_MS = DEFAULT_MAX_LEAD_MS;
  const line = fc.oneof(
    { weight: 6, arbitrary: fc.record({ kind: fc.constant('stint' as const), who: fc.integer({ min: 0, max: 1 }), worker: fc.integer({ min: 0, max: 1 }), durMs: fc.integer({ min: 1, max: 60_000 }) }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('back' as const), toMs: fc.integer({ min: 0, max: 10_000 }), worker: fc.integer({ min: 0, max: 1 }), durMs: fc.integer({ min: 1, max: 30_000 }) }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('jump' as const), offMs: fc.constantFrom(999999999999999, 2 ** 40, 1e12), worker: fc.integer({ min: 0, max: 1 }) }) },
  );
  const step = fc.record({ dtMs: fc.integer({ min: 0, max: 3000 }), fast: fc.constantFrom(1, 1, 1, 10, 1000), lines: fc.array(line, { maxLength: 4 }) });

  // Monotonicity is checked on /metrics by the other fuzzers; here busySecs reads the model,
  // where a worker that leaves the topology at a restart reads 0.
  test('random interleavings of two daemons, offsets back, jumps and fast clocks: busy seconds within the wall clock', () => {
    fc.assert(
      fc.property(fc.integer({ min: -20_000, max: 6_000_000 }), fc.array(step, { minLength: 1, maxLength: 40 }), (bAheadMs, steps) => {
        const d = new TimelineDriver();
        let now = 1000;
        d.at(now);
        let fastOff = now;
        let n = 0;
        for (const s of steps) {
          now += s.dtMs;
          fastOff += s.dtMs * s.fast;
          d.at(now);
          for (const l of s.lines) {
            const job = `j${n++}`;
            if (l.kind === 'stint') {
              const off = l.who === 0 ? (s.fast > 1 ? fastOff : now) : now + bAheadMs;
              if (off < 0) continue;
              d.write(tl(off, 'GPU_PICKUP', job, `worker=${l.worker}`), tl(off, 'GPU_START', job, `worker=${l.worker}`), tl(off + l.durMs, 'GPU_END', job, `worker=${l.worker},gpu_ms=${l.durMs}`));
            } else if (l.kind === 'back') {
              d.write(tl(l.toMs, 'GPU_PICKUP', job, `worker=${l.worker}`), tl(l.toMs, 'GPU_START', job, `worker=${l.worker}`), tl(l.toMs + l.durMs, 'GPU_END', job, `worker=${l.worker},gpu_ms=${l.durMs}`));
            } else {
              d.write(tl(l.offMs, 'GPU_END', job, `worker=${l.worker},gpu_ms=1000`));
            }
          }
          const v = d.view();
          const elapsedS = (now - 1000) / 1000;
          for (const w of [0, 1]) {
            const b = v.busySecs(w);
            // Lines may claim up to the lead ahead; a restart within the slack once a minute.
            expect(b).toBeLessThanOrEqual(elapsedS + LEAD_MS / 1000 + (RESTART_SLACK_NS / 1e9) * (1 + elapsedS / 60) + 1e-6);
          }
        }
      }),
      opts,
    );
  });
});

describe('sizes', () => {
  test('objects and arrays in a JSON body are counted exactly up to the limit, strings skipped', () => {
    const json = fc.jsonValue({ maxDepth: 6 });
    const count = (v: unknown): number => (v !== null && typeof v === 'object' ? 1 + Object.values(v as object).reduce((a: number, x) => a + count(x), 0) : 0);
    fc.assert(
      fc.property(json, fc.integer({ min: 0, max: 50 }), (v, limit) => {
        const b = Buffer.from(JSON.stringify(v));
        const real = count(v);
        const got = jsonContainerCountBytes(b, limit);
        if (real <= limit) expect(got).toBe(real);
        else expect(got).toBe(limit + 1);
      }),
      opts,
    );
  });

  test('entries of a protobuf repeated field are counted on the wire exactly up to the limit; a malformed message is Infinity', () => {
    const varint = (n: number) => {
      const out: number[] = [];
      do {
        let c = n & 0x7f;
        n = Math.floor(n / 128);
        if (n > 0) c |= 0x80;
        out.push(c);
      } while (n > 0);
      return out;
    };
    const field = fc.record({ no: fc.integer({ min: 1, max: 12 }), wire: fc.constantFrom(0, 1, 2, 5), len: fc.integer({ min: 0, max: 300 }), v: fc.nat() });
    fc.assert(
      fc.property(fc.array(field, { maxLength: 200 }), fc.integer({ min: 0, max: 100 }), fc.integer({ min: 0, max: 3 }), (fields, limit, cut) => {
        const bytes: number[] = [];
        let real = 0;
        for (const f of fields) {
          bytes.push(...varint(f.no * 8 + f.wire));
          if (f.no === 1) real++; // whatever the wire type: protobufjs decodes each as a message
          if (f.wire === 0) bytes.push(...varint(f.v));
          else if (f.wire === 1) bytes.push(...new Array(8).fill(1));
          else if (f.wire === 5) bytes.push(...new Array(4).fill(1));
          else {
            bytes.push(...varint(f.len), ...new Array(f.len).fill(0x20));
          }
        }
        const whole = Uint8Array.from(bytes);
        const got = countRepeatedField(whole, 1, limit);
        expect(got).toBe(real <= limit ? real : limit + 1);
        // Cut short inside the last length-delimited field: not a message (unless already over the limit).
        const last = fields[fields.length - 1];
        if (cut > 0 && last && last.wire === 2 && last.len >= cut && real <= limit) expect(countRepeatedField(whole.subarray(0, whole.length - cut), 1, limit)).toBe(Infinity);
      }),
      opts,
    );
  });
});
