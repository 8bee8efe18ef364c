/**
 * Issue #13 acceptance, end to end: a real Prometheus (Debian's, with
 * --enable-feature=exemplar-storage) scrapes the real exporter running the reference prover
 * (sim backend) with OpenMetrics negotiated, and /api/v1/query_exemplars returns, for
 * cuzk_partition_gpu_duration_seconds_bucket, whole job ids of jobs the engine really ran.
 * A second Prometheus without the feature flag scrapes the same exporter cleanly.
 *
 * Synchronisation by polling Prometheus' HTTP API with a bound (pollUntil); no sleeps.
 */
import type { EngineConfig } from '../../src/engine/sources/native/native-engine';
import { Workload } from '../../src/engine/sources/native/workload';
import type { ExpositionFormat } from '../../src/exporter/negotiate';
import type { CollectionBodies } from '../../src/exporter/shared-collection';
import { startNativeExporter, type NativeExporter } from '../helpers/native-exporter';
import { findBinary, pollUntil, startPrometheus, type PromExemplars, type RunningPrometheus } from '../helpers/prometheus';

const SIM = {
  'snap-update': { synth_ms: 40, gpu_ms: 120, jitter: 0.5 },
  'porep-c2': { synth_ms: 60, gpu_ms: 200, jitter: 0.3 },
  'window-post': { synth_ms: 40, gpu_ms: 300, jitter: 0.3 },
  'winning-post': { synth_ms: 20, gpu_ms: 60, jitter: 0.3 },
};
const ENGINE: EngineConfig = { gpus: 1, workers_per_gpu: 2, synthesis_concurrency: 2, backend: 'sim', time_scale: 1, sim: SIM };

const prometheusBin = findBinary('prometheus');
const describeWithPrometheus = prometheusBin ? describe : describe.skip;
if (!prometheusBin) {
  // eslint-disable-next-line no-console
  console.warn('SKIPPED test/e2e/exemplars: no prometheus binary (apt-get install prometheus, or set PROMETHEUS_BIN)');
}

