/**
 * The fleet exporter's own /metrics (src/exporter/fleet-metrics.ts) and the fleet page's
 * summary (src/exporter/fleet-summary.ts), from stand-in targets: the expectations come from
 * the files' header contracts (one family per line there, Prometheus text format 0.0.4:
 * HELP/TYPE then samples, label values escaped as `\\`, `\"`, `\n`, `+Inf`/`-Inf`/`NaN`)
 * and hand-computed sums — no daemon, no timers.
 */
import { ErrorCounts } from '../../src/engine/model/error-counts';
import type { Fleet, FleetTarget } from '../../src/engine/sources/fleet/fleet';
import type { TargetsFileWatch } from '../../src/engine/sources/fleet/targets-watch';
import { fleetMetricsText } from '../../src/exporter/fleet-metrics';
import { summarizeFleet, summarizeTarget } from '../../src/exporter/fleet-summary';

interface Cmd {
  running: boolean;
  failures: number;
  backoffMs: number;
  lastFailure: string | null;
}

interface FakeTargetOpts {
  name: string;
  surfaces?: { name: string; target: string; up: boolean }[];
  command?: Cmd | null;
  labels?: Record<string, string>;
  model?: Record<string, unknown>;
  nowNs?: number;
  mismatchSeenAt?: number;
  snapshotAge?: number;
}

function fakeTarget(o: FakeTargetOpts) {
  let looks = 0;
  const t = {
    name: o.name,
    labels: o.labels ?? {},
    command: o.command ?? null,
    mismatchSeenAt: o.mismatchSeenAt ?? 0,
    look: () => void looks++,
    source: {
      surfaceStates: () => o.surfaces ?? [],
      nowNs: () => o.nowNs ?? 0,
      snapshotAgeSeconds: () => o.snapshotAge ?? 0,
      model: o.model ?? {},
    },
  };
  return { t: t as unknown as FleetTarget, looks: () => looks };
}

function fakeFleet(targets: FleetTarget[], errors = new ErrorCounts()): Fleet {
  return { list: () => targets, errors } as unknown as Fleet;
}

function fakeWatch(w: Partial<TargetsFileWatch>): TargetsFileWatch {
  return { file: '/etc/targets.yml', lastReloadOk: true, lastSuccessSecs: 1700000000.5, lastError: null, reloads: 0, ...w } as TargetsFileWatch;
}

