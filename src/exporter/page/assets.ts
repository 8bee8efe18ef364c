/**
 * The live status page's static files (index.html, page.js, page.css), read once.
 *
 * The files are plain browser assets with no build step. They live in the source tree
 * (`src/exporter/page/`) and are not copied by `tsc`, so the directory is found by walking
 * up from this module to the package root: this works from the ts-jest sources
 * (`src/exporter/page/assets.ts`) and from the compiled `dist/src/exporter/page/assets.js`.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

export interface PageAsset {
  contentType: string;
  body: Buffer;
}

/** URL path → file name in the page directory. */
const FILES: ReadonlyArray<readonly [urlPath: string, file: string, contentType: string]> = [
  ['/', 'index.html', 'text/html; charset=utf-8'],
  ['/page.js', 'page.js', 'text/javascript; charset=utf-8'],
  ['/page.css', 'page.css', 'text/css; charset=utf-8'],
];

const PAGE_SUBDIR = join('src', 'exporter', 'page');

/**
 * The page directory: the first ancestor of `start` that holds a package.json and
 * `src/exporter/page/index.html`. (Checking for index.html as well skips a package.json
 * that `tsc` may have emitted into `dist/` when a module imports it.)
 */
export function findPageDir(start: string = __dirname): string {
  let dir = start;
  for (;;) {
    if (existsSync(join(dir, 'package.json')) && existsSync(join(dir, PAGE_SUBDIR, 'index.html'))) {
      return join(dir, PAGE_SUBDIR);
    }
    const parent = dirname(dir);
    if (parent === dir) {
      throw new Error(
        `status page assets not found: no ancestor of ${start} contains package.json and ${join(PAGE_SUBDIR, 'index.html')}`,
      );
    }
    dir = parent;
  }
}

let cache: Map<string, PageAsset> | undefined;

/**
 * The page's files keyed by URL path ('/', '/page.js', '/page.css'). Files are read on the
 * first call and the same map is returned afterwards. Throws if a file is missing.
 */
export function loadPageAssets(): Map<string, PageAsset> {
  if (cache) return cache;
  const dir = findPageDir();
  const m = new Map<string, PageAsset>();
  for (const [urlPath, file, contentType] of FILES) {
    m.set(urlPath, { contentType, body: readFileSync(join(dir, file)) });
  }
  cache = m;
  return m;
}
