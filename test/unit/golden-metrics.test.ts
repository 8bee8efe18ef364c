import * as fs from 'node:fs';
import * as path from 'node:path';
import { Telemetry } from '../../src/exporter/telemetry';
import { silentLogger } from '../../src/util/logger';
import { goldenSource } from '../helpers/golden-script';

const GOLDEN = path.join(__dirname, '..', 'golden', 'scripted-metrics.prom');

/** The documented normalisation (test/golden/README.md). */
function normalise(body: string): string {
  return body
    .replace(/^(cuzk_exporter_scrape_duration_seconds) \S+$/m, '$1 <duration>')
    .replace(/(cuzk_exporter_build_info\{[^}]*version=")[^"]*"/, '$1<version>"');
}

describe('golden /metrics output for a scripted event sequence', () => {
  test('matches test/golden/scripted-metrics.prom', async () => {
    let telemetry!: Telemetry;
    // The exporter is attached before the first event so its histograms see them all.
    goldenSource((s) => (telemetry = new Telemetry(s, { version: '0.0.0-test', logger: silentLogger })));
    const body = normalise(await telemetry.scrape());
    await telemetry.shutdown();
    if (process.env.UPDATE_GOLDEN === '1') fs.writeFileSync(GOLDEN, body);
    expect(body).toBe(fs.readFileSync(GOLDEN, 'utf8'));
  });

  test('the normalisation touches only the two documented values', async () => {
    let telemetry!: Telemetry;
    goldenSource((s) => (telemetry = new Telemetry(s, { version: '0.0.0-test', logger: silentLogger })));
    const raw = await telemetry.scrape();
    await telemetry.shutdown();
    const a = raw.split('\n');
    const b = normalise(raw).split('\n');
    const changed = a.filter((l, i) => l !== b[i]);
    expect(changed).toHaveLength(2);
    expect(changed.every((l) => l.startsWith('cuzk_exporter_scrape_duration_seconds ') || l.startsWith('cuzk_exporter_build_info{'))).toBe(true);
  });
});
