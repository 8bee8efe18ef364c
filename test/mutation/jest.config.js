/**
 * The jest configuration Stryker runs (stryker.config.json): the in-process suites that
 * exercise src/engine/sources/attach, src/engine/model/state-model.ts and src/exporter — no globalSetup
 * (no native build, no tsc of dist/: no suite here spawns the CLI or loads the engine),
 * ts-jest transpiling only (Stryker's own TypeScript checker type-checks each mutant).
 * MUTATE_TESTS (comma-separated paths from the repository root) replaces the list.
 */
const path = require('node:path');
const base = require('../../jest.config.js');

const DEFAULT_TESTS = [
  'test/attach/crosscheck-tolerance.test.ts',
  'test/attach/keep-alive.test.ts',
  'test/attach/kind-cache.test.ts',
  'test/attach/mutation-gaps.test.ts',
  'test/attach/restart-marks.test.ts',
  'test/attach/sequence.test.ts',
  'test/attach/timeline-follower.test.ts',
  'test/attach/timeline-parser.test.ts',
  'test/attach/timeline-upstream.test.ts',
  'test/unit/cap-for-serving.test.ts',
  'test/unit/exemplar-cache.test.ts',
  'test/unit/fast-serializer.test.ts',
  'test/unit/golden-metrics.test.ts',
  'test/unit/histogram-table.test.ts',
  'test/unit/negotiation-gaps.test.ts',
  'test/unit/openmetrics.test.ts',
  'test/unit/sample-history.test.ts',
  'test/unit/shared-collection.test.ts',
  'test/unit/snapshot-finalizing.test.ts',
  'test/unit/state-model.test.ts',
  'test/unit/telemetry.test.ts',
];
const tests = process.env.MUTATE_TESTS ? process.env.MUTATE_TESTS.split(',').map((s) => s.trim()).filter(Boolean) : DEFAULT_TESTS;

/** @type {import('jest').Config} */
module.exports = {
  ...base,
  rootDir: path.join(__dirname, '..', '..'),
  globalSetup: undefined,
  testMatch: tests.map((t) => `<rootDir>/${t}`),
  transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: 'test/tsconfig.json', isolatedModules: true }] },
  maxWorkers: 1,
};
