/**
 * Ingest: how fast events move from the native engine into the TypeScript state model,
 * and what emitting one costs natively.
 *
 *  - end to end: a sim-backend engine (2 GPUs x 2 workers, time scale 1e-6, all four
 *    proof kinds) fills its ring while the JS thread is held off (Atomics.wait, so no
 *    callback drains early); then one NativeEngine.refresh() is timed: FFI drains in
 *    batches of 4096 into the preallocated buffer, DataView decode, StateModel apply;
 *    alternately without and with the exporter attached (its histograms, typed arrays in
 *    the model since issue 21, record when partitions and proofs finish, with job-id
 *    exemplars), each in a process of its own after five untimed fills there, the median of
 *    three timed fills (bench/lib/ingest-arm.ts); a full GC runs before every timed region in both arms;
 *  - replay: the same native records (captured on the way in) applied to fresh models,
 *    without FFI: model only, and model + the exporter's histograms;
 *  - native emit cost: `make -C native bench` (owned by native/), parsed.
 */
import { spawn, spawnSync } from 'node:child_process';
import * as path from 'node:path';
import { EVENT_SIZE } from '../src/engine/model/event-layout';
import { BATCH_EVENTS } from '../src/engine/sources/native/native-engine';
import { StateModel } from '../src/engine/model/state-model';
import { Telemetry } from '../src/exporter/telemetry';
import { findPackageRoot } from '../src/util/package-root';
import { silentLogger } from '../src/util/logger';
import { libraryPathInUse } from './lib/engine';
import { TIMED_FILLS, TimedRefresh, WARM_FILLS, fill, fullGc } from './lib/ingest-fill';
import { Figure, figure, median } from './lib/stats';

export interface IngestOptions {
  runs?: number;
  /** Jobs submitted per fill (mixed kinds, ~90 events per job on average). */
  jobsPerFill?: number;
  /** Times `make -C native bench` runs (each is its own best of 3 rounds x 20 M emits). */
  nativeRuns?: number;
  log?: (msg: string) => void;
}

export interface NativeEmit {
  available: boolean;
  command: string;
  /** ns per event_emit with events enabled / disabled, one value per native bench run. */
  enabledNsPerEvent?: Figure;
  disabledNsPerEvent?: Figure;
  drainNsPerEvent?: Figure;
  rawLines?: string[];
  missing?: string;
}

export interface IngestResult {
  method: string;
  runs: number;
  eventsPerFill: Figure;
  batchesPerFill: Figure;
  /** refresh(): FFI drain + decode + StateModel apply, events per second. */
  endToEnd: Figure;
  endToEndNsPerEvent: Figure;
  /** The same with the exporter attached (its histograms and exemplars record on partition/proof ends). */
  endToEndWithHistograms: Figure;
  replayModelOnly: Figure;
  replayWithHistograms: Figure;
  /** Replay with the model's typed-array histograms recording but no exemplars (no Telemetry): what the exemplars cost, by difference. Absent before 2026-12-03. */
  replayHistogramsNoExemplars?: Figure;
  nativeEmit: NativeEmit;
  /** End-to-end arms in processes of their own: untimed fills, then the median of this many timed (absent before 2026-12-04: one process, one fill per run). */
  timedFillsPerRun?: number;
  warmFillsPerRun?: number;
}

/** One end-to-end arm in a process of its own (bench/lib/ingest-arm.ts says why). */
function armProcess(arm: 'model' | 'exporter', jobs: number): Promise<TimedRefresh> {
  const script = path.join(__dirname, 'lib', 'ingest-arm.js');
  const child = spawn(process.execPath, [script, arm, String(jobs), libraryPathInUse() ?? ''], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve(JSON.parse(out) as TimedRefresh) : reject(new Error(`ingest arm ${arm} exited ${code}: ${err.trim()}`))));
  });
}

