/**
 * src/exporter/bcrypt-pool.ts (issue 23, its mutation suite): bcrypt comparisons in one
 * worker thread, a bounded queue, answers by id. Expectations from the file's header
 * comment and bcrypt itself (a hash verifies its own password only); real bcryptjs hashes
 * of cost 4, so each comparison is a millisecond.
 */
import bcrypt from 'bcryptjs';
import workerThreads from 'node:worker_threads';
import { BcryptPool } from '../../src/exporter/bcrypt-pool';

// A mutant that leaves something waiting fails here in 10 s, not at Stryker's ~30 s timeout.
jest.setTimeout(10_000);

const H_A = bcrypt.hashSync('alpha', 4);
const H_B = bcrypt.hashSync('beta', 4);
const SLOW = bcrypt.hashSync('gamma', 10);

let pool: BcryptPool;
afterEach(async () => {
  await pool.close();
});

test('a hash verifies its own password only; a malformed hash verifies nothing', async () => {
  pool = new BcryptPool();
  expect(await pool.compare('alpha', H_A)).toBe(true);
  expect(await pool.compare('beta', H_A)).toBe(false);
  expect(await pool.compare('beta', H_B)).toBe(true);
  expect(await pool.compare('alpha', 'not a hash')).toBe(false);
  expect(await pool.compare('', H_A)).toBe(false);
});

test('answers go to their own callers, many in flight at once', async () => {
  pool = new BcryptPool(8);
  const asks: [string, string, boolean][] = [
    ['alpha', H_A, true],
    ['beta', H_A, false],
    ['beta', H_B, true],
    ['alpha', H_B, false],
    ['x', 'nope', false],
    ['alpha', H_A, true],
  ];
  const got = await Promise.all(asks.map(([p, h]) => pool.compare(p, h)));
  expect(got).toEqual(asks.map((a) => a[2]));
});

test('pending counts what is owed; the queue holds maxPending (default 16); hasRoom false at the bound', async () => {
  pool = new BcryptPool();
  expect(pool.maxPending).toBe(16);
  expect(pool.pending).toBe(0);
  const small = new BcryptPool(2);
  try {
    expect(small.hasRoom()).toBe(true);
    const p1 = small.compare('alpha', H_A);
    expect(small.pending).toBe(1);
    expect(small.hasRoom()).toBe(true);
    const p2 = small.compare('beta', H_A);
    expect(small.pending).toBe(2);
    expect(small.hasRoom()).toBe(false);
    expect(await p1).toBe(true);
    expect(small.pending).toBeLessThanOrEqual(1);
    expect(await p2).toBe(false);
    expect(small.pending).toBe(0);
    expect(small.hasRoom()).toBe(true);
  } finally {
    await small.close();
  }
});

test('closed: no room, comparisons refused; what was owed is rejected, not left hanging', async () => {
  pool = new BcryptPool(4);
  const owed = pool.compare('alpha', H_A);
  const owed2 = pool.compare('beta', H_A);
  const settled = Promise.allSettled([owed, owed2]);
  await pool.close();
  const r = await settled;
  // Each either answered before the worker stopped or was rejected because it stopped.
  for (const x of r) if (x.status === 'rejected') expect((x.reason as Error).message).toMatch(/^bcrypt worker exited \(\d+\)$/);
  expect(pool.pending).toBe(0);
  expect(pool.hasRoom()).toBe(false);
  await expect(pool.compare('alpha', H_A)).rejects.toThrow('bcrypt pool closed');
  // Closing twice is fine.
  await pool.close();
});

test('a worker that dies fails what it owed; the next comparison gets a new worker', async () => {
  pool = new BcryptPool(4);
  expect(await pool.compare('alpha', H_A)).toBe(true);
  const w = (pool as unknown as { worker: { terminate(): Promise<number> } }).worker;
  const slow = SLOW; // cost 10: long enough to be in progress when the worker is stopped
  const owed = pool.compare('gamma', slow);
  await w.terminate();
  await expect(owed).rejects.toThrow(/^bcrypt worker exited \(1\)$/);
  expect(pool.pending).toBe(0);
  expect(pool.hasRoom()).toBe(true);
  expect(await pool.compare('beta', H_B)).toBe(true);
  expect((pool as unknown as { worker: unknown }).worker).not.toBe(w);
});

/** MessagePorts keeping the event loop alive (a ref'd worker lists its port). */
const keptAlive = (): number => process.getActiveResourcesInfo().filter((x) => x === 'MessagePort').length;

test('the pool keeps the process alive while a comparison is owed, and not once nothing is', async () => {
  pool = new BcryptPool(4);
  const base = keptAlive();
  const p1 = pool.compare('alpha', H_A);
  expect(keptAlive()).toBe(base + 1);
  expect(await p1).toBe(true);
  expect(keptAlive()).toBe(base);
  // Two owed: the first answer leaves the second owed, still kept alive; then not.
  const quick = pool.compare('alpha', H_A);
  const slow = pool.compare('gamma', SLOW);
  expect(await quick).toBe(true);
  expect(pool.pending).toBe(1);
  expect(keptAlive()).toBe(base + 1);
  expect(await slow).toBe(true);
  expect(keptAlive()).toBe(base);
});

test('a worker that fails (an exception escapes it) rejects what it owed with its message; a comparison asked before it has exited goes to a new worker and is answered', async () => {
  const Real = workerThreads.Worker;
  const made: InstanceType<typeof Real>[] = [];
  // The pool's first worker throws on its first message, as a crash in bcryptjs would.
  const spy = jest.spyOn(workerThreads, 'Worker').mockImplementation(function (src: string | URL, opts?: workerThreads.WorkerOptions) {
    const w =
      made.length === 0
        ? new Real("require('node:worker_threads').parentPort.on('message', () => { throw new Error('boom'); });", { eval: true })
        : new Real(src, opts);
    made.push(w);
    return w;
  } as never);
  try {
    pool = new BcryptPool(4);
    const owed = pool.compare('alpha', H_A);
    const first = made[0];
    const exited = new Promise((d) => first.once('exit', d));
    // Asked when the failure is known but before the failed worker's exit (listeners run in order: the pool's first).
    let between: Promise<boolean | Error> | undefined;
    first.once('error', () => {
      between = pool.compare('beta', H_B).then(
        (ok) => ok,
        (e: Error) => e,
      );
    });
    await expect(owed).rejects.toThrow(/^bcrypt worker failed: boom$/);
    await exited;
    expect(made).toHaveLength(2);
    expect(await between).toBe(true);
    // The new worker stays the pool's worker: the next comparison does not start a third.
    expect(await pool.compare('alpha', H_A)).toBe(true);
    expect(made).toHaveLength(2);
    expect(pool.pending).toBe(0);
  } finally {
    spy.mockRestore();
    // A worker the pool lost track of (a defect) must not keep this process alive.
    for (const w of made) await w.terminate();
  }
});
