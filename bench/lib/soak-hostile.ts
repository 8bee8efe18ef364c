/**
 * The soak's hostile parts (bench/soak.ts): the /status stand-in that rotates bad answers
 * for `attach`, and the rotation of hostile client actions against `run`.
 */
import type { ChildProcess } from 'node:child_process';
import * as http from 'node:http';
import * as https from 'node:https';
import * as net from 'node:net';
import * as tls from 'node:tls';

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export function get(url: string, agent: http.Agent, auth?: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve) => {
    const mod = url.startsWith('https') ? https : http;
    const req = mod.get(url, { agent, headers: auth ? { Authorization: auth } : {}, rejectUnauthorized: false, timeout: 10_000 } as https.RequestOptions, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', () => resolve({ status: -1, body: '' }));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', () => resolve({ status: -1, body: '' }));
  });
}

/** The hostile /status stand-in: the next behaviour of the rotation on each request. */
export function hostileDaemon(goodBody: () => string | null): Promise<{ server: http.Server; url: string; counts: Record<string, number> }> {
  const counts: Record<string, number> = {};
  const withGood = (f: (s: Record<string, any>) => void) => (): string | null => {
    const g = goodBody();
    if (!g) return null;
    const s = JSON.parse(g) as Record<string, any>;
    delete s.exporter;
    f(s);
    return JSON.stringify(s);
  };
  let gpuTag = 0;
  const rotation: [string, (res: http.ServerResponse) => void][] = [];
  const good = withGood(() => {});
  const json = (f: () => string | null) => (res: http.ServerResponse) => {
    const b = f();
    if (b === null) return void res.writeHead(503).end();
    res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(b) }).end(b);
  };
  const add = (name: string, h: (res: http.ServerResponse) => void, times = 1) => {
    for (let i = 0; i < times; i++) rotation.push([name, h]);
  };
  const hostile: [string, (res: http.ServerResponse) => void][] = [
    ['malformed', (res) => res.writeHead(200).end('{"uptime_secs": 12, "pipelines": [')],
    ['too_large', (res) => res.writeHead(200).end(Buffer.alloc(5 * 1024 * 1024, 0x20))],
    ['deep', json(() => good()?.replace(/}$/, `,"nested":${'['.repeat(5000)}${']'.repeat(5000)}}`) ?? null)],
    ['unknown_1mb', json(withGood((s) => (s.blob = 'u'.repeat(1024 * 1024))))],
    ['counter_drop', json(withGood((s) => s.counters && s.counters.completed_by_kind && (s.counters.completed_by_kind['snap-update'] = 0)))],
    ['gpu_ms_1e18', json(withGood((s) => s.pipelines?.[0]?.partitions?.[0] && ((s.pipelines[0].partitions[0].gpu_ms = 1e18), (s.pipelines[0].partitions[0].state = 'done'))))],
    ['long_job_id', json(withGood((s) => s.pipelines?.[0] && (s.pipelines[0].job_id = `long-${'j'.repeat(20_000)}-${Math.random()}`)))],
    ['gpu_churn', json(withGood((s) => (s.gpus = Array.from({ length: 1024 }, (_, i) => ({ ordinal: i, name: `gpu-${i}-${gpuTag}`, uuid: `GPU-${gpuTag++}-${i}`, pci_bus_id: null })))))],
    ['http_500', (res) => res.writeHead(500).end('boom')],
    ['hang', () => {}],
    ['cut_body', (res) => {
      const b = good() ?? '{}';
      res.writeHead(200, { 'Content-Length': Buffer.byteLength(b) });
      res.write(b.slice(0, Math.floor(b.length / 2)));
      res.socket?.destroy();
    }],
  ];
  // Two good answers between hostile ones: the source comes back up each time.
  for (const hb of hostile) {
    add('good', json(good), 2);
    rotation.push(hb);
  }
  let next = 0;
  const server = http.createServer((req, res) => {
    res.on('error', () => {});
    const [name, h] = rotation[next++ % rotation.length];
    counts[name] = (counts[name] ?? 0) + 1;
    h(res);
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ server, url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}/status`, counts })));
}

/** The next hostile client action against the run exporter. */
export async function hostileClient(i: number, run: { url: string; child: ChildProcess }, auth: string): Promise<string> {
  const u = new URL(run.url);
  const port = Number(u.port);
  const actions = ['wrong_passwords', 'idle_connections', 'plain_http_to_tls', 'garbage', 'huge_header', 'slow_sender', 'sighup'];
  const name = actions[i % actions.length];
  switch (name) {
    case 'wrong_passwords': {
      const agent = new https.Agent({ keepAlive: false, maxSockets: 100 });
      await Promise.all(Array.from({ length: 100 }, (_, k) => get(`${run.url}/metrics`, agent, `Basic ${Buffer.from(`prom:wrong-${i}-${k}`).toString('base64')}`)));
      agent.destroy();
      break;
    }
    case 'idle_connections': {
      const socks = Array.from({ length: 300 }, () => net.connect(port, '127.0.0.1').on('error', () => {}));
      await sleep(3000);
      for (const s of socks) s.destroy();
      break;
    }
    case 'plain_http_to_tls':
    case 'garbage':
    case 'huge_header': {
      const data = name === 'plain_http_to_tls' ? 'GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n' : name === 'garbage' ? '\x16\x03\x01\xff\xff' + 'z'.repeat(1000) : '';
      if (name === 'huge_header') {
        await new Promise<void>((resolve) => {
          const s = tls.connect({ port, host: '127.0.0.1', rejectUnauthorized: false }, () => s.write(`GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: ${'h'.repeat(64 * 1024)}\r\n\r\n`));
          s.on('data', () => {});
          s.on('error', () => resolve());
          s.on('close', () => resolve());
          s.setTimeout(5000, () => s.destroy());
        });
        break;
      }
      await new Promise<void>((resolve) => {
        const s = net.connect(port, '127.0.0.1', () => s.write(data));
        s.on('data', () => {});
        s.on('error', () => resolve());
        s.on('close', () => resolve());
        s.setTimeout(5000, () => s.destroy());
      });
      break;
    }
    case 'slow_sender': {
      await new Promise<void>((resolve) => {
        const s = tls.connect({ port, host: '127.0.0.1', rejectUnauthorized: false }, () => {
          let n = 0;
          const t = setInterval(() => {
            if (s.destroyed || n++ > 8) {
              clearInterval(t);
              s.destroy();
              resolve();
              return;
            }
            s.write('X');
          }, 1000);
        });
        s.on('error', () => resolve());
      });
      break;
    }
    case 'sighup':
      run.child.kill('SIGHUP');
      break;
  }
  return name;
}
