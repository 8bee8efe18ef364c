/**
 * A wrong-password flood, run as its own process (so its CPU is not the server's event
 * loop): `concurrency` clients, each sending GETs with a new wrong password back to back,
 * every request on a new connection, until `durationMs` has passed. Prints one JSON line
 * (status counts) on stdout when done. Used by bench/auth-stall.ts and
 * test/hostile/auth-stall.test.ts.
 *
 *   node dist/bench/lib/auth-flood.js URL CONCURRENCY DURATION_MS [SAME_PASSWORD]
 */
import * as http from 'node:http';
import * as https from 'node:https';

export interface FloodResult {
  requests: number;
  statuses: Record<string, number>;
}

function once(url: string, auth: string): Promise<string> {
  return new Promise((resolve) => {
    const mod = url.startsWith('https') ? https : http;
    const req = mod.get(url, { agent: false, headers: { Authorization: auth }, rejectUnauthorized: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(String(res.statusCode)));
      res.on('error', () => resolve('error'));
    });
    req.on('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? 'error'));
  });
}

export async function flood(url: string, concurrency: number, durationMs: number, samePassword = false): Promise<FloodResult> {
  const end = Date.now() + durationMs;
  const statuses: Record<string, number> = {};
  let n = 0;
  const client = async () => {
    while (Date.now() < end) {
      const i = n++;
      const pass = samePassword ? 'always the same wrong password' : `wrong guess ${i} ${Math.random()}`;
      const auth = `Basic ${Buffer.from(`${i % 2 ? 'prom' : 'mallory'}:${pass}`).toString('base64')}`;
      const s = await once(url, auth);
      statuses[s] = (statuses[s] ?? 0) + 1;
    }
  };
  await Promise.all(Array.from({ length: concurrency }, client));
  return { requests: n, statuses };
}

if (require.main === module) {
  const [url, conc, dur, same] = process.argv.slice(2);
  flood(url, Number(conc), Number(dur), same === 'same').then(
    (r) => process.stdout.write(JSON.stringify(r) + '\n'),
    (e: Error) => {
      process.stderr.write(`auth-flood: ${e.message}\n`);
      process.exit(1);
    },
  );
}
