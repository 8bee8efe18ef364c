/**
 * Simulated fleets (issue 22): `simulate --simulate.boxes N` or `--simulate.fleet-file FILE` runs
 * several cuzk boxes in one process, each its own engine, SimCore, surfaces and truth endpoint,
 * so 20+ provers fit on a small machine (sim backend). `--simulate.addresses-file FILE` gets the
 * JSON list of every box's addresses (what a multi-target exporter is given):
 *   [{"name":"box-0","grpc":"127.0.0.1:40123","status":"http://127.0.0.1:40124/status",
 *     "truth":"http://127.0.0.1:40125/truth","timeline":"/tmp/fleet/box-0.log"}, …]
 *
 * Per box (from the flags, then the fleet file's entry): gRPC on the flag's host with port 0
 * (a unix socket path gets `.<name>` appended), /status likewise ("" keeps it off), truth on
 * port 0 when --simulate.truth-listen is set, TIMELINE in `<timeline-file>.<name>` (a file is
 * required: boxes must not share one stream), truth file `<truth-file>.<name>`, seed + index,
 * Curio miner id 1000 + index. Fleet file (YAML), every key optional except `boxes`:
 *   boxes:
 *     - name: gpu-01            # [A-Za-z0-9_.-]{1,64}, unique
 *       gpus: 2                 # engine.gpus
 *       workers_per_gpu: 2
 *       time_scale: 0.01
 *       faults: { status_bug_kind: snap-update }   # engine faults, as --engine.config
 *       mix: snap-update=3,window-post=1
 *       concurrency: 2
 *       surfaces: [grpc, status, timeline]        # which surfaces this box serves
 *       split_prove: true
 *       pipeline: true
 * Bounds: at most MAX_BOXES boxes; a bad file is one UsageError line naming the entry and key.
 */
import * as fs from 'node:fs';
import YAML from 'yaml';
import { MAX_NESTING, yamlNestingDepth } from '../util/yaml-depth';
import { parseMix } from '../engine/sources/native/workload';
import type { Logger } from '../util/logger';
import type { Resolved } from '../cli/options';
import { UsageError } from '../cli/options';
import { untilSignal } from '../cli/signals';
import { BoxConfig, RunningBox, startBox, EngineOpenError } from './box';
import { parseGrpcAddress } from './grpc-server';

export const MAX_BOXES = 256;

const NAME = /^[A-Za-z0-9_.-]{1,64}$/;
type Entry = Record<string, unknown>;
const KEYS = new Set(['name', 'gpus', 'workers_per_gpu', 'time_scale', 'faults', 'mix', 'concurrency', 'surfaces', 'split_prove', 'pipeline']);

function readFleetFile(file: string): Entry[] {
  let doc: unknown;
  try {
    const text = fs.readFileSync(file, 'utf8');
    if (text.length > 1024 * 1024) throw new Error('larger than 1 MiB');
    if (yamlNestingDepth(text) > MAX_NESTING) throw new Error(`nested too deeply (more than ${MAX_NESTING} levels)`);
    doc = YAML.parse(text, { uniqueKeys: true, maxAliasCount: 100 });
  } catch (e) {
    throw new UsageError(`--simulate.fleet-file ${file}: ${(e as Error).message.split('\n')[0]}`);
  }
  const boxes = (doc as { boxes?: unknown } | null)?.boxes;
  if (!Array.isArray(boxes) || boxes.length === 0) throw new UsageError(`--simulate.fleet-file ${file}: needs a non-empty "boxes" list`);
  if (boxes.length > MAX_BOXES) throw new UsageError(`--simulate.fleet-file ${file}: ${boxes.length} boxes, at most ${MAX_BOXES}`);
  return boxes.map((b, i) => {
    if (typeof b !== 'object' || b === null || Array.isArray(b)) throw new UsageError(`--simulate.fleet-file ${file}: boxes[${i}] is not a mapping`);
    for (const k of Object.keys(b)) if (!KEYS.has(k)) throw new UsageError(`--simulate.fleet-file ${file}: boxes[${i}]: unknown key "${k}" (expected ${[...KEYS].join(', ')})`);
    return b as Entry;
  });
}

const withPort0 = (addr: { host?: string; port: number } | null) => (addr ? { host: addr.host, port: 0 } : null);

