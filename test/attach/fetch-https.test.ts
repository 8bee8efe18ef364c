/**
 * The /status poll of an https:// URL stays on Node's https client and its keep-alive agent
 * (only http:// goes through http1-client.ts): the same outcomes as for http://. A real TLS
 * server on 127.0.0.1 with a certificate from a throwaway CA (test/hostile/pki.ts), trusted
 * through the poller's agent: an answer (the connection reused by the next poll), an HTTP
 * error status, a declared body over the limit, and an untrusted certificate (a `connect`
 * failure).
 */
import * as fs from 'node:fs';
import * as https from 'node:https';
import * as os from 'node:os';
import * as path from 'node:path';
import type { AddressInfo } from 'node:net';
import { fetchLimited, KeepAlive } from '../../src/engine/sources/attach/attach-source';
import { Pki } from '../hostile/pki';

let dir: string;
let server: https.Server;
let url = '';
let ca: Buffer;
let connections = 0;
let answer: { status: number; body: string } = { status: 200, body: '{"ok":true}' };

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cuzk-fetch-https-'));
  const pki = new Pki(dir);
  const pair = pki.issue('cuzk', ['IP:127.0.0.1', 'DNS:localhost']);
  ca = pki.read(pki.ca.cert);
  server = https.createServer({ cert: pki.read(pair.cert), key: pki.read(pair.key) }, (_req, res) => {
    res.writeHead(answer.status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(answer.body) });
    res.end(answer.body);
  });
  server.on('secureConnection', () => connections++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `https://127.0.0.1:${(server.address() as AddressInfo).port}/status`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  fs.rmSync(dir, { recursive: true, force: true });
});

/** A poller's agents, trusting the test CA. */
function trusting(): KeepAlive {
  const ka = new KeepAlive();
  (ka.https as unknown as { options: https.AgentOptions }).options.ca = ca;
  return ka;
}

const outcome = (p: Promise<Buffer>) =>
  p.then(
    (b) => ({ body: b.toString() }),
    (e: Error & { reason?: string }) => ({ reason: e.reason, message: e.message }),
  );

test('answered over TLS, the connection kept for the next poll', async () => {
  const ka = trusting();
  try {
    answer = { status: 200, body: '{"ok":true}' };
    const before = connections;
    expect(await outcome(fetchLimited(url, 5000, 1 << 20, undefined, ka))).toEqual({ body: '{"ok":true}' });
    expect(await outcome(fetchLimited(url, 5000, 1 << 20, undefined, ka))).toEqual({ body: '{"ok":true}' });
    expect(connections - before).toBe(1);
  } finally {
    ka.destroy();
  }
});

test('an HTTP error status and a declared body over the limit, as for http://', async () => {
  const ka = trusting();
  try {
    answer = { status: 503, body: 'busy' };
    expect(await outcome(fetchLimited(url, 5000, 1 << 20, undefined, ka))).toEqual({ reason: 'http_status', message: `GET ${url}: HTTP 503 Service Unavailable` });
    answer = { status: 200, body: 'x'.repeat(2000) };
    expect(await outcome(fetchLimited(url, 5000, 1000, undefined, ka))).toEqual({ reason: 'body_too_large', message: `GET ${url}: body of 2000 bytes exceeds the limit of 1000` });
  } finally {
    ka.destroy();
  }
});

test('a certificate nobody trusts: a connect failure', async () => {
  const ka = new KeepAlive();
  try {
    const o = await outcome(fetchLimited(url, 5000, 1 << 20, undefined, ka));
    expect(o).toMatchObject({ reason: 'connect' });
    expect((o as { message: string }).message).toMatch(/certificate/i);
  } finally {
    ka.destroy();
  }
});
