/**
 * Builds the native engine's JSON config from flags (and --engine.config, which flags
 * override). Keys are those of native/README.md.
 */
import { EngineConfig, NativeEngine } from '../engine/sources/native/native-engine';
import { parseStrictJson } from '../util/strict-json';
import { checkMemoryBudget, kindsToRun } from './budget-check';
import { FileRefused, readRegularFile } from '../util/regular-file';
import { isExplicit, MAX_CONFIG_BYTES, Resolved, UsageError } from './options';

export function engineConfigFrom(o: Resolved): EngineConfig {
  let base: EngineConfig = {};
  const file = o['engine.config'] as string | undefined;
  if (file) {
    let text: string;
    try {
      text = readRegularFile(file, MAX_CONFIG_BYTES).toString('utf8');
    } catch (e) {
      if (e instanceof FileRefused) throw new UsageError(`--engine.config ${file}: ${e.message}`);
      throw new UsageError(`--engine.config ${file}: cannot read (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
    }
    try {
      // Duplicate keys are errors (native/README.md), as is deep nesting (strict-json.ts).
      base = parseStrictJson(text) as EngineConfig;
    } catch (e) {
      throw new UsageError(`--engine.config ${file}: not valid JSON: ${(e as Error).message}`);
    }
    if (typeof base !== 'object' || base === null || Array.isArray(base)) throw new UsageError(`--engine.config ${file}: must be a JSON object`);
  }
  // A flag overrides the file only when given; a flag's default does not.
  const cfg: EngineConfig = { ...base };
  const flag = (name: string, key: string) => {
    if (isExplicit(o, name) || !(key in base)) cfg[key] = o[name];
  };
  flag('engine.backend', 'backend');
  flag('engine.gpus', 'gpus');
  flag('engine.workers-per-gpu', 'workers_per_gpu');
  flag('engine.synthesis-concurrency', 'synthesis_concurrency');
  if (cfg.backend === 'sim') flag('engine.time-scale', 'time_scale');
  flag('engine.split-proving', 'split_proving');
  const faults: Record<string, unknown> = { ...((base.faults as Record<string, unknown> | undefined) ?? {}) };
  if (o['fault.status-bug-kind'] !== undefined) faults.status_bug_kind = o['fault.status-bug-kind'];
  if (o['fault.status-bug-mode'] !== undefined) faults.status_bug_mode = o['fault.status-bug-mode'];
  if (o['fault.fail-partition-nth'] !== undefined) faults.fail_partition_nth = o['fault.fail-partition-nth'];
  if (o['fault.fail-partition-rate'] !== undefined) faults.fail_partition_rate = o['fault.fail-partition-rate'];
  if (o['fault.corrupt-proof-nth'] !== undefined) faults.corrupt_proof_nth = o['fault.corrupt-proof-nth'];
  if (Object.keys(faults).length > 0) cfg.faults = faults;
  return cfg;
}

/**
 * Opens the engine the flags describe (a bad config is a UsageError: one line, exit 2).
 * With --config.check the engine is only opened to validate it: closed again, "OK"
 * printed, and null returned.
 */
export async function openEngine(o: Resolved): Promise<{ engine: NativeEngine; config: EngineConfig } | null> {
  const config = engineConfigFrom(o);
  checkMemoryBudget(config, kindsToRun(o));
  let engine: NativeEngine;
  try {
    engine = NativeEngine.open(config, o['engine.library'] as string | undefined);
  } catch (e) {
    throw new UsageError(`engine: ${(e as Error).message}`);
  }
  if (!o['config.check']) return { engine, config };
  await engine.close();
  process.stdout.write('configuration OK\n');
  return null;
}