/** The boxes the flags describe, or null for a single box (no fleet flag). */
export function fleetConfigs(o: Resolved, single: (o: Resolved) => BoxConfig): BoxConfig[] | null {
  const n = o['simulate.boxes'] as number;
  const file = o['simulate.fleet-file'] as string | undefined;
  if (n <= 1 && !file) return null;
  const base = single(o);
  if (base.timelineFile === '-') throw new UsageError('--simulate.boxes/--simulate.fleet-file: boxes cannot share standard error: give --simulate.timeline-file a path (each box gets <path>.<name>) or "" for none');
  const entries: Entry[] = file ? readFleetFile(file) : Array.from({ length: n }, (_, i) => ({ name: `box-${i}` }));
  if (entries.length > MAX_BOXES) throw new UsageError(`--simulate.boxes ${entries.length}: at most ${MAX_BOXES}`);
  const names = new Set<string>();
  const grpc = parseGrpcAddress(base.grpcListen);
  return entries.map((e, i) => {
    const where = `${file ? `--simulate.fleet-file ${file}: boxes[${i}]` : `box ${i}`}`;
    const name = e.name === undefined ? `box-${i}` : String(e.name);
    if (!NAME.test(name)) throw new UsageError(`${where}: name "${name}" must be 1-64 of A-Z a-z 0-9 _ . -`);
    if (names.has(name)) throw new UsageError(`${where}: name "${name}" is used twice`);
    names.add(name);
    const num = (k: string, lo: number, hi: number, int: boolean): number | undefined => {
      const v = e[k];
      if (v === undefined) return undefined;
      if (typeof v !== 'number' || !Number.isFinite(v) || v < lo || v > hi || (int && !Number.isInteger(v))) throw new UsageError(`${where}: ${k} must be ${int ? 'a whole number' : 'a number'} in ${lo}..${hi}`);
      return v;
    };
    const bool = (k: string): boolean | undefined => {
      const v = e[k];
      if (v === undefined) return undefined;
      if (typeof v !== 'boolean') throw new UsageError(`${where}: ${k} must be true or false`);
      return v;
    };
    const surfaces = e.surfaces === undefined ? ['grpc', 'status', 'timeline'] : e.surfaces;
    if (!Array.isArray(surfaces) || surfaces.some((s) => !['grpc', 'status', 'timeline'].includes(String(s)))) throw new UsageError(`${where}: surfaces must be a list of grpc, status, timeline`);
    const engine = { ...base.engine };
    const g = num('gpus', 1, 64, true);
    if (g !== undefined) engine.gpus = g;
    const w = num('workers_per_gpu', 1, 8, true);
    if (w !== undefined) engine.workers_per_gpu = w;
    const ts = num('time_scale', 0.0001, 1000, false);
    if (ts !== undefined) engine.time_scale = ts;
    if (e.faults !== undefined) {
      if (typeof e.faults !== 'object' || e.faults === null || Array.isArray(e.faults)) throw new UsageError(`${where}: faults must be a mapping (engine faults.* keys)`);
      engine.faults = { ...((engine.faults as object | undefined) ?? {}), ...(e.faults as object) };
    }
    const split = bool('split_prove');
    const pipeline = bool('pipeline');
    if (split !== undefined) engine.split_proving = split;
    if (pipeline === false) engine.workers_per_gpu = 1;
    let mix = base.workload.mix;
    if (e.mix !== undefined) {
      try {
        mix = parseMix(String(e.mix));
      } catch (err) {
        throw new UsageError(`${where}: mix: ${(err as Error).message}`);
      }
    }
    const conc = num('concurrency', 0, 10000, true);
    const faults = engine.faults as Record<string, unknown> | undefined;
    const bugKind = typeof faults?.status_bug_kind === 'string' ? ['porep-c2', 'snap-update', 'window-post', 'winning-post'].indexOf(faults.status_bug_kind) : -1;
    return {
      ...base,
      name,
      engine,
      core: {
        ...base.core,
        splitProve: split ?? base.core.splitProve,
        pipeline: pipeline ?? base.core.pipeline,
        statusBug: bugKind >= 0 ? { kind: bugKind, mode: faults?.status_bug_mode === 'skip' ? 'skip' : 'clobber' } : base.core.statusBug,
      },
      timelineFile: surfaces.includes('timeline') && base.timelineFile !== '' ? `${base.timelineFile}.${name}` : '',
      timeline: { ...base.timeline, seed: base.timeline.seed + i },
      grpcListen: 'unixPath' in grpc ? `unix://${grpc.unixPath}.${name}` : `${grpc.host.includes(':') ? `[${grpc.host}]` : grpc.host}:0`,
      grpcOff: !surfaces.includes('grpc'),
      statusListen: surfaces.includes('status') ? withPort0(base.statusListen) : null,
      truthListen: withPort0(base.truthListen),
      truthFile: base.truthFile ? `${base.truthFile}.${name}` : undefined,
      workload: { ...base.workload, mix, concurrency: conc ?? base.workload.concurrency, seed: base.workload.seed + i, minerId: 1000 + i },
    };
  });
}

export interface BoxAddresses {
  name: string;
  grpc: string | null;
  status: string | null;
  truth: string | null;
  timeline: string | null;
}

export function addressesOf(b: RunningBox, cfg: BoxConfig): BoxAddresses {
  return {
    name: b.name,
    grpc: cfg.grpcOff ? null : b.grpcAddress,
    status: b.statusUrl,
    truth: b.truthUrl,
    timeline: cfg.timelineFile === '' ? null : cfg.timelineFile,
  };
}

/** Starts every box (all or none), writes the addresses file, serves until a signal. */
export async function runFleet(configs: BoxConfig[], o: Resolved, log: Logger): Promise<number> {
  const boxes: RunningBox[] = [];
  const stopAll = (graceMs: number) => Promise.all(boxes.map((b) => b.stop(graceMs)));
  try {
    for (const cfg of configs) boxes.push(await startBox(cfg, log));
  } catch (e) {
    await stopAll(0);
    if (e instanceof EngineOpenError) throw new UsageError(`engine: ${e.message}`);
    throw new Error(`simulate: ${(e as Error).message}`);
  }
  const addrs = boxes.map((b, i) => addressesOf(b, configs[i]));
  const file = o['simulate.addresses-file'] as string | undefined;
  if (file) {
    const tmp = `${file}.tmp-${process.pid}`;
    fs.writeFileSync(tmp, JSON.stringify(addrs, null, 1) + '\n');
    fs.renameSync(tmp, file);
  }
  process.stdout.write(
    `cuzk-exporter simulate: a fleet of ${boxes.length} cuzk boxes as upstream's code behaves (reference prover)\n` +
      addrs.map((a) => `  ${a.name}: grpc ${a.grpc ?? 'off'}  status ${a.status ?? 'off'}  timeline ${a.timeline ?? 'off'}  truth ${a.truth ?? 'off'}\n`).join('') +
      (file ? `  addresses: ${file}\n` : '') +
      'Press Ctrl-C to stop.\n',
  );
  const sig = await untilSignal(log);
  log.info('shutting down', { signal: sig, boxes: boxes.length });
  await stopAll((o['shutdown.grace'] as number) * 1000);
  return 0;
}
