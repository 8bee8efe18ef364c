/**
 * The fleet page in headless Chromium against the fleet exporter in-process, with stand-in
 * daemons whose state the test sets (test/attach/status-server.ts): a consistent prover, one
 * showing the seed's contradiction, one whose daemon refuses connections; a label holding
 * markup; a targets file that fails to reload. No CSP violation, no clipped text, strings from
 * JSON rendered as text. (The fleet with real simulated provers, Prometheus and
 * VictoriaMetrics: fleet-stack.test.ts.)
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Page } from 'playwright-core';
import { startFleetServer, telemetryPerTarget } from '../../src/exporter/fleet-server';
import type { Telemetry } from '../../src/exporter/telemetry';
import type { RunningServer } from '../../src/exporter/web-front';
import { Fleet } from '../../src/engine/sources/fleet/fleet';
import { loadTargetsFile } from '../../src/engine/sources/fleet/targets-file';
import { TargetsFileWatch } from '../../src/engine/sources/fleet/targets-watch';
import { silentLogger } from '../../src/util/logger';
import { fixture } from '../attach/snapshots';
import { refusedUrl, StatusServer } from '../attach/status-server';
import { chromiumSkipReason, launchBrowser, type BrowserHandle } from '../helpers/browser';

const XSS = '<img src=x onerror=alert(1)>';
const skip = chromiumSkipReason();
const d = skip ? describe.skip : describe;

d(`fleet page in a browser${skip ? ` (${skip})` : ''}`, () => {
  let dir: string;
  let ok: StatusServer;
  let bad: StatusServer;
  let fleet: Fleet<Telemetry>;
  let watch: TargetsFileWatch;
  let server: RunningServer;
  let browser: BrowserHandle;
  let page: Page;
  let file: string;
  const csp: string[] = [];
  const dialogs: string[] = [];

  const write = (text: string) => {
    fs.writeFileSync(`${file}.tmp`, text);
    fs.renameSync(`${file}.tmp`, file);
  };
  let targetsText = '';

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cuzk-fleet-page-'));
    file = path.join(dir, 'targets.yml');
    ok = await StatusServer.start();
    bad = await StatusServer.start();
    ok.behaviour = { kind: 'body', body: fixture('02-snap-busy-consistent.json').text };
    bad.behaviour = { kind: 'body', body: fixture('03-workers-idle-partitions-on-gpu.json').text };
    targetsText = [
      'targets:',
      `  - {name: gpu-17, labels: {rack: ${JSON.stringify(XSS)}}, status_url: "${ok.url}"}`,
      `  - {name: gpu-18, status_url: "${bad.url}"}`,
      `  - {name: gpu-19.lab:2, status_url: "${await refusedUrl()}"}`,
      '',
    ].join('\n');
    write(targetsText);
    fleet = new Fleet({ pollIntervalMs: 200, grpcStatusIntervalMs: 5000, timeoutMs: 1000, maxBodyBytes: 1 << 20, logger: silentLogger, exporterFor: telemetryPerTarget('test') });
    watch = new TargetsFileWatch(file, fleet, silentLogger, 50);
    await fleet.apply(loadTargetsFile(file));
    server = await startFleetServer({ listenAddress: '127.0.0.1:0', telemetryPath: '/metrics', fleet, watch, logger: silentLogger, version: 'test' });
    watch.start();
    browser = await launchBrowser({ viewport: { width: 1440, height: 900 } });
    page = await browser.newPage();
    await page.exposeFunction('__csp', (v: string) => void csp.push(v));
    await page.addInitScript(() => document.addEventListener('securitypolicyviolation', (e) => (window as unknown as { __csp(v: string): void }).__csp(`${e.violatedDirective} ${e.blockedURI}`)));
    page.on('dialog', (dl) => {
      dialogs.push(dl.message());
      void dl.dismiss();
    });
    await page.goto(`${server.url}/`);
  });

  afterAll(async () => {
    await browser?.close();
    await watch?.stop();
    await server?.close();
    await fleet?.stop();
    await ok?.close();
    await bad?.close();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  afterEach(() => {
    expect(csp).toEqual([]);
    expect(dialogs).toEqual([]);
  });

  const rows = () => page.$$eval('[data-testid="fleet-row"]', (els) => els.map((e) => [e.getAttribute('data-target'), e.getAttribute('data-health')]));

  it('every prover, the contradiction and the dead daemon flagged red and sorted first, labels as text', async () => {
    await page.waitForFunction(
      () => {
        const r = Array.from(document.querySelectorAll('[data-testid="fleet-row"]'));
        return r.length === 3 && r.every((x) => x.getAttribute('data-health') !== null) && document.querySelector('[data-target="gpu-18"][data-health="mismatch"]') && document.querySelector('[data-target="gpu-19.lab:2"][data-health="down"]');
      },
      undefined,
      { timeout: 20_000 },
    );
    expect(await rows()).toEqual([
      ['gpu-18', 'mismatch'],
      ['gpu-19.lab:2', 'down'],
      ['gpu-17', 'ok'],
    ]);
    const chips = async (t: string) => page.locator(`[data-testid="fleet-row"][data-target="${t}"] [data-testid="health-chip"]`).evaluateAll((els) => els.map((e) => [e.textContent, e.getAttribute('data-bad')]));
    expect(await chips('gpu-18')).toEqual([['MISMATCH', 'true']]);
    expect(await chips('gpu-19.lab:2')).toEqual([['DOWN', 'true']]);
    expect(await chips('gpu-17')).toEqual([['OK', 'false']]);
    // Red rows: a background and a bar on the left.
    const bg = await page.locator('[data-target="gpu-18"]').evaluate((e) => getComputedStyle(e).backgroundColor);
    expect(bg).not.toBe('rgba(0, 0, 0, 0)');
    // The label with markup is text; no element was made from it.
    expect(await page.locator('[data-target="gpu-17"] [data-testid="fleet-labels"]').textContent()).toBe(`rack=${XSS}`);
    expect(await page.locator('img').count()).toBe(0);
    // Workers strip: fixture 02 has both workers proving, fixture 03 both idle.
    const strip = (t: string) => page.locator(`[data-target="${t}"] [data-testid="strip-cell"]`).evaluateAll((els) => els.map((e) => e.getAttribute('data-busy')));
    expect(await strip('gpu-17')).toEqual(['true', 'true']);
    expect(await strip('gpu-18')).toEqual(['false', 'false']);
    expect(await page.locator('[data-target="gpu-17"] [data-testid="strip-count"]').textContent()).toBe('2/2 busy');
    // The link of a name with ":" is a path segment, escaped.
    expect(await page.locator('[data-target="gpu-19.lab:2"] [data-testid="fleet-link"]').getAttribute('href')).toBe('targets/gpu-19.lab%3A2/');
    expect(await page.getByTestId('fleet-total-attention').textContent()).toBe('2');
    expect(await page.getByTestId('fleet-total-up').textContent()).toBe('2 / 3');
    expect(await page.title()).toBe('⚠ 2 need attention · cuzk fleet');
    expect(await page.getAttribute('[data-testid="page-root"]', 'data-conn')).toBe('live');
  });

  it('no text is clipped or overflows at 1440 and 700 px', async () => {
    for (const width of [1440, 700]) {
      await page.setViewportSize({ width, height: 900 });
      const problems = await page.evaluate(() => {
        const out: string[] = [];
        const walker = document.createTreeWalker(document.getElementById('app')!, NodeFilter.SHOW_TEXT);
        for (let n = walker.nextNode(); n; n = walker.nextNode()) {
          const t = n as Text;
          const el = t.parentElement;
          if (!t.data.trim() || !el || getComputedStyle(el).display === 'none' || el.closest('[data-active="false"]')) continue;
          const r = document.createRange();
          r.selectNodeContents(t);
          const rects = Array.from(r.getClientRects()).filter((x) => x.width > 0);
          if (!rects.length) continue;
          const box = el.getBoundingClientRect();
          const right = Math.max(...rects.map((x) => x.right));
          if (getComputedStyle(el).display !== 'inline' && right > box.right + 1) out.push(`${el.className} "${t.data.slice(0, 30)}" overflows`);
          if (right > document.documentElement.clientWidth + 1) out.push(`${el.className} "${t.data.slice(0, 30)}" past the viewport`);
        }
        return out;
      });
      expect({ width, problems }).toEqual({ width, problems: [] });
    }
    await page.setViewportSize({ width: 1440, height: 900 });
  });

  it('a targets file that fails to reload is said on the page; the previous targets stay', async () => {
    write(targetsText + '  - {name: gpu-20, status_url: "ftp://nope"}\n');
    await page.waitForSelector('[data-testid="targets-file-banner"][data-active="true"]', { timeout: 20_000 });
    expect(await page.getByTestId('targets-file-banner').textContent()).toMatch(/^The targets file failed to reload: targets file .*target "gpu-20": status_url "ftp:\/\/nope" is not an http.*the previous targets keep running\.$/);
    expect(await page.getByTestId('meta-targets-file').textContent()).toBe('reload FAILED');
    expect((await rows()).length).toBe(3);
    write(targetsText);
    await page.waitForSelector('[data-testid="targets-file-banner"][data-active="false"]', { state: 'attached', timeout: 20_000 });
    expect(await page.getByTestId('meta-targets-file').textContent()).toBe('loaded');
  });

  it('the fleet page says when the exporter cannot be reached, and keeps the last answer', async () => {
    await page.route('**/fleet.json', (route) => route.abort());
    await page.waitForSelector('[data-testid="page-root"][data-conn="down"]', { timeout: 20_000 });
    expect(await page.getByTestId('stale-banner').textContent()).toMatch(/^Cannot fetch \/fleet\.json \(connection failed\)\. Showing the last answer, from \d\d:\d\d:\d\d\.$/);
    expect((await rows()).length).toBe(3);
    await page.unroute('**/fleet.json');
    await page.waitForSelector('[data-testid="page-root"][data-conn="live"]', { timeout: 20_000 });
  });
});
