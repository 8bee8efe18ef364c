/**
 * What `run` and `simulate` do first, alike: --workload.mix checked, the reference engine
 * opened (engine-config.ts), and a warning when fault injection is on.
 */
import type { NativeEngine } from '../engine/sources/native/native-engine';
import { Mix, parseMix } from '../engine/sources/native/workload';
import type { Logger } from '../util/logger';
import { openEngine } from './engine-config';
import { Resolved, UsageError } from './options';

/**
 * The workload mix and the open engine; null under --config.check (nothing opened).
 * `faultWarning` is logged (with the faults) when fault injection is on.
 */
export async function openWorkloadEngine(o: Resolved, log: Logger, faultWarning: string): Promise<{ mix: Mix; engine: NativeEngine } | null> {
  let mix: Mix;
  try {
    mix = parseMix(o['workload.mix'] as string);
  } catch (e) {
    throw new UsageError(`--workload.mix: ${(e as Error).message}`);
  }
  const opened = await openEngine(o);
  if (!opened) return null;
  const { engine, config } = opened;
  if (config.faults) log.warn(faultWarning, { faults: JSON.stringify(config.faults) });
  return { mix, engine };
}