describeWithPrometheus('real Prometheus: OpenMetrics exemplars with whole job ids', () => {
  let exporter: NativeExporter | undefined;
  let workload: Workload | undefined;
  let withExemplars: RunningPrometheus | undefined;
  let plain: RunningPrometheus | undefined;
  const jobIds = new Set<string>();
  const formats: ExpositionFormat[] = [];
  const errors: Error[] = [];
  let startSec = 0;

  beforeAll(async () => {
    startSec = Math.floor(Date.now() / 1000) - 1;
    exporter = await startNativeExporter(ENGINE);
    const ex = exporter;
    // Which format each scrape asked for (the server negotiates from Accept, then takes that
    // body of the shared collection).
    const collection = ex.telemetry.collection.bind(ex.telemetry);
    ex.telemetry.collection = async () => {
      const c = await collection();
      const seen = {
        text: (format: ExpositionFormat) => (formats.push(format), c.text(format)),
        encoded: (format: ExpositionFormat, gzipLevel?: number) => (formats.push(format), c.encoded(format, gzipLevel)),
      };
      return seen as unknown as CollectionBodies;
    };
    workload = new Workload(ex.engine, {
      mix: { 'snap-update': 3, 'porep-c2': 1, 'winning-post': 1 },
      concurrency: 3,
      onSubmit: (job) => jobIds.add(ex.engine.requestId(job)),
      onError: (e) => errors.push(e),
    });
    void workload.run();
    const target = new URL(ex.url).host;
    const common = { scrapeTargets: [target], scrapeIntervalSec: 1, evaluationIntervalSec: 1, ruleFiles: [] };
    [withExemplars, plain] = await Promise.all([
      startPrometheus({ ...common, extraFlags: ['--enable-feature=exemplar-storage'] }),
      startPrometheus(common),
    ]);
  }, 60_000);

  afterAll(async () => {
    await withExemplars?.stop();
    await plain?.stop();
    await workload?.stop(2000);
    await exporter?.close();
  });

  const logs = () => `workload errors: ${errors.map(String).join('; ') || 'none'}\n--- prometheus (exemplars) ---\n${withExemplars?.logs()}\n--- prometheus (plain) ---\n${plain?.logs()}`;

  test('query_exemplars returns whole ids of jobs the engine ran, in the right buckets', async () => {
    const prom = withExemplars!;
    await prom.waitForTargetsUp(30_000);
    let found: PromExemplars[] = [];
    const ids = () => new Set(found.flatMap((s) => s.exemplars.map((e) => e.labels.job_id)));
    try {
      await pollUntil(
        async () => {
          found = await prom.queryExemplars('cuzk_partition_gpu_duration_seconds_bucket', startSec, Date.now() / 1000 + 1);
          return ids().size >= 3 && found.some((s) => s.seriesLabels.proof_kind === 'snap-update');
        },
        60_000,
        'exemplars of three different jobs',
      );
    } catch (e) {
      throw new Error(`${(e as Error).message}\nfound: ${JSON.stringify(found).slice(0, 2000)}\n${logs()}`);
    }
    expect(formats.length).toBeGreaterThan(0);
    expect(formats.every((f) => f === 'openmetrics' || f === 'text')).toBe(true);
    expect(formats.filter((f) => f === 'openmetrics').length).toBeGreaterThan(0);
    for (const series of found) {
      expect(series.seriesLabels.__name__).toBe('cuzk_partition_gpu_duration_seconds_bucket');
      const le = series.seriesLabels.le === '+Inf' ? Infinity : Number(series.seriesLabels.le);
      for (const ex of series.exemplars) {
        // The whole id of a job the workload submitted: equal, not a prefix or a cut.
        expect([ex.labels.job_id, jobIds.has(ex.labels.job_id)]).toEqual([ex.labels.job_id, true]);
        expect(Object.keys(ex.labels).sort()).toEqual(['job_id', 'partition']);
        expect(ex.labels.partition).toMatch(/^\d+$/);
        expect(Number(ex.value)).toBeLessThanOrEqual(le);
        expect(ex.timestamp).toBeGreaterThanOrEqual(startSec);
      }
    }
    // SnapDeals ids are the ones cuzk's panel once cut to "ps-snap-": here they are whole.
    const snap = [...ids()].filter((id) => id.startsWith('ps-snap-'));
    expect(snap.length).toBeGreaterThan(0);
    for (const id of snap) expect(id).toMatch(/^ps-snap-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    // OpenMetrics metadata reached Prometheus (0.0.4 has no UNIT).
    const meta = await fetch(`${prom.url}/api/v1/metadata?metric=cuzk_partition_gpu_duration_seconds`).then((r) => r.json() as Promise<{ data: Record<string, { type: string; unit: string }[]> }>);
    expect(meta.data.cuzk_partition_gpu_duration_seconds?.[0]).toMatchObject({ type: 'histogram', unit: 'seconds' });
  }, 120_000);

  test('without the feature flag the same Prometheus scrapes cleanly', async () => {
    const prom = plain!;
    await prom.waitForTargetsUp(30_000);
    await pollUntil(async () => (await prom.queryVector('cuzk_partition_gpu_duration_seconds_count')).length > 0, 30_000, 'histogram series in the plain Prometheus');
    const [t] = await prom.targets();
    expect([t.health, t.lastError]).toEqual(['up', '']);
    const up = await prom.queryVector('up');
    expect(up.map((s) => s.value[1])).toEqual(['1']);
    // Same le values in buckets as the exemplar-enabled one scraped (canonical OpenMetrics form).
    const buckets = await prom.queryVector('count by (le) (cuzk_partition_gpu_duration_seconds_bucket)');
    expect(buckets.map((s) => s.metric.le)).toContain('1.0');
    expect((await prom.queryExemplars('cuzk_partition_gpu_duration_seconds_bucket', startSec, Date.now() / 1000)).length).toBe(0);
  }, 90_000);
});
