/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: 'test/tsconfig.json' }] },
  testTimeout: 60000,
  globalSetup: '<rootDir>/test/global-setup.js',
  // Integration tests start native threads and servers: keep parallelism modest on 2 cores.
  maxWorkers: 2,
};
