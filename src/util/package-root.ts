import * as fs from 'node:fs';
import * as path from 'node:path';

let cached: string | undefined;

/**
 * The directory holding our package.json: the same from ts-jest (src/...) and from the
 * compiled tree (dist/src/...), so data files (native/build, page assets) resolve in both.
 */
export function findPackageRoot(): string {
  if (cached) return cached;
  let dir = __dirname;
  for (;;) {
    const pkg = path.join(dir, 'package.json');
    if (fs.existsSync(pkg)) {
      try {
        if (JSON.parse(fs.readFileSync(pkg, 'utf8')).name === 'cuzk-exporter') return (cached = dir);
      } catch {
        // not ours; keep walking
      }
    }
    const up = path.dirname(dir);
    if (up === dir) throw new Error(`cannot find the cuzk-exporter package root above ${__dirname}`);
    dir = up;
  }
}

export function packageVersion(): string {
  return JSON.parse(fs.readFileSync(path.join(findPackageRoot(), 'package.json'), 'utf8')).version;
}
