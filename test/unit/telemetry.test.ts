import { Telemetry } from '../../src/exporter/telemetry';
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
