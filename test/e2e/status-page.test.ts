/**
 * Browser tests of the live status page (issue #6): headless Debian Chromium (playwright-core)
 * against the real exporter stack, in-process —
 *  - attach mode: a local HTTP server plays the cuzk daemon and serves the fixtures of
 *    test/fixtures/cuzk-status (the body is switched per test); AttachSource polls it,
 *    Telemetry + startServer serve /status and the page, exactly as `cuzk-exporter attach`;
 *  - run mode: the reference prover in-process (NativeEngine, backend "sim" with known
 *    stage lengths), as `cuzk-exporter run`.
 *
 * Waiting is event-driven throughout: AttachSource.onPoll says when the daemon's new body is
 * applied; the page's next /status request and the page-root's data-update-count say when
 * the page has rendered it; run-mode timings come from the engine's own event timestamps.
 *
 * Screenshots go to test/.artifacts/status-page/ (gitignored). UPDATE_SCREENSHOT=1 also
 * rewrites docs/status-page.png (the README's picture) from attach mode on fixture 03:
 *   UPDATE_SCREENSHOT=1 npx jest test/e2e/status-page
 */
import { mkdirSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import type { Page } from 'playwright-core';
import { AttachSource } from '../../src/engine/sources/attach/attach-source';
import { NativeEngine } from '../../src/engine/sources/native/native-engine';
import type { MetricsSource } from '../../src/engine/sources/source';
import { startServer, type RunningServer } from '../../src/exporter/server';
import { Telemetry } from '../../src/exporter/telemetry';
import { silentLogger } from '../../src/util/logger';
import { packageVersion } from '../../src/util/package-root';
import { chromiumAvailable, chromiumSkipReason, launchBrowser, type BrowserHandle } from '../helpers/browser';
import { fixtureText } from '../helpers/fixtures';

const REPO = resolve(__dirname, '..', '..');
const ARTIFACTS = join(REPO, 'test', '.artifacts', 'status-page');
const DOC_SHOT = join(REPO, 'docs', 'status-page.png');
const UPDATE_SCREENSHOT = process.env.UPDATE_SCREENSHOT === '1';

const ROOT = '[data-testid="page-root"]';
/** A 64-character job id shaped like a SnapDeals proof-share request id. */
const LONG_ID = 'ps-snap-f3a9c2e4-1d84-4b6a-9a0e-5c1d2b3e4f50-0000000000000a7-sr1';
const XSS_ID = '<img src=x onerror=alert(1)>';

/** A parsed snapshot, edited freely by the tests. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Snap = Record<string, any>;
const fixture = (name: string): Snap => JSON.parse(fixtureText(name)) as Snap;
const F02 = '02-snap-busy-consistent.json';
const F03 = '03-workers-idle-partitions-on-gpu.json';

/** Replaces a job id everywhere it occurs (pipeline and workers). */
function withJobId(s: Snap, id: string): Snap {
  const old = s.pipelines[0].job_id as string;
  s.pipelines[0].job_id = id;
  for (const w of s.gpu_workers) if (w.current_job === old) w.current_job = id;
  return s;
}

// ── the stand-in cuzk daemon ─────────────────────────────────────────────────────────────

interface FakeDaemon {
  /** Its /status URL. */
  url: string;
  /** Serves `body` from now on; returns its version number. */
  set(body: unknown): number;
  /** Version of the body in the last answered request. */
  servedVersion(): number;
  close(): Promise<void>;
}

async function startFakeDaemon(): Promise<FakeDaemon> {
  let body = '{}';
  let version = 0;
  let served = -1;
  const server = createServer((req, res) => {
    if ((req.url ?? '').split('?')[0] !== '/status') {
      res.writeHead(404, { 'content-type': 'text/plain' });
      res.end('not found');
      return;
    }
    served = version;
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(body);
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/status`,
    set(b: unknown): number {
      body = JSON.stringify(b);
      return ++version;
    },
    servedVersion: () => served,
    close: () =>
      new Promise<void>((ok) => {
        server.close(() => ok());
        server.closeAllConnections();
      }),
  };
}

// ── the exporter stack and page helpers ───────────────────────────────────────────────────

interface Exporter {
  server: RunningServer;
  telemetry: Telemetry;
}

async function startExporter(source: MetricsSource): Promise<Exporter> {
  const version = packageVersion();
  const telemetry = new Telemetry(source, { version, logger: silentLogger });
  const server = await startServer({
    listenAddress: '127.0.0.1:0',
    telemetryPath: '/metrics',
    source,
    telemetry,
    logger: silentLogger,
    version,
  });
  return { server, telemetry };
}

async function updateCount(page: Page): Promise<number> {
  return Number(await page.getAttribute(ROOT, 'data-update-count'));
}

/**
 * Waits until the page has applied `n` more /status answers. n = 2 guarantees that at least
 * one of them was requested after this call (a poll already in flight may count as one).
 */
async function nextUpdates(page: Page, n: number): Promise<void> {
  const target = (await updateCount(page)) + n;
  await page.waitForFunction(
    (t) => Number(document.querySelector('[data-testid="page-root"]')?.getAttribute('data-update-count')) >= t,
    target,
    { timeout: 10_000 },
  );
}

/**
 * In-page bookkeeping for caughtUp(), installed before the page's own script runs: when each
 * /status fetch started and ended (Resource Timing) and when each render finished (the
 * page-root's data-update-count changed), on the page's performance.now() clock.
 */
async function trackRenders(page: Page): Promise<void> {
  await page.addInitScript(() => {
    const w = window as unknown as { __fetches: Array<{ start: number; end: number }>; __renders: number[] };
    w.__fetches = [];
    w.__renders = [];
    new PerformanceObserver((list) => {
      for (const e of list.getEntries() as PerformanceResourceTiming[]) {
        if (new URL(e.name).pathname === '/status') w.__fetches.push({ start: e.startTime, end: e.responseEnd });
      }
      if (w.__fetches.length > 200) w.__fetches.splice(0, 100);
    }).observe({ type: 'resource', buffered: true });
    document.addEventListener('DOMContentLoaded', () => {
      new MutationObserver(() => {
        w.__renders.push(performance.now());
        if (w.__renders.length > 200) w.__renders.splice(0, 100);
      }).observe(document.getElementById('app')!, { attributes: true, attributeFilter: ['data-update-count'] });
    });
  });
}

/**
 * Waits until the page has rendered a /status that it requested after this call. The page
 * polls serially, so the first render after such a request's response ended is that
 * response's. Needs trackRenders() on the page.
 */
async function caughtUp(page: Page): Promise<void> {
  const since = await page.evaluate(() => performance.now());
  await page.waitForFunction(
    (t) => {
      const w = window as unknown as { __fetches: Array<{ start: number; end: number }>; __renders: number[] };
      const f = w.__fetches.find((e) => e.start > t);
      return f !== undefined && w.__renders.some((r) => r > f.end);
    },
    since,
    { timeout: 10_000 },
  );
}

async function shot(page: Page, name: string): Promise<string> {
  mkdirSync(ARTIFACTS, { recursive: true });
  const path = join(ARTIFACTS, name);
  await page.screenshot({ path, fullPage: true });
  return path;
}

/** Page state a test reads through the testid hooks. */
async function workerView(page: Page, id: number): Promise<{ state: string | null; badge: string; partition: string; job: string }> {
  const row = page.getByTestId(`worker-${id}`);
  return {
    state: await row.getAttribute('data-state'),
    badge: (await row.getByTestId('worker-state').textContent()) ?? '',
    partition: (await row.getByTestId('worker-partition').textContent()) ?? '',
    job: (await row.getByTestId('worker-job').textContent()) ?? '',
  };
}

interface Readability {
  what: string;
  text: string;
  innerText: string;
  scrollWidth: number;
  clientWidth: number;
  scrollHeight: number;
  clientHeight: number;
  /** Every line box of the text lies inside the element, its card and the viewport. */
  insideElement: boolean;
  insideCard: boolean;
  insideViewport: boolean;
  lines: number;
  overflowClips: string[];
}

/**
 * For each element: its text, whether it overflows, and whether every rendered line box of
 * its text (Range client rects) lies within the element, within the nearest card
 * (`cardSelector`) and within the viewport. Also lists clipping ancestors' overflow styles.
 */
async function readability(page: Page, selector: string, cardSelector: string): Promise<Readability[]> {
  return page.$$eval(
    selector,
    (els, card) =>
      els.map((e) => {
        const el = e as HTMLElement;
        const within = (r: DOMRect, b: DOMRect) =>
          r.left >= b.left - 0.5 && r.right <= b.right + 0.5 && r.top >= b.top - 0.5 && r.bottom <= b.bottom + 0.5;
        const range = document.createRange();
        range.selectNodeContents(el);
        const rects = Array.from(range.getClientRects()).filter((r) => r.width > 0);
        const box = el.getBoundingClientRect();
        const cardEl = el.closest(card);
        const cardBox = cardEl ? cardEl.getBoundingClientRect() : null;
        const vp = new DOMRect(0, 0, document.documentElement.clientWidth, Number.MAX_SAFE_INTEGER);
        const clips: string[] = [];
        for (let a: HTMLElement | null = el; a; a = a.parentElement) {
          const cs = getComputedStyle(a);
          if (cs.overflowX !== 'visible' || cs.textOverflow === 'ellipsis') clips.push(`${a.className || a.tagName}: overflow-x ${cs.overflowX}, text-overflow ${cs.textOverflow}`);
        }
        return {
          what: `${el.getAttribute('data-testid') ?? el.className}`,
          text: el.textContent ?? '',
          innerText: el.innerText,
          scrollWidth: el.scrollWidth,
          clientWidth: el.clientWidth,
          scrollHeight: el.scrollHeight,
          clientHeight: el.clientHeight,
          insideElement: rects.length > 0 && rects.every((r) => within(r, box)),
          insideCard: cardBox !== null && rects.every((r) => within(r, cardBox)),
          insideViewport: rects.every((r) => within(r, vp)),
          lines: new Set(rects.map((r) => Math.round(r.top))).size,
          overflowClips: clips,
        };
      }),
    cardSelector,
  );
}

/**
 * Text on the page that does not fit: for every element with its own text, each line box of
 * that text must lie inside the element's box (horizontally) and inside every ancestor that
 * clips (overflow other than visible). Returns a description of each offender.
 */
async function clippedText(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const out: string[] = [];
    const root = document.getElementById('app');
    if (!root) return ['no #app'];
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      const t = n as Text;
      if (!t.data.trim()) continue;
      const el = t.parentElement;
      if (!el || el.closest('[data-active="false"]') || getComputedStyle(el).visibility === 'hidden') continue;
      const range = document.createRange();
      range.selectNodeContents(t);
      const rects = Array.from(range.getClientRects()).filter((r) => r.width > 0);
      if (!rects.length) continue;
      const name = `${el.getAttribute('data-testid') ?? el.className ?? el.tagName} "${t.data.trim().slice(0, 40)}"`;
      const box = el.getBoundingClientRect();
      const left = Math.min(...rects.map((r) => r.left));
      const right = Math.max(...rects.map((r) => r.right));
      if (getComputedStyle(el).display !== 'inline' && (left < box.left - 1 || right > box.right + 1)) {
        out.push(`${name} overflows its box: text ${left.toFixed(1)}..${right.toFixed(1)}, box ${box.left.toFixed(1)}..${box.right.toFixed(1)}`);
      }
      for (let a = el.parentElement; a && a !== document.body; a = a.parentElement) {
        const cs = getComputedStyle(a);
        if (cs.overflowX === 'visible' && cs.overflowY === 'visible') continue;
        const ab = a.getBoundingClientRect();
        if (left < ab.left - 1 || right > ab.right + 1 || rects.some((r) => r.top < ab.top - 1 || r.bottom > ab.bottom + 1)) {
          out.push(`${name} clipped by ${a.getAttribute('data-testid') ?? a.className}`);
        }
      }
    }
    return out;
  });
}

type Box = { x: number; y: number; width: number; height: number };
/** Boxes of every section and of the repeated blocks inside them, keyed by a stable name. */
async function layoutBoxes(page: Page): Promise<Record<string, Box>> {
  return page.evaluate(() => {
    const out: Record<string, Box> = {};
    const sel = [
      '[data-testid^="section-"]',
      '[data-testid="gpu-list"] > *',
      '[data-testid^="worker-"][data-state]',
      '[data-testid="pipeline"]',
      '[data-testid="partition-cell"]',
      '[data-testid="mismatch-banner"]',
      '[data-testid="invariant-ok"]',
      '[data-testid="conn-state"]',
      '.foot',
    ].join(',');
    document.querySelectorAll(sel).forEach((e, i) => {
      const r = e.getBoundingClientRect();
      const name = `${i}:${e.getAttribute('data-testid') ?? e.className}`;
      out[name] = { x: r.x + window.scrollX, y: r.y + window.scrollY, width: r.width, height: r.height };
    });
    return out;
  });
}

// ── the suites ───────────────────────────────────────────────────────────────────────────

const skipReason = chromiumSkipReason();
const describeBrowser = chromiumAvailable() ? describe : describe.skip;
if (skipReason !== null) {
  // Say so where a person reads the run, not only in a skipped test's name.
  process.stderr.write(`status-page.test.ts: ${skipReason}\n`);
}

describeBrowser(`status page in a browser${skipReason ? ` (${skipReason})` : ''}`, () => {
  let browser: BrowserHandle;

  beforeAll(async () => {
    browser = await launchBrowser({ viewport: { width: 1440, height: 1000 } });
  });
  afterAll(async () => {
    await browser?.close();
  });

  describe('attach mode (AttachSource polling a stand-in cuzk /status)', () => {
    let daemon: FakeDaemon;
    let source: AttachSource;
    let exporter: Exporter;
    let page: Page;
    /** Every CSP violation the page reports (none expected). */
    const cspViolations: string[] = [];

    /** Serves `body` from the daemon and returns once the page (tab `on`) shows it. */
    async function show(body: Snap, on: Page = page): Promise<void> {
      const v = daemon.set(body);
      await new Promise<void>((ok, fail) => {
        const timer = setTimeout(() => {
          source.onPoll = null;
          fail(new Error(`AttachSource did not apply body version ${v} within 5 s`));
        }, 5000);
        source.onPoll = (good) => {
          if (good && daemon.servedVersion() >= v) {
            clearTimeout(timer);
            source.onPoll = null;
            ok();
          }
        };
      });
      await caughtUp(on);
    }

    beforeAll(async () => {
      daemon = await startFakeDaemon();
      daemon.set(fixture('01-idle.json'));
      source = new AttachSource({ url: daemon.url, pollIntervalMs: 100, timeoutMs: 2000, maxBodyBytes: 8 << 20, logger: silentLogger });
      exporter = await startExporter(source);
      source.start();
      page = await browser.newPage();
      await trackRenders(page);
      await page.exposeFunction('__cspViolation', (v: string) => void cspViolations.push(v));
      await page.addInitScript(() => {
        document.addEventListener('securitypolicyviolation', (e) =>
          (window as unknown as { __cspViolation(v: string): void }).__cspViolation(`${e.violatedDirective} ${e.blockedURI}`),
        );
      });
      await page.goto(`${exporter.server.url}/`);
      await nextUpdates(page, 1);
    });

    afterAll(async () => {
      await page?.close();
      await source?.stop();
      await exporter?.server.close();
      await exporter?.telemetry.shutdown();
      await daemon?.close();
    });

    afterEach(() => {
      expect(cspViolations).toEqual([]);
    });

    it('fixture 03: both workers read IDLE and the mismatch banner is visible', async () => {
      await show(fixture(F03));
      expect(await workerView(page, 0)).toEqual({ state: 'idle', badge: 'IDLE', partition: '—', job: '—' });
      expect(await workerView(page, 1)).toEqual({ state: 'idle', badge: 'IDLE', partition: '—', job: '—' });

      const banner = page.getByTestId('mismatch-banner');
      expect(await banner.isVisible()).toBe(true);
      expect(await banner.getAttribute('role')).toBe('alert');
      expect(await banner.getAttribute('data-active')).toBe('true');
      expect(await banner.getAttribute('data-client')).toBe('true');
      // The exporter's own cuzk_status_mismatch agrees (exporter object of /status).
      expect(await banner.getAttribute('data-exporter')).toBe('true');
      const box = await banner.boundingBox();
      expect(box && box.width > 300 && box.height > 40).toBe(true);
      expect(await page.getByTestId('mismatch-text').textContent()).toMatch(/^Status mismatch: 2 partitions on the GPU but 0 workers busy/);
      const chips = await page.getByTestId('mismatch-partition').evaluateAll((els) => els.map((e) => [e.getAttribute('data-index'), e.getAttribute('data-orphan')]));
      expect(chips).toEqual([['11', 'true'], ['12', 'true']]);
      expect(await page.getByTestId('invariant-ok').isVisible()).toBe(false);
      expect(await page.getAttribute(ROOT, 'data-mismatch')).toBe('true');
      expect(await page.getByTestId('gpus-mismatch-note').isVisible()).toBe(true);
      const orphanCells = await page.locator('[data-testid="partition-cell"][data-orphan="true"]').evaluateAll((els) => els.map((e) => e.getAttribute('data-index')));
      expect(orphanCells).toEqual(['11', '12']);
      expect(await page.getByTestId('meta-source').textContent()).toBe('attach');
      expect(await page.getAttribute(ROOT, 'data-conn')).toBe('live');

      await shot(page, 'attach-fixture-03.png');
      if (UPDATE_SCREENSHOT) {
        await page.screenshot({ path: DOC_SHOT, fullPage: true });
        process.stderr.write(`status-page.test.ts: wrote ${DOC_SHOT}\n`);
      }
    });

    it('fixture 02: the workers show partitions 9 and 10, no banner', async () => {
      await show(fixture(F02));
      const job = 'ps-snap-7f3a9c2e-41d8-4b6a-9a0e-5c1d2b3e4f50';
      expect(await workerView(page, 0)).toEqual({ state: 'proving', badge: 'PROVING', partition: 'P9', job });
      expect(await workerView(page, 1)).toEqual({ state: 'proving', badge: 'PROVING', partition: 'P10', job });
      expect(await page.getByTestId('mismatch-banner').isVisible()).toBe(false);
      expect(await page.getByTestId('mismatch-banner').getAttribute('data-exporter')).toBe('false');
      expect(await page.getByTestId('invariant-ok').isVisible()).toBe(true);
      expect(await page.getAttribute(ROOT, 'data-mismatch')).toBe('false');
      const gpuCells = await page.locator('[data-testid="partition-cell"][data-state="gpu"]').evaluateAll((els) =>
        els.map((e) => [e.getAttribute('data-index'), e.getAttribute('data-orphan')]),
      );
      expect(gpuCells).toEqual([['9', 'false'], ['10', 'false']]);
      await shot(page, 'attach-fixture-02.png');
    });

    it('a 64-character ps-snap job id is fully readable (worker row, pipeline, finalizing note)', async () => {
      expect(LONG_ID).toHaveLength(64);
      // Fixture 02 with the long id, worker 1 reporting idle: P10 stays in gpu without a
      // proving worker while worker 0 proves — split proving (P10 finalizing), not a
      // mismatch (issue 14). The id is in a worker row, the pipeline header and the note
      // that explains the finalizing partition.
      const s = withJobId(fixture(F02), LONG_ID);
      Object.assign(s.gpu_workers[1], { state: 'idle', current_job: null, current_partition: null, busy_secs: null });
      await show(s);
      expect(await page.getByTestId('mismatch-banner').isVisible()).toBe(false);
      expect(await page.getByTestId('invariant-ok').isVisible()).toBe(true);
      expect(await page.getByTestId('invariant-ok-text').textContent()).toMatch(/^2 partitions on the GPU, 1 worker proving — 1 finalizing: .*not a mismatch/);
      const cells = await page.locator('[data-testid="partition-cell"][data-state="gpu"]').evaluateAll((els) =>
        els.map((e) => [e.getAttribute('data-index'), e.getAttribute('data-orphan'), e.getAttribute('data-finalizing')]),
      );
      expect(cells).toEqual([['9', 'false', 'false'], ['10', 'false', 'true']]);
      expect(await page.getByTestId('finalizing-partition').evaluateAll((els) => els.map((e) => e.getAttribute('data-index')))).toEqual(['10']);
      expect(await page.getByTestId('pipeline').getAttribute('data-job-id')).toBe(LONG_ID);
      for (const width of [1440, 1024, 700]) {
        await page.setViewportSize({ width, height: 1000 }); // layout is redone when read
        const all = [
          ...(await readability(page, '[data-testid="worker-0"] [data-testid="worker-job"]', '.gpu-card')),
          ...(await readability(page, '[data-testid="pipeline-job-id"]', '[data-testid="pipeline"]')),
          ...(await readability(page, '[data-testid="finalizing-job"] .mm-jobid', '[data-testid="invariant-ok"]')),
        ];
        expect(all).toHaveLength(3);
        for (const r of all) {
          const ctx = `${r.what} at ${width}px: ${JSON.stringify(r)}`;
          expect({ ctx, text: r.text, innerText: r.innerText }).toEqual({ ctx, text: LONG_ID, innerText: LONG_ID });
          expect({ ctx, ok: r.scrollWidth <= r.clientWidth && r.scrollHeight <= r.clientHeight }).toEqual({ ctx, ok: true });
          expect({ ctx, insideElement: r.insideElement, insideCard: r.insideCard, insideViewport: r.insideViewport }).toEqual({
            ctx,
            insideElement: true,
            insideCard: true,
            insideViewport: true,
          });
          expect({ ctx, clips: r.overflowClips.filter((c) => c.includes('ellipsis')) }).toEqual({ ctx, clips: [] });
        }
        await shot(page, `attach-long-id-${width}.png`);
      }
      await page.setViewportSize({ width: 1440, height: 1000 });
    });

    it('a job id "<img src=x onerror=alert(1)>" renders as text, creates no element, fires nothing', async () => {
      // A second tab of the same page with the Content-Security-Policy removed (header and
      // meta), so that an injection would really run: the page must be safe by construction,
      // not only because the CSP blocks inline handlers.
      const p = await browser.newPage();
      try {
        const dialogs: string[] = [];
        const requests: string[] = [];
        p.on('dialog', (d) => {
          dialogs.push(d.message());
          void d.dismiss();
        });
        p.on('request', (r) => requests.push(new URL(r.url()).pathname));
        await p.route(`${exporter.server.url}/`, async (route) => {
          const res = await route.fetch();
          const html = (await res.text()).replace(/<meta http-equiv="Content-Security-Policy"[^>]*>/i, '');
          const headers = { ...res.headers() };
          delete headers['content-security-policy'];
          await route.fulfill({ status: res.status(), headers, body: html });
        });
        await p.addInitScript(() => {
          // Every element added inside the app root (where the page renders) from the start of
          // parsing, as "TAG" or "TAG src" (the static markup there has no img, svg or script).
          const w = window as unknown as { __created: string[] };
          w.__created = [];
          const note = (e: Element) => {
            const src = e.getAttribute('src');
            w.__created.push(src === null ? e.tagName : `${e.tagName} ${src}`);
          };
          new MutationObserver((records) => {
            for (const r of records)
              r.addedNodes.forEach((n) => {
                if (n.nodeType !== 1 || !(n as Element).closest('#app')) return;
                note(n as Element);
                (n as Element).querySelectorAll('*').forEach(note);
              });
          }).observe(document, { childList: true, subtree: true });
        });
        await trackRenders(p);
        await p.goto(`${exporter.server.url}/`);
        expect(await p.locator('meta[http-equiv="Content-Security-Policy"]').count()).toBe(0);

        const s = withJobId(fixture(F02), XSS_ID);
        Object.assign(s.gpu_workers[1], { state: 'idle', current_job: null, current_partition: null, busy_secs: null });
        await show(s, p);
        // One more poll, so an image's error handler would have had time to fire.
        await nextUpdates(p, 1);

        expect(await p.getByTestId('worker-0').getByTestId('worker-job').textContent()).toBe(XSS_ID);
        expect(await p.getByTestId('pipeline-job-id').textContent()).toBe(XSS_ID);
        expect(await p.getByTestId('pipeline').getAttribute('data-job-id')).toBe(XSS_ID);
        expect(await p.locator('[data-testid="finalizing-job"] .mm-jobid').textContent()).toBe(XSS_ID);
        expect(await p.locator('img').count()).toBe(0);
        const created = await p.evaluate(() => (window as unknown as { __created: string[] }).__created);
        expect(created.length).toBeGreaterThan(50); // the observer saw the page render
        expect(created.filter((t) => /^(IMG|SCRIPT|IFRAME|SVG|OBJECT|EMBED|VIDEO|AUDIO|LINK|STYLE|B)\b/i.test(t))).toEqual([]);
        expect(requests.filter((r) => r === '/x')).toEqual([]);
        expect(dialogs).toEqual([]);
        await shot(p, 'attach-xss-id.png');

        // Control: on this tab the same string inserted as HTML does create an image, request
        // /x and fire the alert, so the assertions above can fail.
        const dialog = p.waitForEvent('dialog');
        await p.evaluate((html) => document.querySelector('.foot')?.insertAdjacentHTML('beforeend', html), XSS_ID);
        expect((await dialog).message()).toBe('1');
        expect(requests).toContain('/x');
        expect(await p.evaluate(() => (window as unknown as { __created: string[] }).__created.filter((t) => t.startsWith('IMG')))).toEqual(['IMG x']);
      } finally {
        await p.close();
      }
    });

    it('running jobs come first; finished ones are bounded and collapsed (a busy run-mode box keeps hundreds for 30 s)', async () => {
      // Fixture 02 plus 3 more running jobs and 237 finished ones (our engine's fields:
      // outcome, finished_secs_ago), finished listed first as a run-mode box lists them.
      const s = fixture(F02);
      const running = s.pipelines[0];
      const finished = Array.from({ length: 237 }, (_, i) => ({
        job_id: `snap-finished-${String(i).padStart(3, '0')}`,
        proof_kind: 'snap-update',
        started_secs_ago: 40,
        finished_secs_ago: 0.1 * (237 - i),
        outcome: i === 5 ? 'failed' : 'completed',
        total_partitions: 16,
        partitions_done: 16,
        partitions: Array.from({ length: 16 }, (_, j) => ({ index: j, state: i === 5 && j === 3 ? 'failed' : 'done', synth_ms: 900, gpu_ms: 450 })),
      }));
      const more = [1, 2, 3].map((k) => ({ ...running, job_id: `snap-running-${k}`, partitions: running.partitions.map((p: Snap) => ({ ...p, state: p.state === 'gpu' ? 'synth_done' : p.state })) }));
      s.pipelines = [...finished, running, ...more];
      await show(s);
      const order = await page.$$eval('[data-testid="pipeline"]', (els) => els.map((e) => [e.getAttribute('data-job-id'), e.getAttribute('data-finished')]));
      expect(order.slice(0, 4)).toEqual([[running.job_id, 'false'], ['snap-running-1', 'false'], ['snap-running-2', 'false'], ['snap-running-3', 'false']]);
      // Bounded: the 10 most recently finished, most recent first; collapsed by default.
      expect(order.slice(4).map(([id]) => id)).toEqual(Array.from({ length: 10 }, (_, i) => `snap-finished-${236 - i}`));
      const details = page.getByTestId('pipelines-finished');
      expect(await details.getAttribute('open')).toBeNull();
      expect(await page.getByTestId('pipelines-finished-summary').textContent()).toBe('237 finished jobs (1 failed) — the 10 most recent listed · kept 30 s after they end');
      expect(await page.getByTestId('pipelines-finished-more').textContent()).toBe('227 older finished jobs not listed (see /status)');
      expect(await page.getByTestId('pipelines-count').textContent()).toBe('241 jobs · 4 running');
      // The running ones are near the top, and the page is short (it was 38,000 px with the running jobs 33,000 px down).
      const tops = await page.$$eval('[data-testid="pipeline-list"] > [data-testid="pipeline"]', (els) => els.map((e) => e.getBoundingClientRect().top + window.scrollY));
      expect(tops).toHaveLength(4);
      expect(Math.max(...tops)).toBeLessThan(2000);
      const height = await page.evaluate(() => document.documentElement.scrollHeight);
      expect(height).toBeLessThan(2600);
      await shot(page, 'attach-finished-collapsed.png');
      // Opened: ten cards more, still bounded.
      await page.getByTestId('pipelines-finished-summary').click();
      expect(await details.getAttribute('open')).toBe('');
      expect(await page.locator('[data-testid="pipeline-list-finished"] [data-testid="pipeline"]:visible').count()).toBe(10);
      expect(await page.evaluate(() => document.documentElement.scrollHeight)).toBeLessThan(6000);
      await page.getByTestId('pipelines-finished-summary').click(); // closed again for the next tests
    });

    it('"busy for" says what it measures: the current stint, not cumulative', async () => {
      await show(fixture(F02));
      const head = page.getByTestId('busy-for-head').first();
      expect(await head.textContent()).toBe('busy for');
      expect(await head.getAttribute('title')).toMatch(/^Time since this worker last went from idle to busy: its current busy stint \(cuzk's busy_secs\)\. .*not cumulative/);
      expect(await page.getByTestId('worker-0').getByTestId('worker-busy').getAttribute('title')).toBe(await head.getAttribute('title'));
    });

    it('no text is clipped or overflows its box (fixtures 01-04, long ids, 3-digit partitions)', async () => {
      const manyParts = fixture(F02);
      withJobId(manyParts, LONG_ID);
      const states = ['pending', 'synthesizing', 'synth_done', 'gpu', 'done', 'failed'];
      manyParts.pipelines[0].total_partitions = 128;
      manyParts.pipelines[0].partitions = Array.from({ length: 128 }, (_, i) => ({
        index: i,
        state: states[i % states.length],
        synth_ms: i % 6 === 0 ? null : 1234567,
        gpu_ms: i % 6 < 3 ? null : 7654321,
      }));
      manyParts.gpu_workers[1].current_partition = 123;
      const bodies: Array<[string, Snap]> = [
        ['01', fixture('01-idle.json')],
        ['02', fixture(F02)],
        ['03', fixture(F03)],
        ['04', fixture('04-porep-partition-failed.json')],
        ['128 partitions, long id', manyParts],
      ];
      const problems: string[] = [];
      for (const [name, body] of bodies) {
        await show(body);
        for (const width of [1440, 700]) {
          await page.setViewportSize({ width, height: 1000 }); // layout is redone when read
          for (const p of await clippedText(page)) problems.push(`${name} @${width}px: ${p}`);
        }
        await page.setViewportSize({ width: 1440, height: 1000 });
      }
      expect(problems).toEqual([]);
    });

    it('section boxes stay the same across updates', async () => {
      // The same set of GPUs, workers, jobs, partitions, tables; everything else changes:
      // states, the mismatch banner, job ids (short, 64 chars, markup), durations, numbers.
      // Above every duration a variant shows (a 3-day-old job): attach refuses durations longer than the uptime.
      let uptime = 400_000;
      const variant = (base: string, edit: (s: Snap) => void): Snap => {
        const s = fixture(base);
        s.uptime_secs = uptime++;
        edit(s);
        return s;
      };
      const variants: Array<[string, Snap]> = [
        ['02', variant(F02, () => {})],
        ['03 mismatch', variant(F03, () => {})],
        [
          '02 long id, big numbers',
          variant(F02, (s) => {
            withJobId(s, LONG_ID);
            s.gpu_workers[0].busy_secs = 98765.4;
            s.gpu_workers[1].busy_secs = 0.001;
            s.pipelines[0].started_secs_ago = 3 * 86400 + 17;
            s.pipelines[0].partitions[12].synth_ms = 4_000_000;
            s.memory.used_bytes = s.memory.total_bytes - 1;
            s.memory.available_bytes = 1;
            s.synthesis.active = 7;
            s.counters.total_completed = 123456789;
            s.counters.completed_by_kind['snap-update'] = 123456782;
            s.counters.queue_depth = 99999;
            s.buffers.pending_handles = 1234567;
          }),
        ],
        [
          '02 markup id, one worker idle',
          variant(F02, (s) => {
            withJobId(s, XSS_ID);
            Object.assign(s.gpu_workers[1], { state: 'idle', current_job: null, current_partition: null, busy_secs: null });
          }),
        ],
        [
          '03 failed/pending partitions',
          variant(F03, (s) => {
            s.pipelines[0].partitions.forEach((p: Snap, i: number) =>
              Object.assign(p, i % 2 ? { state: 'failed', synth_ms: 1, gpu_ms: 999999 } : { state: 'pending', synth_ms: null, gpu_ms: null }),
            );
            s.memory.used_bytes = 0;
            s.synthesis.active = 0;
            s.counters.queue_depth = 0;
          }),
        ],
        // A mismatch listing all 16 partitions needs more room than is reserved: its banner
        // may grow while it is shown (not compared), but the page must return to the same
        // layout once it clears.
        [
          'all 16 on the GPU (not compared)',
          variant(F02, (s) => {
            s.pipelines[0].partitions.forEach((p: Snap) => Object.assign(p, { state: 'gpu', gpu_ms: 100 }));
          }),
        ],
        ['02 again', variant(F02, () => {})],
      ];

      // A fresh tab that has never shown a mismatch: the first banner must not move anything.
      const tab = await browser.newPage();
      try {
        await trackRenders(tab);
        await tab.goto(`${exporter.server.url}/`);
        await nextUpdates(tab, 1);
        const seen: Array<[string, Record<string, Box>]> = [];
        for (const [name, body] of variants) {
          await show(body, tab);
          if (name.includes('not compared')) continue;
          seen.push([name, await layoutBoxes(tab)]);
          if (name === '02' || name === '02 again') {
            // A further poll of the same snapshot moves nothing either.
            await nextUpdates(tab, 1);
            seen.push([`${name} (next poll)`, await layoutBoxes(tab)]);
          }
        }
        await shot(tab, 'attach-layout-last.png');
        const [firstName, first] = seen[0];
        expect(Object.keys(first).filter((k) => k.includes('section-')).length).toBe(10);
        const round = (b: Box) => [b.x, b.y, b.width, b.height].map((v) => Math.round(v * 2) / 2);
        for (const [name, boxes] of seen.slice(1)) {
          expect(Object.keys(boxes)).toEqual(Object.keys(first));
          const moved = Object.keys(first)
            .filter((k) => round(first[k]).join() !== round(boxes[k]).join())
            .map((k) => `${k}: ${round(first[k]).join(',')} -> ${round(boxes[k]).join(',')}`);
          expect({ from: firstName, to: name, moved }).toEqual({ from: firstName, to: name, moved: [] });
        }
      } finally {
        await tab.close();
      }
    });
  });

  describe('run mode (NativeEngine, sim backend)', () => {
    // One partition each, no jitter: a WinningPoSt is synthesized for 150 ms and then keeps
    // a worker busy for 1.5 s; a WindowPoSt 400 ms, then 1.45 s. Submitted together, the
    // four worker transitions fall at about 150, 400, 1650 and 1850 ms: spread over the
    // page's 500 ms poll, so the measurement is not one lucky phase.
    const GPU_MS = 1450;
    const config = {
      backend: 'sim',
      gpus: 1,
      workers_per_gpu: 2,
      synthesis_concurrency: 2,
      time_scale: 1,
      seed: 7,
      sim: {
        'winning-post': { synth_ms: 150, gpu_ms: 1500, jitter: 0 },
        'window-post': { synth_ms: 400, gpu_ms: 1450, jitter: 0 },
      },
    };
    let engine: NativeEngine;
    let exporter: Exporter;
    let page: Page;

    beforeAll(async () => {
      engine = NativeEngine.open(config);
      exporter = await startExporter(engine);
      page = await browser.newPage();
      await page.goto(`${exporter.server.url}/`);
      await nextUpdates(page, 1);
    });

    afterAll(async () => {
      if (engine) engine.onBatch = null;
      await page?.close();
      await exporter?.server.close();
      await exporter?.telemetry.shutdown();
      await engine?.close();
    });

    it('a worker state change reaches the page within 1 s of the engine event', async () => {
      expect(await page.getByTestId('meta-source').textContent()).toBe('run');
      expect(await page.getByTestId('meta-backend').textContent()).toBe('sim');
      expect((await workerView(page, 0)).state).toBe('idle');
      expect((await workerView(page, 1)).state).toBe('idle');

      // The engine's clock is CLOCK_MONOTONIC (ns); the page reports wall-clock ms. Map one
      // onto the other from a tight pair of readings.
      let offsetMs = 0;
      let best = Infinity;
      for (let i = 0; i < 20; i++) {
        const a = Date.now();
        const n = engine.now();
        const b = Date.now();
        if (b - a < best) {
          best = b - a;
          offsetMs = (a + b) / 2 - n / 1e6;
        }
      }

      // Native side: every worker transition with the engine's own event timestamp. Busy:
      // the WORKER busy event's time (model.wSinceNs); idle: busy time + the stint length
      // the idle event carries (Δ model.wBusyNs).
      type Change = { worker: number; state: 'proving' | 'idle'; ms: number };
      const native: Change[] = [];
      const m = engine.model;
      const prevBusy = Array.from(m.wBusy);
      const prevBusyNs = Array.from(m.wBusyNs);
      engine.onBatch = () => {
        for (let w = 0; w < m.wBusy.length; w++) {
          if (m.wBusy[w] === prevBusy[w]) continue;
          const ns = m.wBusy[w] ? m.wSinceNs[w] : m.wSinceNs[w] + (m.wBusyNs[w] - prevBusyNs[w]);
          native.push({ worker: m.topology.workers[w].id, state: m.wBusy[w] ? 'proving' : 'idle', ms: ns / 1e6 + offsetMs });
          prevBusy[w] = m.wBusy[w];
          prevBusyNs[w] = m.wBusyNs[w];
        }
      };

      // Page side: a MutationObserver on the worker rows' data-state, with the wall-clock
      // time of the DOM change and of the next frame painted after it.
      await page.evaluate(() => {
        const w = window as unknown as { __changes: Array<{ worker: number; state: string; dom: number; paint: number | null }> };
        w.__changes = [];
        new MutationObserver((records) => {
          const dom = Date.now();
          for (const r of records) {
            const el = r.target as Element;
            const id = /^worker-(\d+)$/.exec(el.getAttribute('data-testid') ?? '');
            if (!id) continue;
            const c = { worker: Number(id[1]), state: el.getAttribute('data-state') ?? '', dom, paint: null as number | null };
            w.__changes.push(c);
            requestAnimationFrame(() => {
              c.paint = Date.now();
            });
          }
        }).observe(document.querySelector('[data-testid="gpu-list"]')!, { attributes: true, attributeFilter: ['data-state'], subtree: true });
      });

      // Two proofs at once: both workers go busy, then idle — four transitions. One carries
      // a 64-character id, shown in full in its worker row.
      const jobs = [engine.submit('winning-post', { requestId: LONG_ID }), engine.submit('window-post', { requestId: 'wdpost-latency-probe' })];
      const busyJobs = page.waitForFunction(
        (id) => Array.from(document.querySelectorAll('[data-testid="worker-job"]')).some((e) => e.textContent === id),
        LONG_ID,
        { timeout: 5000 },
      );
      await busyJobs;
      await shot(page, 'run-sim-busy.png');
      const results = await Promise.all(jobs.map((j) => engine.awaitProof(j)));
      expect(results.map((r) => r.outcome)).toEqual(['completed', 'completed']);
      await page.waitForFunction(
        () => {
          const c = (window as unknown as { __changes: Array<{ state: string; paint: number | null }> }).__changes;
          return c.filter((x) => x.state === 'idle' && x.paint !== null).length >= 2 && c.every((x) => x.paint !== null);
        },
        undefined,
        { timeout: 5000 },
      );
      const onPage = await page.evaluate(() => (window as unknown as { __changes: Array<{ worker: number; state: string; dom: number; paint: number }> }).__changes);
      engine.onBatch = null;

      // Two stints, whichever workers ran them: four transitions on each side, and per worker
      // the page shows the same sequence as the engine reported.
      expect(native).toHaveLength(4);
      expect(onPage).toHaveLength(4);
      const rows: string[] = [];
      for (const w of [...new Set(native.map((n) => n.worker))]) {
        const ours = native.filter((n) => n.worker === w);
        const theirs = onPage.filter((p) => p.worker === w);
        expect(theirs.map((p) => p.state)).toEqual(ours.map((n) => n.state));
        ours.forEach((n, i) => {
          const domMs = theirs[i].dom - n.ms;
          const paintMs = theirs[i].paint - n.ms;
          rows.push(`W${n.worker} -> ${n.state}: DOM +${domMs.toFixed(1)} ms, painted +${paintMs.toFixed(1)} ms`);
          // Shown after it happened (1 ms clock slack), and within 1 s.
          expect(domMs).toBeGreaterThanOrEqual(-1);
          expect(paintMs).toBeLessThan(1000);
        });
      }
      // The stints really were as configured (at least the shorter GPU stage).
      for (const w of [...new Set(native.map((n) => n.worker))]) {
        const seq = native.filter((n) => n.worker === w);
        for (let i = 0; i + 1 < seq.length; i += 2) {
          expect([seq[i].state, seq[i + 1].state]).toEqual(['proving', 'idle']);
          expect(seq[i + 1].ms - seq[i].ms).toBeGreaterThanOrEqual(GPU_MS - 5);
        }
      }
      console.log(`status page latency (engine WORKER event -> page), run mode, page polls every 500 ms:\n  ${rows.join('\n  ')}`);
    });
  });
});
