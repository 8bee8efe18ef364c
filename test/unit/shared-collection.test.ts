/**
 * Concurrent scrapes share one collection (src/exporter/shared-collection.ts, issue 21):
 * requests waiting when a collection starts get its bodies, encoded once per format and
 * content encoding for that collection only; a request that arrives while a collection
 * runs waits for the next one, so it sees every event before its arrival.
 */
import * as zlib from 'node:zlib';
import { GZIP_LEVEL, metricsReply } from '../../src/exporter/exposition';
import { CollectionBodies, utf8Of } from '../../src/exporter/shared-collection';
import { Telemetry } from '../../src/exporter/telemetry';
import { silentLogger } from '../../src/util/logger';
import { ev, MS } from '../helpers/scripted-source';
import { goldenSource } from '../helpers/golden-script';

const OM = 'application/openmetrics-text;version=1.0.0';
const req = (accept: string | undefined, acceptEncoding: string | undefined, method = 'GET') => ({ method, headers: { accept, 'accept-encoding': acceptEncoding } });

function setup() {
  let telemetry!: Telemetry;
  const source = goldenSource((s) => (telemetry = new Telemetry(s, { version: 't', logger: silentLogger })));
  let refreshes = 0;
  source.refresh = () => void refreshes++;
  return { telemetry, source, refreshes: () => refreshes };
}

test('requests waiting together: one collection, each body rendered and encoded once, for that collection only', async () => {
  const { telemetry, refreshes } = setup();
  try {
    const asks = [req(undefined, undefined), req(undefined, 'gzip'), req(OM, 'gzip'), req(OM, undefined), req(OM, 'gzip'), req(undefined, 'gzip')];
    const [text, om, ...replies] = await Promise.all([telemetry.scrape('text'), telemetry.scrape('openmetrics'), ...asks.map((r) => metricsReply(telemetry, r))]);
    expect(refreshes()).toBe(1);
    // Same format and encoding: the very same bytes, compressed once.
    expect(replies[1].body).toBe(replies[5].body);
    expect(replies[2].body).toBe(replies[4].body);
    expect(Buffer.isBuffer(replies[0].body) && replies[0].body.toString('utf8')).toBe(text);
    expect(zlib.gunzipSync(replies[1].body as Buffer).toString('utf8')).toBe(text);
    expect(zlib.gunzipSync(replies[2].body as Buffer).toString('utf8')).toBe(om);
    expect((replies[3].body as Buffer).toString('utf8')).toBe(om);
    expect(replies[1].headers['Content-Encoding']).toBe('gzip');
    expect(replies[0].headers['Content-Encoding']).toBeUndefined();
    // gzip at the shipped level.
    expect(replies[1].body).toEqual(zlib.gzipSync(text, { level: GZIP_LEVEL }));
    // The next collection encodes afresh: nothing is served from an older one.
    const again = await metricsReply(telemetry, req(undefined, 'gzip'));
    expect(refreshes()).toBe(2);
    expect(again.body).not.toBe(replies[1].body);
    // HEAD: no compression work, the same headers.
    const head = await metricsReply(telemetry, req(undefined, 'gzip', 'HEAD'));
    expect(head.body).toBe('');
    expect(head.headers).toEqual(replies[1].headers);
  } finally {
    await telemetry.shutdown();
  }
});

test('a request that arrives while a collection runs waits for the next one and sees what happened before it arrived', async () => {
  const { telemetry, source } = setup();
  try {
    const before = source.model.eventsTotal;
    let late: Promise<string> | null = null;
    let collections = 0;
    source.refresh = () => {
      collections++;
      if (collections !== 1) return;
      // While the first collection runs (its drain done, its result not ready yet): a new
      // event, then a request.
      queueMicrotask(() => {
        source.apply([ev.depth(70 * MS, 0, 3)]);
        late = telemetry.scrape();
      });
    };
    const early = await telemetry.scrape();
    expect(late).not.toBeNull();
    const lateBody = await late!;
    expect(collections).toBe(2);
    const events = (body: string) => Number(/^cuzk_exporter_events_total (\d+)$/m.exec(body)![1]);
    // The first collection drained before the event; the late request's covers it.
    expect(events(early)).toBe(before);
    expect(events(lateBody)).toBe(before + 1);
    expect(lateBody).toMatch(/^cuzk_queue_depth\{proof_kind="porep-c2"\} 3$/m);
  } finally {
    await telemetry.shutdown();
  }
});

test('a body rendered as bytes (the OpenMetrics writer) is sent as those bytes, and read back as their text', () => {
  const whole = '# HELP a ünïcödé\na{job_id="日本"} 1\n# EOF\n';
  const bytes = Buffer.from(whole, 'utf8');
  let renders = 0;
  const bodies = new CollectionBodies(() => (renders++, bytes));
  expect(bodies.encoded('openmetrics')).toBe(bytes);
  expect(bodies.text('openmetrics')).toBe(whole);
  expect(zlib.gunzipSync(bodies.encoded('openmetrics', GZIP_LEVEL)).toString('utf8')).toBe(whole);
  expect(renders).toBe(1);
});

test('a body rendered in pieces is sent as the UTF-8 of their concatenation, whatever the characters', () => {
  const pieces = ['# HELP a ünïcödé\n', '', 'a{job_id="日本"} 1\n', 'b{x="😀 \\"q\\""} 2\n', 'x'.repeat(70_000), '\n# EOF\n'];
  const whole = pieces.join('');
  expect(utf8Of(pieces).equals(Buffer.from(whole, 'utf8'))).toBe(true);
  const bodies = new CollectionBodies(() => pieces);
  expect(bodies.text('text')).toBe(whole);
  expect(bodies.encoded('text').equals(Buffer.from(whole, 'utf8'))).toBe(true);
  expect(zlib.gunzipSync(bodies.encoded('text', GZIP_LEVEL)).toString('utf8')).toBe(whole);
});
