/**
 * src/exporter/telemetry.ts' OTLP push and its Prometheus exporter, seen from the transport
 * (issue 23: the eight telemetry.ts mutants left open, test/mutation/files/exporter-server.md).
 * The OTLP/HTTP exporter is replaced by a stand-in (jest.mock) that records what it is made
 * with and what each push carries, and answers or not: the real one loads its transport with
 * a dynamic import() that jest's sandbox refuses (test/integration/web.test.ts pushes to a
 * real collector from the spawned CLI).
 *
 * Expectations, from outside the file:
 *  - the push goes to the endpoint given (TelemetryOptions.otlpEndpoint);
 *  - its resource names the service as OpenTelemetry's semantic conventions ask
 *    (`service.name` = the package, cuzk-exporter; `service.version` = the version given);
 *  - one scope (the header: "no otel_scope_* labels (one scope …)"): every metric of a push,
 *    histograms included, is in a scope named cuzk-exporter;
 *  - otlp-guard.ts: the guard bounds each export by its own deadline, shorter than the
 *    reader's (the SDK's exportTimeoutMillis, at most the interval): a collector that never
 *    answers is counted `otlp_export` by the guard ("no answer within N ms"), before the SDK
 *    times the export out (a diag error, nothing counted); a collector that answers well
 *    within the interval is no failure;
 *  - the header: "we serve HTTP ourselves": the SDK's Prometheus exporter never listens.
 * No wall-clock amounts: which timer fires first is decided by the timers' order.
 */
import * as net from 'node:net';
import { Telemetry } from '../../src/exporter/telemetry';
import { createLogger } from '../../src/util/logger';
import { goldenSource } from '../helpers/golden-script';
import type { ScriptedSource } from '../helpers/scripted-source';

type Pushed = { resource: { attributes: Record<string, unknown> }; scopeMetrics: { scope: { name: string; version?: string }; metrics: { descriptor: { name: string } }[] }[] };
const fake = {
  configs: [] as unknown[],
  pushes: [] as Pushed[],
  answered: 0,
  /** 'answer': success 20 ms after the push (a timer: ordered before the guard's deadline); 'hang': never. */
  mode: 'answer' as 'answer' | 'hang',
};

jest.mock('@opentelemetry/exporter-metrics-otlp-http', () => ({
  OTLPMetricExporter: class {
    constructor(config: unknown) {
      fake.configs.push(config);
    }
    export(m: Pushed, cb: (r: { code: number }) => void): void {
      fake.pushes.push(m);
      if (fake.mode === 'hang') return;
      setTimeout(() => {
        fake.answered++;
        cb({ code: 0 });
      }, 20);
    }
    forceFlush(): Promise<void> {
      return Promise.resolve();
    }
    shutdown(): Promise<void> {
      return Promise.resolve();
    }
  },
}));

const lines: Record<string, unknown>[] = [];
const logger = createLogger('debug', 'json', (l) => lines.push(JSON.parse(l) as Record<string, unknown>));
const made: Telemetry[] = [];
afterAll(async () => {
  for (const t of made) await t.shutdown();
});
function make(opts: { otlpEndpoint?: string; otlpIntervalMs?: number } = {}): ScriptedSource {
  let t!: Telemetry;
  const s = goldenSource((x) => (t = new Telemetry(x, { version: 'v-otlp', logger, ...opts })));
  made.push(t);
  return s;
}
async function until(what: string, f: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!f()) {
    if (Date.now() > end) throw new Error(`timed out waiting for: ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

// No test here listens: the mutant that lets the SDK start its own server (:9464) would
// race other processes for that port.
let listen: jest.SpyInstance;
beforeAll(() => {
  listen = jest.spyOn(net.Server.prototype, 'listen').mockImplementation(function (this: net.Server) {
    return this;
  });
});
afterAll(() => listen.mockRestore());

test('the SDK\'s Prometheus exporter never listens (we serve HTTP ourselves)', async () => {
  make();
  make({ otlpEndpoint: 'http://127.0.0.1:9/v1/metrics', otlpIntervalMs: 60_000 });
  await new Promise((r) => setImmediate(r));
  expect(listen).not.toHaveBeenCalled();
});

test('a push: to the endpoint given, the service named, one scope (histograms included), and a collector that answers is no failure', async () => {
  fake.mode = 'answer';
  const before = fake.pushes.length;
  const answeredBefore = fake.answered;
  const s = make({ otlpEndpoint: 'http://127.0.0.1:4318/v1/metrics', otlpIntervalMs: 300 });
  expect(fake.configs[fake.configs.length - 1]).toEqual({ url: 'http://127.0.0.1:4318/v1/metrics' });
  await until('a push answered', () => fake.answered > answeredBefore);
  await new Promise((r) => setImmediate(r));
  const p = fake.pushes[before];
  expect(p.resource.attributes['service.name']).toBe('cuzk-exporter');
  expect(p.resource.attributes['service.version']).toBe('v-otlp');
  const names = p.scopeMetrics.flatMap((sm) => sm.metrics.map((m) => m.descriptor.name));
  expect(names).toContain('cuzk_exporter_build_info');
  // The golden script's histograms have series: they are in the push, and in the one scope.
  expect(names).toContain('cuzk_proof_queue_wait_seconds');
  expect(new Set(p.scopeMetrics.map((sm) => sm.scope.name))).toEqual(new Set(['cuzk-exporter']));
  expect(s.model.errors.get('otlp_export') ?? 0).toBe(0);
});

test('a collector that never answers: counted by the guard before the SDK\'s own timeout (no SDK timeout logged)', async () => {
  fake.mode = 'hang';
  const from = lines.length;
  // 3 s: the reader's timeout (3 s) is set before its collection, the guard's (0.9 x 3 s)
  // after it: the collection may take up to 300 ms without the order changing.
  const s = make({ otlpEndpoint: 'http://127.0.0.1:4318/v1/metrics', otlpIntervalMs: 3000 });
  const sdkTimedOut = () => lines.slice(from).some((l) => l.msg === 'opentelemetry');
  await until('a failure counted or the SDK timing out', () => (s.model.errors.get('otlp_export') ?? 0) >= 1 || sdkTimedOut());
  expect(sdkTimedOut()).toBe(false);
  expect(s.model.errors.get('otlp_export')).toBe(1);
  const m = /^OTLP export failed: no answer within (\d+) ms$/.exec(s.model.errors.lastMessage ?? '');
  expect(m).not.toBeNull();
  expect(Number(m![1])).toBeLessThan(3000);
});
