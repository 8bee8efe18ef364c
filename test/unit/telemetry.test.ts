import { resourceFromAttributes } from '@opentelemetry/resources';
import { StateMetricProducer } from '../../src/exporter/state-metrics';
import { drainingFirst, Telemetry } from '../../src/exporter/telemetry';
import { silentLogger } from '../../src/util/logger';
import { goldenSource } from '../helpers/golden-script';

test('concurrent scrapes share one collection, started after all of them arrived', async () => {
  let telemetry!: Telemetry;
  const source = goldenSource((s) => (telemetry = new Telemetry(s, { version: 't', logger: silentLogger })));
  let refreshes = 0;
  source.refresh = () => void refreshes++;
  try {
    const bodies = await Promise.all([telemetry.scrape(), telemetry.scrape(), telemetry.scrape(), telemetry.scrape()]);
    expect(refreshes).toBe(1);
    expect(new Set(bodies).size).toBe(1);
    // A scrape after that one finished gets a collection of its own.
    await telemetry.scrape();
    expect(refreshes).toBe(2);
    // A failing collection fails every scrape that shared it.
    source.refresh = () => {
      throw new Error('source gone');
    };
    const results = await Promise.allSettled([telemetry.scrape(), telemetry.scrape()]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
  } finally {
    await telemetry.shutdown();
  }
});

test('an OTLP push drains pending events first, as a scrape does', async () => {
  const source = goldenSource((s) => (s.model.observer = s.model.histograms));
  const order: string[] = [];
  source.refresh = () => void order.push('refresh');
  const producer = new StateMetricProducer({
    model: source.model,
    info: { version: 't', source: 'run', backend: 'cpu' },
    nowNs: () => source.nowNs(),
    runningTotals: () => null,
    lastCollectSeconds: () => 0,
    resource: resourceFromAttributes({}),
    histogramScope: { name: 'cuzk-exporter', version: 't' },
  });
  const collect = producer.collect.bind(producer);
  producer.collect = () => (order.push('collect'), collect());
  const { resourceMetrics } = await drainingFirst(source, producer).collect();
  expect(order).toEqual(['refresh', 'collect']);
  // The push carries the model's histograms (typed arrays, through the producer).
  expect(resourceMetrics.scopeMetrics[0].metrics.map((m) => m.descriptor.name)).toContain('cuzk_partition_gpu_duration_seconds');
  // A failed drain is counted; the push still goes out.
  source.refresh = () => {
    throw new Error('engine gone');
  };
  const before = source.model.errors.get('collect') ?? 0;
  await expect(drainingFirst(source, producer).collect()).resolves.toBeDefined();
  expect(source.model.errors.get('collect')).toBe(before + 1);
});