describe('fleet /metrics', () => {
  test('the whole body for two targets, one with a timeline command', () => {
    const a = fakeTarget({
      name: 'box-a',
      surfaces: [
        { name: 'status', target: 'x', up: true },
        { name: 'grpc', target: 'y', up: true },
      ],
      command: { running: true, failures: 3, backoffMs: 0, lastFailure: null },
    });
    const b = fakeTarget({
      name: 'box-b',
      surfaces: [
        { name: 'status', target: 'x', up: true },
        { name: 'grpc', target: 'y', up: false },
      ],
    });
    const errors = new ErrorCounts();
    errors.inc('unknown_target');
    errors.inc('unknown_target');
    errors.inc('targets_file');
    errors.declare('web');
    const body = fleetMetricsText(fakeFleet([a.t, b.t], errors), fakeWatch({ lastReloadOk: false, lastSuccessSecs: 1700000000.5 }), '1.2.3');
    expect(body).toBe(
      [
        '# HELP cuzk_exporter_build_info Build information of this exporter; always 1. source="fleet": a multi-target exporter (targets at /probe?target=NAME).',
        '# TYPE cuzk_exporter_build_info gauge',
        'cuzk_exporter_build_info{version="1.2.3",source="fleet",backend="cuzk"} 1',
        '# HELP cuzk_fleet_targets Targets in the targets file in force.',
        '# TYPE cuzk_fleet_targets gauge',
        'cuzk_fleet_targets 2',
        "# HELP cuzk_fleet_target_up Whether each target's attached cuzk daemon answered on every surface at its last poll (its cuzk_up).",
        '# TYPE cuzk_fleet_target_up gauge',
        'cuzk_fleet_target_up{target="box-a"} 1',
        'cuzk_fleet_target_up{target="box-b"} 0',
        "# HELP cuzk_fleet_timeline_command_running Whether each target's timeline command runs now (1) or waits to be restarted (0).",
        '# TYPE cuzk_fleet_timeline_command_running gauge',
        'cuzk_fleet_timeline_command_running{target="box-a"} 1',
        "# HELP cuzk_fleet_timeline_command_failures_total Exits and failures to start of each target's timeline command (each is restarted with back-off).",
        '# TYPE cuzk_fleet_timeline_command_failures_total counter',
        'cuzk_fleet_timeline_command_failures_total{target="box-a"} 3',
        '# HELP cuzk_fleet_targets_file_last_reload_successful Whether the last reload of the targets file succeeded (1) or kept the previous targets (0).',
        '# TYPE cuzk_fleet_targets_file_last_reload_successful gauge',
        'cuzk_fleet_targets_file_last_reload_successful 0',
        '# HELP cuzk_fleet_targets_file_last_reload_success_timestamp_seconds Unix time of the last successful load of the targets file.',
        '# TYPE cuzk_fleet_targets_file_last_reload_success_timestamp_seconds gauge',
        'cuzk_fleet_targets_file_last_reload_success_timestamp_seconds 1700000000.5',
        "# HELP cuzk_exporter_errors_total Errors of the fleet exporter itself by reason (each target's own are in its /probe answer).",
        '# TYPE cuzk_exporter_errors_total counter',
        'cuzk_exporter_errors_total{reason="targets_file"} 1',
        'cuzk_exporter_errors_total{reason="unknown_target"} 2',
        'cuzk_exporter_errors_total{reason="web"} 0',
        '',
      ].join('\n'),
    );
  });

  test('a stopped command, a good reload, no targets with commands, label escaping and special values', () => {
    const a = fakeTarget({ name: 'we"ird\\na\nme', surfaces: [], command: { running: false, failures: 0, backoffMs: 500, lastFailure: 'exit 1' } });
    const body = fleetMetricsText(fakeFleet([a.t]), fakeWatch({ lastReloadOk: true, lastSuccessSecs: Infinity }), 'v"1');
    const lines = body.split('\n');
    expect(lines).toContain('cuzk_exporter_build_info{version="v\\"1",source="fleet",backend="cuzk"} 1');
    // No surfaces: up on every one of them (vacuously), as cuzk_up.
    expect(lines).toContain('cuzk_fleet_target_up{target="we\\"ird\\\\na\\nme"} 1');
    expect(lines).toContain('cuzk_fleet_timeline_command_running{target="we\\"ird\\\\na\\nme"} 0');
    expect(lines).toContain('cuzk_fleet_timeline_command_failures_total{target="we\\"ird\\\\na\\nme"} 0');
    expect(lines).toContain('cuzk_fleet_targets_file_last_reload_successful 1');
    expect(lines).toContain('cuzk_fleet_targets_file_last_reload_success_timestamp_seconds +Inf');
    expect(fleetMetricsText(fakeFleet([]), fakeWatch({ lastSuccessSecs: -Infinity }), 'v').split('\n')).toContain('cuzk_fleet_targets_file_last_reload_success_timestamp_seconds -Inf');
    expect(fleetMetricsText(fakeFleet([]), fakeWatch({ lastSuccessSecs: NaN }), 'v').split('\n')).toContain('cuzk_fleet_targets_file_last_reload_success_timestamp_seconds NaN');
  });

  test('no targets: the per-target families keep their HELP and TYPE with no samples; errors sorted by reason', () => {
    const errors = new ErrorCounts();
    errors.inc('b');
    errors.inc('a');
    errors.inc('c');
    const body = fleetMetricsText(fakeFleet([], errors), fakeWatch({}), 'v');
    expect(body).toContain('# TYPE cuzk_fleet_target_up gauge\n# HELP cuzk_fleet_timeline_command_running');
    expect(body).toContain('cuzk_fleet_targets 0\n');
    expect(body.endsWith('cuzk_exporter_errors_total{reason="a"} 1\ncuzk_exporter_errors_total{reason="b"} 1\ncuzk_exporter_errors_total{reason="c"} 1\n')).toBe(true);
  });
});

