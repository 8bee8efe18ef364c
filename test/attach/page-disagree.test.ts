/**
 * The status page's banner shows a disagreement between an attached daemon's surfaces (issue
 * 10): /status says worker 1 is idle while its TIMELINE log says it proves a partition (a
 * WindowPoSt would not do: cuzk's /status never shows one, so that is no contradiction). Real
 * exporter (status + TIMELINE surfaces polling a /status stand-in and a log file), real
 * Chromium (the Debian package; skipped with a message where it is missing).
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { BrowserHandle, chromiumAvailable, chromiumSkipReason, launchBrowser } from '../helpers/browser';
import { MergedHarness, sampleValue, startMerged, waitFor } from './merged-harness';
import { idle, pipeline, proving, snapshot } from './snapshots';
import { StatusServer } from './status-server';

const d = chromiumAvailable() ? describe : describe.skip;
if (!chromiumAvailable()) console.warn(chromiumSkipReason());

d('status page: surfaces disagree', () => {
  let browser: BrowserHandle | undefined;
  let status: StatusServer | undefined;
  let h: MergedHarness | undefined;
  let dir: string;
  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cuzk-page-disagree-'));
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await h?.close();
    await status?.close();
    await browser?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test('the banner names the worker and the surfaces that contradict each other', async () => {
    const A = 'ps-snap-7f3a9c2e-41d8-4b6a-9a0e-5c1d2b3e4f50';
    status = await StatusServer.start();
    status.serveJson(snapshot({ uptime: 10, pipelines: [pipeline(A, 'snap-update', [['gpu', 1, null], ['synth_done', 1, null]])], workers: [proving(0, 0, A, 0, 0.1), idle(1, 0)] }));
    const log = path.join(dir, 'cuzk.log');
    fs.writeFileSync(log, '');
    h = await startMerged({ statusUrl: status.url, timelineFile: log, pollIntervalMs: 200, skewToleranceMs: 100, start: true });
    fs.appendFileSync(log, `TIMELINE,100000,GPU_PICKUP,${A},worker=0,partition=0\nTIMELINE,100000,GPU_START,${A},worker=0,partition=0\nTIMELINE,100002,GPU_PICKUP,${A},worker=1,partition=1\nTIMELINE,100002,GPU_START,${A},worker=1,partition=1\n`);
    await waitFor('surfaces_disagree', async () => sampleValue((await h!.metrics()).samples, 'cuzk_status_mismatch_reason', { reason: 'surfaces_disagree' }) === 1, 20_000);

    const page = await browser!.newPage();
    await page.goto(`${h.server.url}/`);
    const banner = page.getByTestId('mismatch-banner');
    await waitFor('the banner active with the disagreement', async () => (await banner.getAttribute('data-active')) === 'true' && (await banner.getAttribute('data-disagree')) === '1', 20_000);
    const text = await page.getByTestId('mismatch-text').textContent();
    expect(text).toContain("the daemon's surfaces disagree about a worker");
    expect(text).toContain('worker 1 (GPU 0) is proving per timeline but idle per status');
    expect(await banner.getAttribute('data-reasons')).toContain('surfaces_disagree');
  }, 90_000);
});
