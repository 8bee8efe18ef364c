/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  // Transpile only (test/tsconfig.jest.json: isolatedModules): a type-checking ts-jest took
  // 4x the time of the tests themselves on small suites. `npm test` type-checks src, bench and
  // the tests once first (pretest: tsc -p test/tsconfig.json).
  transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: 'test/tsconfig.jest.json' }] },
  testTimeout: 60000,
  globalSetup: '<rootDir>/test/global-setup.js',
  // Integration tests start native threads and servers: keep parallelism modest on 2 cores.
  maxWorkers: 2,
};