describe('fleet summary', () => {
  function model(over: Record<string, unknown> = {}) {
    const errors = new ErrorCounts();
    errors.inc('poll', 'first');
    errors.inc('poll');
    errors.inc('status', 'status went away');
    return {
      up: true,
      topology: {
        workers: [
          { id: 10, gpu: 0 },
          { id: 11, gpu: 1 },
          { id: 12, gpu: 1 },
        ],
        gpus: [
          { ordinal: 0, name: 'RTX 4090', extra: 'x' },
          { ordinal: 1, name: 'RTX 5090', extra: 'y' },
        ],
      },
      // busy ns per worker at the asked clock
      workerBusyNsAt: (i: number, now: number) => (now === 9e9 ? [1.5e9, 0, 2.25e9][i] : NaN),
      wBusy: [1, 0, 1],
      kProofsCompleted: [4, 0, 2, 0, 1],
      kProofsFailed: [1, 0, 0, 0, 2],
      kQueueDepth: [3, 1, 0, 0, 5],
      partitionsOnGpu: () => 7,
      statusMismatch: () => true,
      mismatchReasons: () => new Set(['gpu count', 'worker count']),
      errors,
      ...over,
    };
  }

  test('one target, every field from its model', () => {
    const { t, looks } = fakeTarget({
      name: 'box-a',
      labels: { rack: '3' },
      surfaces: [{ name: 'status', target: 'http://h:9820', up: true, extra: 1 } as never],
      command: { running: false, failures: 2, backoffMs: 2500, lastFailure: 'exit status 1' },
      nowNs: 9e9,
      snapshotAge: 0.25,
      model: model(),
    });
    const s = summarizeTarget(t);
    expect(looks()).toBe(1);
    expect(s).toEqual({
      name: 'box-a',
      labels: { rack: '3' },
      up: true,
      surfaces: [{ name: 'status', target: 'http://h:9820', up: true }],
      gpus: [
        { ordinal: 0, name: 'RTX 4090' },
        { ordinal: 1, name: 'RTX 5090' },
      ],
      workers: [
        { id: 10, gpu: 0, busy: true },
        { id: 11, gpu: 1, busy: false },
        { id: 12, gpu: 1, busy: true },
      ],
      busy_seconds_total: 3.75,
      clock_secs: 9,
      queue_depth: 9,
      proofs_completed_total: 7,
      proofs_failed_total: 3,
      completed_by_kind: { 'porep-c2': 4, 'window-post': 2, other: 1 },
      partitions_on_gpu: 7,
      mismatch: true,
      mismatch_seen_secs_ago: null,
      mismatch_reasons: ['gpu count', 'worker count'],
      errors_total: 3,
      last_error: 'status went away',
      snapshot_age_secs: 0.25,
      timeline_command: { running: false, failures: 2, backoff_secs: 2.5, last_failure: 'exit status 1' },
    });
  });

  test('no command, no mismatch, a mismatch seen a while ago', () => {
    const seenAt = performance.now() - 5000;
    const { t } = fakeTarget({ name: 'b', nowNs: 9e9, mismatchSeenAt: seenAt, model: model({ statusMismatch: () => false, mismatchReasons: () => new Set() }) });
    const s = summarizeTarget(t);
    expect(s.timeline_command).toBeNull();
    expect(s.mismatch).toBe(false);
    expect(s.mismatch_reasons).toEqual([]);
    expect(s.mismatch_seen_secs_ago).toBeGreaterThanOrEqual(5);
    expect(s.mismatch_seen_secs_ago).toBeLessThan(60);
  });

  test('the fleet: version, clocks, the targets file and every target in order', () => {
    const a = fakeTarget({ name: 'a', nowNs: 9e9, model: model() });
    const b = fakeTarget({ name: 'b', nowNs: 9e9, model: model({ up: false }) });
    const before = Number(process.hrtime.bigint()) / 1e9;
    const wallBefore = Date.now();
    const f = summarizeFleet(fakeFleet([a.t, b.t]), fakeWatch({ file: '/t.yml', lastReloadOk: false, lastError: 'bad yaml', reloads: 4 }), '9.9');
    const after = Number(process.hrtime.bigint()) / 1e9;
    expect(f.version).toBe('9.9');
    expect(f.now_secs).toBeGreaterThanOrEqual(before);
    expect(f.now_secs).toBeLessThanOrEqual(after);
    const gen = Date.parse(f.generated_at);
    expect(f.generated_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(gen).toBeGreaterThanOrEqual(wallBefore);
    expect(gen).toBeLessThanOrEqual(Date.now());
    expect(f.targets_file).toEqual({ file: '/t.yml', last_reload_ok: false, last_error: 'bad yaml', reloads: 4 });
    expect(f.targets.map((t) => [t.name, t.up])).toEqual([
      ['a', true],
      ['b', false],
    ]);
  });
});
