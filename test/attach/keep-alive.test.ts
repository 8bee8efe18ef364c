/**
 * The /status poll keeps one connection alive from poll to poll (a new TCP connection per
 * poll cost ~0.3 ms of CPU of issue 10's 2 ms cycle), and that must change nothing an
 * operator sees: a daemon that closes an idle kept-alive connection just as it is reused is
 * asked again, once, on a new connection (not a failure, nothing counted); a daemon that
 * hangs up on every request is a counted `connect` failure after that one retry, never a
 * retry loop. Real HTTP stand-in (status-server.ts), the real AttachSource.
 */
import { find, parse, Sample } from '../helpers/prom-text';
import { Harness, startHarness } from './harness';
import { fixture } from './snapshots';
import { StatusServer } from './status-server';

const GOOD = fixture('02-snap-busy-consistent.json');
let daemon: StatusServer;
let h: Harness;
beforeEach(async () => {
  daemon = await StatusServer.start();
  h = await startHarness({ url: daemon.url, timeoutMs: 5000 });
});
afterEach(async () => {
  await h.close();
  await daemon.close();
});

async function samples(): Promise<Sample[]> {
  const { status, body } = await h.metrics();
  expect(status).toBe(200);
  return parse(body);
}
const errs = (x: Sample[], reason: string) => find(x, 'cuzk_exporter_errors_total', { reason }) ?? 0;

test('polls share one kept-alive connection', async () => {
  daemon.behaviour = { kind: 'body', body: GOOD.text };
  for (let i = 0; i < 5; i++) await h.source.pollOnce();
  expect(daemon.requests).toBe(5);
  expect(daemon.connections).toBe(1);
  const s = await samples();
  expect(find(s, 'cuzk_up')).toBe(1);
  expect(errs(s, 'connect')).toBe(0);
});

test('a kept-alive connection closed as it is reused: asked again on a new one, nothing counted', async () => {
  daemon.behaviour = { kind: 'drop', always: false, body: GOOD.text };
  await h.source.pollOnce(); // first connection, answered
  await h.source.pollOnce(); // reused: hung up on; asked again on a second connection
  await h.source.pollOnce(); // the second connection reused: the same again
  expect(daemon.requests).toBe(5);
  expect(daemon.connections).toBe(3);
  const s = await samples();
  expect(find(s, 'cuzk_up')).toBe(1);
  expect(errs(s, 'connect')).toBe(0);
});

test('a daemon hanging up on every request: one retry, then a counted connect failure', async () => {
  daemon.behaviour = { kind: 'body', body: GOOD.text };
  await h.source.pollOnce();
  daemon.behaviour = { kind: 'drop', always: true, body: GOOD.text };
  await h.source.pollOnce(); // the reused connection, then one new one: both hung up on
  expect(daemon.requests).toBe(3);
  let s = await samples();
  expect(find(s, 'cuzk_up')).toBe(0);
  expect(errs(s, 'connect')).toBe(1);
  await h.source.pollOnce(); // a fresh connection (the last one is gone): no retry
  expect(daemon.requests).toBe(4);
  s = await samples();
  expect(errs(s, 'connect')).toBe(2);
});

test('a reused connection hung up on after the answer began is the daemon failing: counted, not retried', async () => {
  daemon.behaviour = { kind: 'drop', always: false, body: GOOD.text, how: 'half' };
  await h.source.pollOnce(); // first connection, answered
  await h.source.pollOnce(); // reused: headers and half the body, then a hang-up
  expect(daemon.requests).toBe(2);
  const s = await samples();
  expect(find(s, 'cuzk_up')).toBe(0);
  expect(errs(s, 'connect')).toBe(1);
});

test('a server that answers one request per connection and keeps it open: a new connection after each timeout, then for good', async () => {
  await h.close();
  h = await startHarness({ url: daemon.url, timeoutMs: 3000 }); // only ignored requests wait for it
  daemon.behaviour = { kind: 'drop', always: false, body: GOOD.text, how: 'ignore' };
  const offLog = () => h.logs.filter((l) => l.includes('connecting afresh for every poll'));
  await h.source.pollOnce(); // connection 1: answered
  await h.source.pollOnce(); // reused, ignored: the deadline
  await h.source.pollOnce(); // connection 2 (afresh after the timeout): answered, strike 1
  await h.source.pollOnce(); // reused, ignored: the deadline
  let s = await samples();
  expect(errs(s, 'timeout')).toBe(2);
  expect(offLog()).toHaveLength(0);
  await h.source.pollOnce(); // connection 3: answered, strike 2: keep-alive off
  expect(offLog()).toHaveLength(1);
  for (let i = 0; i < 3; i++) await h.source.pollOnce();
  s = await samples();
  expect(find(s, 'cuzk_up')).toBe(1);
  expect(errs(s, 'timeout')).toBe(2);
  expect(daemon.connections).toBe(6); // 3, then one per poll
  expect(offLog()).toHaveLength(1);
});

test('a hung daemon keeps keep-alive, however often it hangs: its new connections time out too', async () => {
  await h.close();
  h = await startHarness({ url: daemon.url, timeoutMs: 1000 });
  daemon.behaviour = { kind: 'body', body: GOOD.text };
  await h.source.pollOnce();
  daemon.behaviour = { kind: 'hang' };
  await h.source.pollOnce(); // reused: the deadline
  await h.source.pollOnce(); // afresh: the deadline again
  daemon.behaviour = { kind: 'body', body: GOOD.text };
  await h.source.pollOnce(); // afresh, answered: no strike (the new connection timed out too)
  await h.source.pollOnce(); // reused again
  await h.source.pollOnce();
  expect(daemon.connections).toBe(3);
  daemon.behaviour = { kind: 'hang' }; // a second episode
  await h.source.pollOnce();
  await h.source.pollOnce();
  daemon.behaviour = { kind: 'body', body: GOOD.text };
  await h.source.pollOnce(); // connection 5
  await h.source.pollOnce(); // reused: keep-alive still on
  expect(daemon.connections).toBe(5);
  const s = await samples();
  expect(errs(s, 'timeout')).toBe(4);
  expect(h.logs.filter((l) => l.includes('connecting afresh for every poll'))).toHaveLength(0);
});
