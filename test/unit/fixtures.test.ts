import * as fs from 'node:fs';
import * as path from 'node:path';
import { FIXTURE_DIR, fixtureNames } from '../helpers/fixtures';

const SHARED = path.join(__dirname, '..', '..', '..', 'shared', 'fixtures', 'cuzk-status');

test('vendored cuzk /status fixtures', () => {
  expect(fixtureNames()).toEqual(['01-idle.json', '02-snap-busy-consistent.json', '03-workers-idle-partitions-on-gpu.json', '04-porep-partition-failed.json']);
});

// The data must match byte for byte; the README is ours (it points at docs/design.md, the shared
// copy at a DESIGN.md that lives outside the repository).
(fs.existsSync(SHARED) ? test : test.skip)('match the shared fixtures they were copied from', () => {
  for (const f of fs.readdirSync(SHARED).filter((n) => n.endsWith('.json'))) {
    expect([f, fs.readFileSync(path.join(FIXTURE_DIR, f), 'utf8')]).toEqual([f, fs.readFileSync(path.join(SHARED, f), 'utf8')]);
  }
});
