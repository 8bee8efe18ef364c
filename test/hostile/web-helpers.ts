/**
 * In-process server for the hostile web tests: the real startServer with a web config
 * file written to a temp folder, over the scripted golden source; raw HTTP(S) requests
 * that report what happened at the connection level too (a refused handshake is not an
 * HTTP status).
 */
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as https from 'node:https';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import * as tls from 'node:tls';
import { RunningServer, startServer } from '../../src/exporter/server';
import { Telemetry } from '../../src/exporter/telemetry';
import { loadWebConfig } from '../../src/exporter/web-config';
import { createLogger, Logger } from '../../src/util/logger';
import { goldenSource } from '../helpers/golden-script';
import type { ScriptedSource } from '../helpers/scripted-source';

export function tempDir(prefix: string): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

export interface Web {
  server: RunningServer;
  source: ScriptedSource;
  telemetry: Telemetry;
  logs: string[];
  file: string;
  close(): Promise<void>;
}

export async function startWeb(dir: string, yaml: string | null, opts: { maxConnections?: number; logger?: Logger } = {}): Promise<Web> {
  const file = path.join(dir, 'web.yml');
  if (yaml !== null) fs.writeFileSync(file, yaml);
  const logs: string[] = [];
  const logger = opts.logger ?? createLogger('debug', 'json', (l) => logs.push(l));
  let telemetry!: Telemetry;
  const source = goldenSource((s) => (telemetry = new Telemetry(s, { version: 't', logger })));
  const server = await startServer({
    listenAddress: '127.0.0.1:0',
    telemetryPath: '/metrics',
    webConfig: yaml === null ? undefined : loadWebConfig(file),
    maxConnections: opts.maxConnections,
    source,
    telemetry,
    logger,
    version: 't',
  });
  return {
    server,
    source,
    telemetry,
    logs,
    file,
    close: async () => {
      await server.close();
      await telemetry.shutdown();
    },
  };
}

export interface Reply {
  status: number;
  body: string;
  headers: http.IncomingHttpHeaders;
  /** Fingerprint of the server certificate (https). */
  serverCert?: string;
}

/** One request on a fresh connection; rejects on a connection-level failure. */
export function request(url: string, opts: https.RequestOptions = {}): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const mod = url.startsWith('https') ? https : http;
    const req = mod.request(url, { agent: false, ...opts }, (res) => {
      let body = '';
      const sock = res.socket as tls.TLSSocket;
      const serverCert = typeof sock.getPeerCertificate === 'function' ? sock.getPeerCertificate().fingerprint256 : undefined;
      res.setEncoding('utf8');
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, headers: res.headers, serverCert }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.setTimeout(20_000, () => req.destroy(new Error('request timed out')));
    req.end();
  });
}

/** What a request ends with: the HTTP status, or the connection-level error code. */
export async function outcome(url: string, opts: https.RequestOptions = {}): Promise<number | string> {
  try {
    return (await request(url, opts)).status;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code ?? (e as Error).message;
  }
}

/** Raw bytes to a port; resolves with everything read until the server closes. */
export function rawExchange(port: number, data: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const sock = net.connect(port, '127.0.0.1', () => sock.write(data));
    let out = '';
    sock.setEncoding('latin1');
    sock.on('data', (d) => (out += d));
    sock.on('close', () => resolve(out));
    sock.on('error', reject);
    sock.setTimeout(10_000, () => sock.destroy(new Error('no close within 10 s')));
  });
}

export const basic = (user: string, pass: string) => `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}`;

/** Waits for a condition (polled); throws with `what` after `ms`. */
export async function until(what: string, f: () => boolean | Promise<boolean>, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  for (;;) {
    if (await f()) return;
    if (Date.now() > end) throw new Error(`timed out waiting for: ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** A raw connection that records what it received and when it closed. */
export interface RawConn {
  sock: net.Socket;
  data: string;
  closed: boolean;
}

/** Opens a raw connection to 127.0.0.1:port (resolves once connected); errors are ignored, `closed` says the end. */
export async function rawConnect(port: number): Promise<RawConn>;
/** The same over TLS (resolves once the handshake is done), trusting `ca`. */
export async function rawConnect(port: number, ca: Buffer): Promise<RawConn & { sock: tls.TLSSocket }>;
export async function rawConnect(port: number, ca?: Buffer): Promise<RawConn> {
  const sock = ca ? tls.connect({ port, host: '127.0.0.1', ca }) : net.connect(port, '127.0.0.1');
  const r: RawConn = { sock, data: '', closed: false };
  sock.setEncoding('latin1');
  sock.on('data', (d: string) => (r.data += d));
  sock.on('close', () => (r.closed = true));
  sock.on('error', () => {});
  await new Promise((d) => sock.once(ca ? 'secureConnect' : 'connect', d));
  return r;
}
