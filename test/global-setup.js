// Builds what the tests run: the native library (make is incremental) and the compiled
// CLI in dist/ (CLI tests spawn `node dist/src/cli/main.js`, exactly what users run) and
// the status pages' modules (served from dist/src/exporter/page/ui/).
const { execFileSync } = require('node:child_process');
const path = require('node:path');

module.exports = async function globalSetup() {
  const root = path.join(__dirname, '..');
  execFileSync('make', ['-s', '-C', path.join(root, 'native')], { stdio: 'inherit' });
  execFileSync(process.execPath, [require.resolve('typescript/bin/tsc'), '-p', path.join(root, 'tsconfig.json')], { stdio: 'inherit' });
  // The status pages' browser modules (their own tsconfig: ES modules for the browser).
  execFileSync(process.execPath, [require.resolve('typescript/bin/tsc'), '-p', path.join(root, 'src', 'exporter', 'page', 'ui', 'tsconfig.json')], { stdio: 'inherit' });
  // The bin (npx cuzk-exporter in a checkout): tsc writes a new file without the exec bit.
  require('node:fs').chmodSync(path.join(root, 'dist', 'src', 'cli', 'main.js'), 0o755);
};
