/**
 * The status pages' static files, read once: the box page (index.html, served at / of
 * `run` and `attach` and at /targets/NAME/ of `fleet`), the fleet page (fleet.html, / of
 * `fleet`), their stylesheets, and the browser modules both share (ui/, one per panel).
 *
 * HTML and CSS live in the source tree (`src/exporter/page/`, not copied by `tsc`); the
 * modules are TypeScript compiled by their own tsconfig (src/exporter/page/ui/tsconfig.json,
 * part of `npm run build`) to ES modules in `dist/src/exporter/page/ui/`, which the browser
 * loads as they are (no bundler). Both are found by walking up from this module to the
 * package root: this works from the ts-jest sources and from the compiled
 * `dist/src/exporter/page/assets.js`.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';

export interface PageAsset {
  contentType: string;
  body: Buffer;
}

const HTML = 'text/html; charset=utf-8';
const CSS = 'text/css; charset=utf-8';
const JS = 'text/javascript; charset=utf-8';

const PAGE_SUBDIR = join('src', 'exporter', 'page');
const UI_SUBDIR = join('dist', 'src', 'exporter', 'page', 'ui');

/**
 * The package root: the first ancestor of `start` that holds a package.json and
 * `src/exporter/page/index.html`. (Checking for index.html as well skips a package.json
 * that `tsc` may have emitted into `dist/` when a module imports it.)
 */
export function findPackageDir(start: string = __dirname): string {
  let dir = start;
  for (;;) {
    if (existsSync(join(dir, 'package.json')) && existsSync(join(dir, PAGE_SUBDIR, 'index.html'))) return dir;
    const parent = dirname(dir);
    if (parent === dir) {
      throw new Error(`status page assets not found: no ancestor of ${start} contains package.json and ${join(PAGE_SUBDIR, 'index.html')}`);
    }
    dir = parent;
  }
}

/** The page directory (HTML, CSS) in the source tree. */
export function findPageDir(start: string = __dirname): string {
  return join(findPackageDir(start), PAGE_SUBDIR);
}

/** Every compiled module under ui/ by URL path ('/ui/box.js', '/ui/panels/gpus.js'). */
function uiModules(root: string): Map<string, PageAsset> {
  const dir = join(root, UI_SUBDIR);
  if (!existsSync(join(dir, 'box.js'))) {
    throw new Error(`status page modules not built: ${join(dir, 'box.js')} is missing (run npm run build)`);
  }
  const out = new Map<string, PageAsset>();
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith('.js')) out.set('/ui/' + relative(dir, p).split(sep).join('/'), { contentType: JS, body: readFileSync(p) });
    }
  };
  walk(dir);
  return out;
}

let cache: { box: Map<string, PageAsset>; fleet: Map<string, PageAsset> } | undefined;

function load(): { box: Map<string, PageAsset>; fleet: Map<string, PageAsset> } {
  if (cache) return cache;
  const root = findPackageDir();
  const pageDir = join(root, PAGE_SUBDIR);
  const read = (f: string) => readFileSync(join(pageDir, f));
  const modules = uiModules(root);
  const css = { contentType: CSS, body: read('page.css') };
  const box = new Map<string, PageAsset>([['/', { contentType: HTML, body: read('index.html') }], ['/page.css', css], ...modules]);
  const fleet = new Map<string, PageAsset>([
    ['/', { contentType: HTML, body: read('fleet.html') }],
    ['/page.css', css],
    ['/fleet.css', { contentType: CSS, body: read('fleet.css') }],
    ...modules,
  ]);
  cache = { box, fleet };
  return cache;
}

/** The box page's files keyed by URL path ('/', '/page.css', '/ui/…'). Read on the first call. Throws if a file is missing. */
export function loadPageAssets(): Map<string, PageAsset> {
  return load().box;
}

/** The fleet page's files keyed by URL path ('/', '/page.css', '/fleet.css', '/ui/…'). */
export function loadFleetAssets(): Map<string, PageAsset> {
  return load().fleet;
}
