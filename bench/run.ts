import type { Resolved } from '../src/cli/options';
import type { Logger } from '../src/util/logger';

// Replaced by the benchmark suite (issue #7).
export async function benchCommand(_o: Resolved, _log: Logger): Promise<number> {
  throw new Error('benchmarks are not available in this build yet');
}
