/**
 * The fleet: one attached cuzk daemon per target of the targets file (targets-file.ts), each
 * its own MergedAttachSource and Telemetry, exactly as `cuzk-exporter attach` runs one:
 * separate state, counters, histograms and polls, so one target failing, slow or hostile
 * never disturbs another (a scrape of one never waits on another's daemon: polls run on their
 * own and a collection reads only its own model). Only the periodic looks (log, sweep, fleet
 * page) share one timer per period (../timers.ts): each callback is short and bounded, and
 * they ran on the same event loop anyway.
 *
 * apply() moves the running set to a new list of targets: targets gone are stopped, new
 * ones started, targets whose surfaces changed restarted (their counters start again, as a
 * restarted exporter's would), targets whose labels alone changed keep running.
 *
 * The exporter side of a target (its Telemetry) is made by the caller (`exporterFor`,
 * src/exporter/fleet-server.ts telemetryPerTarget): data flows source -> model -> exporter,
 * so the sources never import the exporter; the fleet only ties the two lifetimes together.
 */
import { MergedAttachSource } from '../attach/merge';
import { ErrorCounts } from '../../model/error-counts';
import type { Fields, Logger } from '../../../util/logger';
import { sameSurfaces, TargetSpec } from './targets-file';
import { TimelineCommand } from './timeline-command';
import { ownTimers, SharedTimers, type Every } from '../timers';

/** What the exporter makes of one target's source: started with the target, shut down with it. */
export interface TargetExporter {
  shutdown(): Promise<void>;
}

export interface FleetOptions<E extends TargetExporter = TargetExporter> {
  pollIntervalMs: number;
  grpcStatusIntervalMs: number;
  timeoutMs: number;
  maxBodyBytes: number;
  /** How often each target's TIMELINE file is looked at (default 100 ms). */
  timelinePollMs?: number;
  logger: Logger;
  /** The exporter side of each target (its Telemetry), made once the target's source exists. */
  exporterFor(source: MergedAttachSource, logger: Logger): E;
  /** Timeline command back-off (tests shorten it). */
  commandBackoff?: { minMs?: number; maxMs?: number; stableMs?: number };
  /** Periodic timers (the Fleet passes its shared ones: timers.ts). */
  every?: Every;
}

/** A logger that adds `fields` to every line. */
export function withFields(log: Logger, fields: Fields): Logger {
  return {
    debug: (m, f) => log.debug(m, { ...fields, ...f }),
    info: (m, f) => log.info(m, { ...fields, ...f }),
    warn: (m, f) => log.warn(m, { ...fields, ...f }),
    error: (m, f) => log.error(m, { ...fields, ...f }),
  };
}

/** How often each target is looked at for a passing mismatch (fleet page). */
export const MISMATCH_LOOK_MS = 1000;

/** Error reason (the fleet's own /metrics) of a periodic look that threw. */
export const TIMER_ERROR = 'timer';

/** Error reason of a target's timeline command exiting or failing to start. */
export const TIMELINE_COMMAND_ERROR = 'timeline_command';

export class FleetTarget<E extends TargetExporter = TargetExporter> {
  readonly name: string;
  labels: Record<string, string>;
  readonly source: MergedAttachSource;
  readonly telemetry: E;
  readonly command: TimelineCommand | null;
  private readonly log: Logger;

  constructor(
    readonly spec: TargetSpec,
    opts: FleetOptions<E>,
  ) {
    this.name = spec.name;
    this.labels = spec.labels;
    this.every = opts.every ?? ownTimers;
    this.log = withFields(opts.logger, { target: spec.name });
    this.command = spec.timelineCommand
      ? new TimelineCommand({
          argv: spec.timelineCommand,
          target: spec.name,
          logger: this.log,
          // Counted here; logged once, by the surface (setTimelineFeed).
          onFailure: (msg) => this.source.model.errors.inc(TIMELINE_COMMAND_ERROR, msg),
          onState: (running, msg) => setTimelineFeed(this.source, running, msg),
          // (TimelineCommand names them minBackoffMs / maxBackoffMs: spreading commandBackoff
          // as it is set neither, and every command backed off from the 1 s default)
          minBackoffMs: opts.commandBackoff?.minMs,
          maxBackoffMs: opts.commandBackoff?.maxMs,
          stableMs: opts.commandBackoff?.stableMs,
        })
      : null;
    this.source = new MergedAttachSource({
      statusUrl: spec.statusUrl,
      grpcAddress: spec.grpcAddress,
      // A command's output is the TIMELINE surface's standard input.
      timelineFile: this.command ? '-' : spec.timelineFile,
      timeline: {
        ...(opts.timelinePollMs !== undefined ? { pollMs: opts.timelinePollMs } : {}),
        ...(opts.every ? { every: opts.every } : {}),
        ...(this.command ? { stdin: this.command.stream, label: `command ${spec.timelineCommand!.join(' ')}` } : {}),
      },
      pollIntervalMs: opts.pollIntervalMs,
      grpcStatusIntervalMs: opts.grpcStatusIntervalMs,
      timeoutMs: opts.timeoutMs,
      maxBodyBytes: opts.maxBodyBytes,
      logger: this.log,
    });
    if (this.command) this.source.model.errors.declare(TIMELINE_COMMAND_ERROR);
    // The fleet's logger, not the target's (see telemetryPerTarget).
    this.telemetry = opts.exporterFor(this.source, opts.logger);
  }