/** 'model': no observer; 'histograms': the model's histograms record, no exemplars; 'exporter': Telemetry attached (histograms and exemplars). */
type ReplayArm = 'model' | 'histograms' | 'exporter';
/** Replays per arm in each run (the run's figure is their median). */
const REPLAYS_PER_RUN = 7;

function replay(chunks: Buffer[], arm: ReplayArm, topologyFrom: StateModel): number {
  const model = new StateModel();
  model.setTopology(topologyFrom.topology, 0);
  let telemetry: Telemetry | null = null;
  if (arm === 'histograms') model.observer = model.histograms;
  if (arm === 'exporter') {
    // Job ids as the engine names them (job-<handle>), so exemplars are recorded as end to end.
    const ids = new Map<number, string>();
    const jobId = (h: number) => {
      let id = ids.get(h);
      if (id === undefined) ids.set(h, (id = `job-${h}`));
      return id;
    };
    const src = { model, source: 'run' as const, backend: 'sim', refresh() {}, nowNs: () => 0, statusBody: () => null, snapshotAgeSeconds: () => 0, ready: () => ({ ok: true, reason: '' }), jobId };
    telemetry = new Telemetry(src, { version: 'bench', logger: silentLogger });
  }
  // Copies into one reused batch buffer, as the engine does, outside the timed region.
  const views = chunks.map((c) => new DataView(c.buffer, c.byteOffset, c.byteLength));
  let n = 0;
  fullGc();
  const t0 = process.hrtime.bigint();
  for (const v of views) {
    const k = v.byteLength / EVENT_SIZE;
    model.applyEvents(v, k);
    n += k;
  }
  const ns = Number(process.hrtime.bigint() - t0);
  void telemetry?.shutdown();
  if (model.eventsTotal !== n) throw new Error(`replay applied ${model.eventsTotal} of ${n} events`);
  return (n / ns) * 1e9;
}

