/**
 * Issue 23: Accept-Encoding with gzip and identity at equal quality was never asked, so a
 * tie broken towards identity (`>` for `>=` in negotiate.ts) survived the suite. RFC 9110
 * §12.5.3: at equal q the server picks; this exporter picks gzip (both are acceptable to
 * the client, and gzip is what --web.compression asks for). Checked on the answer itself:
 * the Content-Encoding header and a body that gunzips to the exposition.
 */
import * as zlib from 'node:zlib';
import { metricsReply } from '../../src/exporter/exposition';
import { acceptsGzip } from '../../src/exporter/negotiate';
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