  /** Monotonic ms when the target was last seen contradicting itself (0: never). */
  mismatchSeenAt = 0;
  private readonly every: Every;
  private stopWatch: (() => void) | null = null;

  start(): void {
    this.source.start();
    this.command?.start();
    // A clobbered worker reads idle from one partition's end to its next pickup, often under
    // a second: looked at every second (O(workers)), so the fleet page can hold what a 2 s
    // poll would miss, as the key alert holds one sample for its window.
    this.stopWatch = this.every(MISMATCH_LOOK_MS, () => this.look(), { unref: true });
  }

  /** Composes the model now and notes a mismatch. */
  look(): void {
    try {
      this.source.refresh();
    } catch (e) {
      this.source.model.errors.inc('status', (e as Error).message);
      return;
    }
    if (this.source.model.statusMismatch()) this.mismatchSeenAt = performance.now();
  }

  async stop(): Promise<void> {
    this.stopWatch?.();
    this.stopWatch = null;
    await this.source.stop();
    await this.command?.stop();
    await this.telemetry.shutdown();
  }
}

/**
 * Tells the target's TIMELINE surface whether its feeding command runs: while it does not,
 * `cuzk_surface_up{surface="timeline"}` is 0 (and cuzk_up with it), as for a log that cannot
 * be read. The only place that reaches into the source for this: the surface reads a
 * standard-input stream that stays open across the command's restarts, so it cannot see
 * them by itself.
 */
export function setTimelineFeed(source: MergedAttachSource, running: boolean, message: string): void {
  source.timelineFeed(running, message);
}

export interface ApplyResult {
  added: string[];
  removed: string[];
  restarted: string[];
  relabelled: string[];
}

export class Fleet<E extends TargetExporter = TargetExporter> {
  /** The fleet's own errors (targets file, unknown targets, web front): its /metrics. */
  readonly errors = new ErrorCounts();
  private readonly byName = new Map<string, FleetTarget<E>>();
  private sorted: FleetTarget<E>[] = [];

  /** One timer per period for every target's looks and sweeps (timers.ts says why). */
  private readonly timers: SharedTimers;
  private readonly opts: FleetOptions<E>;

  constructor(opts: FleetOptions<E>) {
    // A periodic look that throws (a bug, not a daemon's answer: those are counted where they
    // are read) is counted and logged; the other targets' looks still run.
    this.timers = new SharedTimers((e) => {
      const msg = e instanceof Error ? e.message : String(e);
      this.errors.inc(TIMER_ERROR, msg);
      opts.logger.error(`a periodic look failed: ${msg}`);
    });
    this.opts = { ...opts, every: opts.every ?? this.timers.every };
  }

  get(name: string): FleetTarget<E> | undefined {
    return this.byName.get(name);
  }

  /** Every target, sorted by name. */
  list(): readonly FleetTarget<E>[] {
    return this.sorted;
  }

  get size(): number {
    return this.byName.size;
  }

  /** Moves the running set to `specs` (already validated). */
  async apply(specs: TargetSpec[]): Promise<ApplyResult> {
    const result: ApplyResult = { added: [], removed: [], restarted: [], relabelled: [] };
    const next = new Map(specs.map((s) => [s.name, s]));
    const stopping: Promise<void>[] = [];
    for (const [name, t] of this.byName) {
      const s = next.get(name);
      if (!s) {
        result.removed.push(name);
        this.byName.delete(name);
        stopping.push(t.stop());
      } else if (!sameSurfaces(t.spec, s)) {
        result.restarted.push(name);
        this.byName.delete(name);
        stopping.push(t.stop());
      } else if (JSON.stringify(t.labels) !== JSON.stringify(s.labels)) {
        result.relabelled.push(name);
        t.labels = s.labels;
      }
    }
    // The old ones are gone (their commands ended) before the new ones start.
    await Promise.all(stopping);
    for (const s of specs) {
      if (this.byName.has(s.name)) continue;
      if (!result.restarted.includes(s.name)) result.added.push(s.name);
      const t = new FleetTarget(s, this.opts);
      this.byName.set(s.name, t);
      t.start();
    }
    this.sorted = [...this.byName.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    return result;
  }

  async stop(): Promise<void> {
    const all = [...this.byName.values()];
    this.byName.clear();
    this.sorted = [];
    await Promise.all(all.map((t) => t.stop()));
    this.timers.stop();
  }
}
