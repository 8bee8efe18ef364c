/**
 * The logger's EPIPE guard on stdout/stderr is installed once per process, however many
 * times the module is loaded: jest loads it afresh for every test file of a worker, and a
 * guard remembered by the module added one 'error' listener per load, which gave two
 * MaxListenersExceededWarnings in every full test run.
 */
test('loading the logger twelve times and logging to stderr adds at most one error listener per stream', () => {
  const before = { err: process.stderr.listenerCount('error'), out: process.stdout.listenerCount('error') };
  for (let i = 0; i < 12; i++) {
    jest.isolateModules(() => {
      const { createLogger } = require('../../src/util/logger') as typeof import('../../src/util/logger');
      createLogger('error', 'json'); // the default writer: stderr
    });
  }
  expect(process.stderr.listenerCount('error') - before.err).toBeLessThanOrEqual(1);
  expect(process.stdout.listenerCount('error') - before.out).toBeLessThanOrEqual(1);
});
