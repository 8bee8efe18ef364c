/**
 * The targets file in force: re-read when it changes (its inode, size or times, looked at
 * every second) and on SIGHUP, as the web config is. A file that fails to load or validate
 * keeps the last good set of targets running: one log line, counted in the fleet's
 * cuzk_exporter_errors_total{reason="targets_file"}, and
 * cuzk_fleet_targets_file_last_reload_successful 0 until a good one is loaded.
 */
import * as fs from 'node:fs';
import type { Logger } from '../../../util/logger';
import type { ApplyResult, Fleet } from './fleet';
import { loadTargetsFile } from './targets-file';

export const TARGETS_FILE_ERROR = 'targets_file';

function signature(file: string): string {
  try {
    const s = fs.statSync(file);
    return `${s.ino}:${s.size}:${s.mtimeMs}:${s.ctimeMs}`;
  } catch {
    return 'missing';
  }
}

export class TargetsFileWatch {
  lastReloadOk = true;
  /** Unix seconds of the last good load. */
  lastSuccessSecs = Date.now() / 1000;
  reloads = 0;
  lastError: string | null = null;
  private sig: string;
  private timer: NodeJS.Timeout | null = null;
  private chain: Promise<unknown> = Promise.resolve();

  constructor(
    readonly file: string,
    private readonly fleet: Fleet,
    private readonly log: Logger,
    private readonly checkEveryMs = 1000,
  ) {
    this.sig = signature(file);
    fleet.errors.declare(TARGETS_FILE_ERROR);
  }

  /** Starts looking for changes (the first load is the caller's). */
  start(): void {
    const tick = () => {
      if (signature(this.file) !== this.sig) void this.reload('changed');
      this.timer = setTimeout(tick, this.checkEveryMs);
      this.timer.unref();
    };
    this.timer = setTimeout(tick, this.checkEveryMs);
    this.timer.unref();
  }

  stop(): Promise<unknown> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    return this.chain;
  }

  /** Re-reads the file now; resolves false when it was refused (the last good set stays). Reloads run one at a time. */
  reload(why: 'changed' | 'SIGHUP'): Promise<boolean> {
    const next = this.chain.then(() => this.reloadNow(why));
    this.chain = next.catch(() => undefined);
    return next;
  }

  private async reloadNow(why: string): Promise<boolean> {
    // Whatever happens, this version of the file has been looked at.
    this.sig = signature(this.file);
    let result: ApplyResult;
    try {
      const specs = loadTargetsFile(this.file);
      result = await this.fleet.apply(specs);
    } catch (e) {
      const msg = `${(e as Error).message}; keeping the previous ${this.fleet.size} target(s)`;
      this.lastReloadOk = false;
      this.lastError = msg;
      this.fleet.errors.inc(TARGETS_FILE_ERROR, msg);
      this.log.error('targets file reload failed', { why, err: msg });
      return false;
    }
    this.lastReloadOk = true;
    this.lastError = null;
    this.lastSuccessSecs = Date.now() / 1000;
    this.reloads++;
    this.log.info('targets file reloaded', {
      file: this.file,
      why,
      targets: this.fleet.size,
      added: result.added.join(',') || undefined,
      removed: result.removed.join(',') || undefined,
      restarted: result.restarted.join(',') || undefined,
      relabelled: result.relabelled.join(',') || undefined,
    });
    return true;
  }
}