export function nativeEmit(runs: number, log: (m: string) => void): NativeEmit {
  const root = findPackageRoot();
  const command = 'make -C native bench';
  const enabled: number[] = [];
  const disabled: number[] = [];
  const drain: number[] = [];
  let rawLines: string[] = [];
  for (let r = 0; r < runs; r++) {
    const res = spawnSync('make', ['-s', '-C', path.join(root, 'native'), 'bench'], { encoding: 'utf8', timeout: 180_000 });
    if (res.status !== 0) {
      const why = res.error ? res.error.message : (res.stderr || res.stdout || '').trim().split('\n').slice(-3).join(' | ');
      return { available: false, command, missing: `${command} failed (exit ${res.status}): ${why}` };
    }
    const out = res.stdout;
    const num = (re: RegExp) => {
      const m = re.exec(out);
      return m ? Number(m[1]) : NaN;
    };
    const en = num(/events enabled\s+([\d.]+) ns\/event/);
    const dis = num(/events disabled\s+([\d.]+) ns\/event/);
    const dr = num(/drain \(batches of \d+\)\s+([\d.]+) ns\/event/);
    if (!Number.isFinite(en)) {
      return { available: false, command, missing: `${command} ran but printed no "events enabled <x> ns/event" line (format changed?)` };
    }
    enabled.push(en);
    if (Number.isFinite(dis)) disabled.push(dis);
    if (Number.isFinite(dr)) drain.push(dr);
    rawLines = out.split('\n').filter((l) => /events (en|dis)abled|drain \(/.test(l)).map((l) => l.trim());
    log(`ingest: native bench run ${r + 1}/${runs}: emit ${en} ns/event`);
  }
  return {
    available: true,
    command,
    enabledNsPerEvent: figure('ns/event', enabled, 3),
    disabledNsPerEvent: disabled.length ? figure('ns/event', disabled, 3) : undefined,
    drainNsPerEvent: drain.length ? figure('ns/event', drain, 3) : undefined,
    rawLines,
  };
}

export async function benchIngest(opts: IngestOptions = {}): Promise<IngestResult> {
  const runs = opts.runs ?? 5;
  const jobs = opts.jobsPerFill ?? 1000;
  const log = opts.log ?? (() => {});

  // 1. Capture one real native event stream (and warm the JIT on the apply path).
  const captured: Buffer[] = [];
  const cap = fill(jobs, true, captured);
  cap.engine.refresh();
  const topologyFrom = cap.engine.model;
  await cap.telemetry?.shutdown();
  await cap.engine.close();
  for (let i = 0; i < 3; i++) for (const arm of ['model', 'histograms', 'exporter'] as const) replay(captured, arm, topologyFrom);

  const e2eModel: number[] = [];
  const e2e: number[] = [];
  const e2eNs: number[] = [];
  const events: number[] = [];
  const batches: number[] = [];
  const modelOnly: number[] = [];
  const withHist: number[] = [];
  const histNoEx: number[] = [];
  for (let r = 0; r < runs; r++) {
    const a = await armProcess('model', jobs);
    const b = await armProcess('exporter', jobs);
    e2eModel.push(a.rate);
    e2e.push(b.rate);
    e2eNs.push(a.ns / a.n);
    events.push(a.n);
    batches.push(a.batches);
    // A replay is ~5 ms: each run's figure per arm is the median of REPLAYS_PER_RUN, interleaved.
    const per: Record<ReplayArm, number[]> = { model: [], histograms: [], exporter: [] };
    for (let k = 0; k < REPLAYS_PER_RUN; k++) for (const arm of ['model', 'histograms', 'exporter'] as const) per[arm].push(replay(captured, arm, topologyFrom));
    modelOnly.push(median(per.model));
    histNoEx.push(median(per.histograms));
    withHist.push(median(per.exporter));
    log(
      `ingest run ${r + 1}/${runs}: ${a.n} events per fill (${a.fillMs.toFixed(0)} ms to fill); refresh ${(a.rate / 1e6).toFixed(2)} M events/s model only, ` +
        `${(b.rate / 1e6).toFixed(2)} with histograms; replay ${(modelOnly[r] / 1e6).toFixed(2)} / ${(histNoEx[r] / 1e6).toFixed(2)} (no exemplars) / ${(withHist[r] / 1e6).toFixed(2)} M events/s`,
    );
  }
  const nativeRuns = opts.nativeRuns ?? 1;
  const emit = nativeRuns > 0 ? nativeEmit(nativeRuns, log) : { available: false, command: 'make -C native bench', missing: 'skipped (--native-runs 0)' };
  return {
    method:
      `Sim-backend engine (2 GPUs x 2 workers, time_scale 1e-6), ${jobs} mixed-kind proofs per fill; the JS thread is held off with Atomics.wait while the ring fills, ` +
      `then one NativeEngine.refresh() is timed (FFI drain in batches of ${BATCH_EVENTS} + DataView decode + StateModel apply), without and with the exporter attached (its typed-array histograms and exemplars record when partitions/proofs finish), alternating, each arm's run in a child process of its own (the median of 3 timed fills after 5 untimed ones: JIT warm-up for that configuration only), after a full GC in both arms. ` +
      'Replay: the captured native records applied to fresh StateModels without FFI: alone, with the model\'s histograms recording (no exemplars), with the exporter attached. Native emit: `make -C native bench` (best of 3 rounds x 20 M event_emit calls per run).',
    runs,
    eventsPerFill: figure('events', events, 6),
    batchesPerFill: figure('batches', batches, 4),
    endToEnd: figure('events/s', e2eModel, 3),
    endToEndWithHistograms: figure('events/s', e2e, 3),
    endToEndNsPerEvent: figure('ns/event', e2eNs, 3),
    replayModelOnly: figure('events/s', modelOnly, 3),
    replayWithHistograms: figure('events/s', withHist, 3),
    replayHistogramsNoExemplars: figure('events/s', histNoEx, 3),
    nativeEmit: emit,
    timedFillsPerRun: TIMED_FILLS,
    warmFillsPerRun: WARM_FILLS,
  };
}
