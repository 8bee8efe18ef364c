/**
 * `prove` verifies every proof for its own job (ABI v2: proofs are bound to their job), and
 * says NO with exit 1 when a proof does not verify: a corrupted proof
 * (--fault.corrupt-proof-nth) and a proof presented for another job (--fault.verify-as-job).
 * The same binding through the engine API: swapped proofs fail, their own ids pass.
 * Runs the compiled CLI (built by the jest global setup), as users do.
 */
import { runCli } from '../helpers/cli-run';
import { NativeEngine } from '../../src/engine/sources/native/native-engine';

const cli = (args: string[], timeoutMs = 60_000) => runCli(args, {}, timeoutMs);


const rows = (s: string) => s.split('\n').filter((l) => l.trim() !== '').slice(1); // without the header

describe('prove verifies each proof for its own job', () => {
  test('--fault.corrupt-proof-nth 1: the first proof is reported NO and the run exits 1; the second verifies', async () => {
    const r = await cli(['prove', '--kind', 'winning-post', '--count', '2', '--concurrency', '1', '--fault.corrupt-proof-nth', '1']);
    const table = rows(r.stdout);
    expect(table).toHaveLength(2);
    // one at a time, so the first completed proof is the first row
    expect(table[0]).toMatch(/^\S+\s+completed\s+1(\s+\d+\.\d{3}){4}\s+NO$/);
    expect(table[1]).toMatch(/^\S+\s+completed\s+1(\s+\d+\.\d{3}){4}\s+yes$/);
    const firstId = table[0].split(/\s+/)[0];
    expect(r.stderr).toContain('prove: 1 of 2 proofs failed:');
    expect(r.stderr).toContain(`${firstId}: proof does not verify: partition 0: A(s)*B(s) - C(s) != H(s)*(s^n - 1)`);
    expect(r.code).toBe(1);
  });

  test('--json reports verified: false for the corrupted proof', async () => {
    const r = await cli(['prove', '--kind', 'winning-post', '--count', '1', '--json', '--fault.corrupt-proof-nth', '1']);
    const objs = r.stdout.split('\n').filter((l) => l.trim() !== '').map((l) => JSON.parse(l) as { outcome: string; verified: boolean | null });
    expect(objs).toEqual([expect.objectContaining({ outcome: 'completed', verified: false })]);
    expect(r.code).toBe(1);
  });

  test('a proof presented for another job is rejected (NO, exit 1), with the reason', async () => {
    const r = await cli(['prove', '--kind', 'winning-post', '--count', '1', '--fault.verify-as-job', 'ps-wrong-job']);
    const table = rows(r.stdout);
    expect(table).toHaveLength(1);
    expect(table[0]).toMatch(/^\S+\s+completed\s+1(\s+\d+\.\d{3}){4}\s+NO$/);
    const id = table[0].split(/\s+/)[0];
    expect(id).not.toBe('ps-wrong-job');
    expect(r.stderr).toContain(`${id}: proof does not verify as job ps-wrong-job: partition 0: witness seed is not this job's`);
    expect(r.code).toBe(1);
  });
});

describe('proof binding through the engine API', () => {
  let engine: NativeEngine | null = null;
  afterAll(async () => {
    await engine?.close();
  });

  test("each proof verifies for its own job id and not for the other's, even with the same kind and size", async () => {
    engine = NativeEngine.open({ sizes: { 'snap-update': 9 } });
    const a = engine.submit('snap-update', { requestId: 'job-a', partitions: 2 });
    const b = engine.submit('snap-update', { requestId: 'job-b', partitions: 2 });
    const [ra, rb] = await Promise.all([engine.awaitProof(a), engine.awaitProof(b)]);
    expect([ra.outcome, rb.outcome]).toEqual(['completed', 'completed']);
    const pa = engine.proof(a);
    const pb = engine.proof(b);
    expect(pa.length).toBe(pb.length);
    expect(engine.verify(pa, 'job-a')).toBe(true);
    expect(engine.verify(pb, 'job-b')).toBe(true);
    const swapped = engine.verifyWithReason(pa, 'job-b');
    expect(swapped.valid).toBe(false);
    expect(swapped.reason).toMatch(/witness seed is not this job's/);
    expect(engine.verify(pb, 'job-a')).toBe(false);
  });
});
