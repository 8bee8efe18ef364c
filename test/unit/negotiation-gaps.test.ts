/**
 * Issue 23: Accept-Encoding with gzip and identity at equal quality was never asked, so a
 * tie broken towards identity (`>` for `>=` in negotiate.ts) survived the suite. RFC 9110
 * §12.5.3: at equal q the server picks; this exporter picks gzip (both are acceptable to
 * the client, and gzip is what --web.compression asks for). Checked on the answer itself:
 * the Content-Encoding header and a body that gunzips to the exposition.
 */
import * as zlib from 'node:zlib';
import { metricsReply } from '../../src/exporter/exposition';
import { acceptsGzip, negotiateFormat } from '../../src/exporter/negotiate';
import { CollectionBodies } from '../../src/exporter/shared-collection';

const TEXT = '# TYPE cuzk_up gauge\ncuzk_up 1\n';
const telemetry = { collection: async () => new CollectionBodies(() => TEXT) } as unknown as Parameters<typeof metricsReply>[0];

test.each(['gzip, identity', 'identity, gzip', 'gzip;q=0.5, identity;q=0.5', 'identity;q=0.8, gzip;q=0.8', '*, identity'])('Accept-Encoding "%s" (gzip ties identity): gzip', async (ae) => {
  expect(acceptsGzip(ae)).toBe(true);
  const r = await metricsReply(telemetry, { method: 'GET', headers: { 'accept-encoding': ae } });
  expect(r.headers['Content-Encoding']).toBe('gzip');
  expect(zlib.gunzipSync(r.body as Buffer).toString('utf8')).toBe(TEXT);
});

test.each(['gzip;q=0.5, identity', 'identity;q=0.9, gzip;q=0.8', 'gzip, identity', 'gzip;q=0'])('Accept-Encoding "%s" with --web.compression none or identity ranked above: plain', async (ae) => {
  const compression = ae === 'gzip, identity' ? 'none' : 'gzip';
  const r = await metricsReply(telemetry, { method: 'GET', headers: { 'accept-encoding': ae } }, compression);
  expect(r.headers['Content-Encoding']).toBeUndefined();
  expect(Buffer.from(r.body).toString('utf8')).toBe(TEXT);
  expect(r.headers.Vary).toBe('Accept, Accept-Encoding');
});

// Survivors of `npm run mutate -- --mutate src/exporter/negotiate.ts,src/exporter/exposition.ts`
// (test/mutation/README.md), killed here. Expectations from client_golang's expfmt.Negotiate
// and RFC 9110 (§5.6.6 quoted parameter values, §12.4.2 qvalues: 0 to 1, three decimals).

test('Content-Type of each format, as Prometheus expects it', async () => {
  const om = await metricsReply(telemetry, { method: 'GET', headers: { accept: 'application/openmetrics-text;version=1.0.0' } }, 'none');
  expect(om.contentType).toBe('application/openmetrics-text; version=1.0.0; charset=utf-8');
  const text = await metricsReply(telemetry, { method: 'GET', headers: {} }, 'none');
  expect(text.contentType).toBe('text/plain; version=0.0.4; charset=utf-8');
});

test.each([
  // [Accept, format]
  ['*/*;q=1, application/openmetrics-text;q=0.5', 'text'], // a wildcard ranked higher wins
  ['text/*;q=1, application/openmetrics-text;q=0.5', 'text'],
  ['text/plain;version=1.0.0;q=1, application/openmetrics-text;q=0.5', 'openmetrics'], // a text version we do not write is no competitor
  ['application/openmetrics-text;qq', 'openmetrics'], // a parameter without "=" is ignored
  ['text/plain;q=0.9, application/openmetrics-text; Q=0.5', 'text'], // parameter names: trimmed, case-insensitive
  ['application/openmetrics-text;version= 1.0.0', 'openmetrics'], // values trimmed
  ['application/openmetrics-text;version="1.0.0"', 'openmetrics'], // a quoted value
  ['application/openmetrics-text;version=x1.0.0"', 'text'], // half-quoted: not 1.0.0
  ['application/openmetrics-text;version="1.0.0x', 'text'],
  ['application/openmetrics-text;version=11.0.00', 'text'],
  ['text/plain;q=0.9, application/openmetrics-text;q=10', 'text'], // q above 1: unusable
  ['text/plain;q=1, application/openmetrics-text;q=1.5', 'text'],
  ['application/openmetrics-text;q=1.00', 'openmetrics'], // 1 with up to three zeros
  ['application/openmetrics-text;q=0.001', 'openmetrics'],
])('Accept %j -> %s', (accept, format) => {
  expect(negotiateFormat(accept)).toBe(format);
});

test('Accept-Encoding: only "identity" itself can rank identity above gzip', () => {
  expect(acceptsGzip('gzip;q=0.5, br')).toBe(true);
  expect(acceptsGzip('gzip;q=0.5, deflate;q=1')).toBe(true);
});

test('headers repeated and interleaved (as scrapers send them) get the same answer each time: the remembered answer is per header', () => {
  // Answers from the file's rules, by hand: OpenMetrics by name with the highest q; text otherwise.
  const om = 'application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5';
  const text = 'text/plain;version=0.0.4';
  const sequence: [string | string[] | undefined, 'openmetrics' | 'text'][] = [
    [om, 'openmetrics'],
    [om, 'openmetrics'],
    [text, 'text'],
    [text, 'text'],
    [om, 'openmetrics'],
    [[om], 'openmetrics'],
    [text, 'text'],
    [undefined, 'text'],
    [om, 'openmetrics'],
    [[text, om], 'text'], // joined: text/plain listed first at q=1 wins the tie
    [om, 'openmetrics'],
  ];
  for (const [accept, want] of sequence) expect([accept, negotiateFormat(accept)]).toEqual([accept, want]);
  const encodings: [string | undefined, boolean][] = [
    ['gzip', true],
    ['gzip', true],
    ['identity', false],
    ['identity', false],
    ['gzip', true],
    [undefined, false],
    ['gzip;q=0', false],
    ['gzip', true],
  ];
  for (const [ae, want] of encodings) expect([ae, acceptsGzip(ae)]).toEqual([ae, want]);
});
