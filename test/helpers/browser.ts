/**
 * Headless Chromium for the status-page tests, driven by `playwright-core` against the
 * system's Debian `chromium` package. Nothing here downloads a browser: if
 * `/usr/bin/chromium` is missing, tests skip with `chromiumSkipReason()`'s message.
 *
 * Usage:
 *   const d = chromiumAvailable() ? describe : describe.skip;
 *   d('status page', () => {
 *     let b: BrowserHandle;
 *     beforeAll(async () => { b = await launchBrowser(); });
 *     afterAll(async () => { await b?.close(); });
 *     it('…', async () => { const page = await b.newPage(); await page.goto(url); … });
 *   });
 */
import { accessSync, constants, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';

/** The Debian package's launcher script (apt-get install chromium). */
export const CHROMIUM_PATH = '/usr/bin/chromium';

export const CHROMIUM_ARGS: readonly string[] = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
  '--disable-quic',
];

/** True when the system Chromium exists and is executable. */
export function chromiumAvailable(): boolean {
  return chromiumSkipReason() === null;
}

/** Why browser tests cannot run here, or null when they can. */
export function chromiumSkipReason(): string | null {
  try {
    accessSync(CHROMIUM_PATH, constants.X_OK);
    return null;
  } catch {
    return `browser tests skipped: ${CHROMIUM_PATH} not found or not executable (install the Debian package: apt-get install chromium)`;
  }
}

export interface BrowserHandle {
  /** The persistent context (its own fresh profile directory). */
  readonly context: BrowserContext;
  /** The fresh temporary profile directory; removed by close(). */
  readonly userDataDir: string;
  /** Opens a new tab. Default viewport 1440×1000 unless launchBrowser() was told otherwise. */
  newPage(): Promise<Page>;
  /** Closes the browser and deletes the profile directory. Safe to call twice. */
  close(): Promise<void>;
}

export interface LaunchOptions {
  viewport?: { width: number; height: number };
  /** Milliseconds to wait for the browser to start (default 30 000). */
  timeoutMs?: number;
}

/** Launches headless Chromium with a fresh temporary profile. */
export async function launchBrowser(opts: LaunchOptions = {}): Promise<BrowserHandle> {
  const reason = chromiumSkipReason();
  if (reason !== null) throw new Error(reason);
  const userDataDir = mkdtempSync(join(tmpdir(), 'cuzk-chromium-'));
  let context: BrowserContext;
  try {
    context = await chromium.launchPersistentContext(userDataDir, {
      executablePath: CHROMIUM_PATH,
      headless: true,
      args: [...CHROMIUM_ARGS],
      viewport: opts.viewport ?? { width: 1440, height: 1000 },
      timeout: opts.timeoutMs ?? 30_000,
    });
  } catch (err) {
    rmSync(userDataDir, { recursive: true, force: true });
    throw err;
  }
  let closed = false;
  // A persistent context opens one blank tab; close it so every test gets a clean one.
  for (const p of context.pages()) await p.close().catch(() => undefined);
  return {
    context,
    userDataDir,
    newPage: () => context.newPage(),
    async close(): Promise<void> {
      if (closed) return;
      closed = true;
      try {
        await context.close();
      } finally {
        rmSync(userDataDir, { recursive: true, force: true });
      }
    },
  };
}
