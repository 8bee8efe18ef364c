/**
 * How src/exporter/telemetry.ts wires the OpenTelemetry pieces (issue 23: its mutation
 * suite). Expectations from its header comment and DESIGN §5: no otel_scope_* labels, no
 * target_info, the SDK's diagnostics routed into our log (the first Telemetry's logger, at
 * WARN and above), the error series declared at 0, the OTLP reader only with an endpoint
 * and at its interval, draining the source before each push, OpenMetrics by format, and the
 * scrape duration of the previous collection. The OTLP transport cannot load under jest
 * (a dynamic import): each push fails at once and is counted as otlp_export, which is what
 * shows a push was attempted.
 */
import { diag } from '@opentelemetry/api';
import { drainingFirst, Telemetry } from '../../src/exporter/telemetry';
import { createLogger } from '../../src/util/logger';
import { goldenSource } from '../helpers/golden-script';
import type { ScriptedSource } from '../helpers/scripted-source';

function logged() {
  const lines: Record<string, unknown>[] = [];
  return { lines, logger: createLogger('debug', 'json', (l) => lines.push(JSON.parse(l) as Record<string, unknown>)) };
}
const made: Telemetry[] = [];
afterAll(async () => {
  for (const t of made) await t.shutdown();
});
function make(opts: { otlpEndpoint?: string; otlpIntervalMs?: number } = {}, logger = logged().logger): { t: Telemetry; s: ScriptedSource } {
  let t!: Telemetry;
  const s = goldenSource((x) => (t = new Telemetry(x, { version: 'v-wire', logger, ...opts })));
  made.push(t);
  return { t, s };
}
async function until(what: string, f: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!f()) {
    if (Date.now() > end) throw new Error(`timed out waiting for: ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

test('the SDK\'s diagnostics go to the first Telemetry\'s log, warnings and errors only', async () => {
  const first = logged();
  make({}, first.logger);
  const second = logged();
  make({}, second.logger);
  diag.error('an error from the SDK');
  diag.warn('a warning from the SDK');
  diag.info('info');
  diag.debug('debug');
  diag.verbose('verbose');
  expect(first.lines.map((l) => [l.level, l.msg, l.detail])).toEqual([
    ['error', 'opentelemetry', 'an error from the SDK'],
    ['warn', 'opentelemetry', 'a warning from the SDK'],
  ]);
  expect(second.lines).toEqual([]);
});

test('the text body: no otel_scope_* labels, no target_info, the model\'s metrics, the error series at 0', async () => {
  const { t } = make();
  const body = await t.scrape();
  expect(body).not.toMatch(/otel_scope_/);
  expect(body).not.toMatch(/target_info/);
  expect(body).toContain('cuzk_exporter_build_info{version="v-wire",source="run",backend="cpu",surfaces="engine"} 1');
  expect(body).toContain('cuzk_exporter_errors_total{reason="collect"} 0');
  expect(body).toContain('cuzk_exporter_errors_total{reason="status"} 0');
  expect(body).not.toContain('# EOF');
  expect(t.info).toEqual({ version: 'v-wire', source: 'run', backend: 'cpu' });
});

test('OpenMetrics by format; the same collection serves both', async () => {
  const { t } = make();
  const [om, text] = await Promise.all([t.scrape('openmetrics'), t.scrape('text')]);
  expect(om.endsWith('# EOF\n')).toBe(true);
  expect(text.endsWith('# EOF\n')).toBe(false);
  const c = await t.collection();
  expect(await c.text('openmetrics')).toMatch(/# EOF\n$/);
});

test('cuzk_exporter_scrape_duration_seconds: the previous collection\'s seconds, 0 before the first', async () => {
  const { t } = make();
  const first = await t.scrape();
  expect(first).toMatch(/\ncuzk_exporter_scrape_duration_seconds 0\n/);
  const t0 = process.hrtime.bigint();
  await t.scrape();
  const wall = Number(process.hrtime.bigint() - t0) / 1e9;
  const third = await t.scrape();
  const v = Number(/\ncuzk_exporter_scrape_duration_seconds (\S+)/.exec(third)![1]);
  expect(v).toBeGreaterThan(0);
  expect(v).toBeLessThan(Math.max(wall, 0.001) * 50);
  expect(v).toBeLessThan(30);
});

test('a source whose refresh throws fails the scrape', async () => {
  const { t, s } = make();
  s.refresh = () => {
    throw new Error('gone');
  };
  await expect(t.scrape()).rejects.toThrow('gone');
});

test('without an OTLP endpoint nothing is pushed; with one, pushes at the interval, each draining the source first', async () => {
  // An interval alone (no endpoint) pushes nothing.
  const quiet = make({ otlpIntervalMs: 100 });
  let quietRefreshes = 0;
  quiet.s.refresh = () => void quietRefreshes++;
  const { s } = make({ otlpEndpoint: 'http://127.0.0.1:9/v1/metrics', otlpIntervalMs: 100 });
  let refreshes = 0;
  s.refresh = () => void refreshes++;
  await until('three pushes', () => (s.model.errors.get('otlp_export') ?? 0) >= 3, 5000);
  expect(refreshes).toBeGreaterThanOrEqual(3);
  expect(quiet.s.model.errors.get('otlp_export') ?? 0).toBe(0);
  expect(quietRefreshes).toBe(0);
});

test('the OTLP interval defaults to 15 s: no push within the first second', async () => {
  const { s } = make({ otlpEndpoint: 'http://127.0.0.1:9/v1/metrics' });
  await new Promise((r) => setTimeout(r, 1000));
  expect(s.model.errors.get('otlp_export') ?? 0).toBe(0);
});

test('a failed drain before a push is counted with its message', async () => {
  const { s } = make();
  s.refresh = () => {
    throw new Error('engine gone');
  };
  const producer = { collect: async () => ({ resourceMetrics: { resource: undefined as never, scopeMetrics: [] }, errors: [] }) };
  await drainingFirst(s, producer).collect();
  expect(s.model.errors.lastMessage).toBe('draining before an OTLP push failed: engine gone');
});

test('after shutdown a scrape fails (the provider and its readers are shut down)', async () => {
  let t!: Telemetry;
  goldenSource((x) => (t = new Telemetry(x, { version: 'v', logger: logged().logger })));
  await t.shutdown();
  await expect(t.scrape()).rejects.toThrow();
});

test('exemplars carry the source\'s job ids and the given wall clock', async () => {
  let t!: Telemetry;
  goldenSource((s) => {
    (s as unknown as { jobId(h: number): string | undefined }).jobId = (h) => `job-${h}`;
    t = new Telemetry(s, { version: 'v', logger: logged().logger, wallClockMs: () => Date.UTC(2026, 0, 2) });
  });
  made.push(t);
  const om = await t.scrape('openmetrics');
  expect(om).toMatch(/ # \{job_id="job-\d+"/);
  expect(om).toMatch(/ # \{[^}]*\} \S+ 1767312000(\.0+)?\n/);
});
