/**
 * A memory budget too small to hold one partition's witness can never run that proof kind:
 * every submit is refused, while the engine itself is fine (so /-/ready would say ready).
 * That is a configuration error, found before anything starts (and by --config.check).
 *
 * The arithmetic is the engine's (native/README.md, memory_budget_bytes and sizes): one
 * partition at 2^k constraints reserves 3 · 2^k · 8 bytes of witness when its synthesis
 * starts. test/hostile/config-types.test.ts checks it against the engine at the boundary.
 */
import type { EngineConfig } from '../engine/sources/native/native-engine';
import { PROOF_KINDS } from '../engine/model/kinds';
import { parseMix } from '../engine/sources/native/workload';
import type { Resolved } from './options';
import { UsageError } from './options';

/** native/README.md: defaults of `sizes` and `memory_budget_bytes`. */
export const NATIVE_DEFAULT_SIZES: Record<string, number> = { 'porep-c2': 16, 'snap-update': 15, 'window-post': 16, 'winning-post': 15 };
export const NATIVE_DEFAULT_BUDGET = 1024 * 1024 * 1024;

export const witnessBytes = (log2n: number): number => 3 * 2 ** log2n * 8;

/** The proof kinds a command will submit: the workload mix (run), --kind (prove), else all. */
export function kindsToRun(o: Resolved): string[] {
  if (typeof o['workload.mix'] === 'string') {
    try {
      return Object.keys(parseMix(o['workload.mix'] as string));
    } catch {
      return []; // reported by the command itself
    }
  }
  if (typeof o.kind === 'string') return [o.kind];
  return [...PROOF_KINDS];
}

/** Throws a UsageError when the budget cannot hold one partition of a kind that will run. */
export function checkMemoryBudget(cfg: EngineConfig, kinds: string[]): void {
  const budget = typeof cfg.memory_budget_bytes === 'number' ? cfg.memory_budget_bytes : NATIVE_DEFAULT_BUDGET;
  const sizes = { ...NATIVE_DEFAULT_SIZES, ...((cfg.sizes as Record<string, unknown> | undefined) ?? {}) } as Record<string, unknown>;
  for (const kind of kinds) {
    const k = sizes[kind];
    if (typeof k !== 'number' || !Number.isInteger(k) || k < 1 || k > 22) continue; // the engine reports bad sizes itself
    const need = witnessBytes(k);
    if (need > budget) {
      throw new UsageError(
        `engine: memory_budget_bytes ${budget} cannot hold one ${kind} partition (2^${k} constraints need ${need} bytes of witness): no ${kind} proof could ever run; raise memory_budget_bytes to at least ${need} or lower sizes.${kind}`,
      );
    }
  }
}
