import * as fs from 'node:fs';
import * as path from 'node:path';

/**
 * cuzk /status sample snapshots. Vendored from the project's shared fixtures
 * (../shared/fixtures/cuzk-status) so the tests run from any clone;
 * test/unit/fixtures.test.ts checks the copies still match where the shared folder exists.
 */
export const FIXTURE_DIR = path.join(__dirname, '..', 'fixtures', 'cuzk-status');

export function fixturePath(name: string): string {
  const exact = path.join(FIXTURE_DIR, name);
  if (fs.existsSync(exact)) return exact;
  const byPrefix = fs.readdirSync(FIXTURE_DIR).find((f) => f.startsWith(name));
  if (!byPrefix) throw new Error(`no fixture ${name} in ${FIXTURE_DIR}`);
  return path.join(FIXTURE_DIR, byPrefix);
}

export function fixtureText(name: string): string {
  return fs.readFileSync(fixturePath(name), 'utf8');
}

export function fixtureNames(): string[] {
  return fs.readdirSync(FIXTURE_DIR).filter((f) => f.endsWith('.json')).sort();
}
