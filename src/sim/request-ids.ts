/**
 * Request ids as Curio makes them (curio e0294b0f), for simulate's workload:
 *  - lib/ffi/cuzk_funcs.go: `porep-%d-%d` (miner, sector), `snap-%d-%d` (miner, sector),
 *    `wdpost-%d-%d-%d` (miner, partitionIdx, randomness[:8] — Go's %d of a []byte prints
 *    `[1 2 3 4 5 6 7 8]`), `winpost-%d-%x` (miner, randomness[:8] in hex);
 *  - tasks/proofshare/task_prove.go: `ps-porep-%d-%d-%d`, `ps-snap-%d-%d-%d` (miner, sector, task).
 * Deterministic: a retried task re-uses its id (Curio's are). `opaque` ids (uuid-like, no kind
 * in them) exercise the other evidence an observer has.
 */
import { seededRandom } from './timeline-writer';

export type IdStyle = 'curio' | 'opaque';

export interface GeneratedRequest {
  id: string;
  kind: number;
  partitionIndex: number;
  sectorNumber: number;
  minerId: number;
}

export class RequestIdGenerator {
  private readonly rand: () => number;
  private sector = 1;
  private task = 1000;

  constructor(
    private readonly style: IdStyle,
    seed: number,
    private readonly minerId = 1000,
  ) {
    this.rand = seededRandom(seed ^ 0x5eed);
  }

  private bytes8(): number[] {
    return Array.from({ length: 8 }, () => Math.floor(this.rand() * 256));
  }

  private uuid(): string {
    const h = Array.from({ length: 16 }, () => Math.floor(this.rand() * 256).toString(16).padStart(2, '0')).join('');
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20, 32)}`;
  }

  next(kind: number): GeneratedRequest {
    const miner = this.minerId;
    const sector = this.sector++;
    // WindowPoSt partitions spread over 0..9 (a deadline's partitions).
    const partitionIndex = kind === 2 ? Math.floor(this.rand() * 10) : 0;
    const proofshare = this.rand() < 0.3;
    let id: string;
    if (this.style === 'opaque') id = this.uuid();
    else if (kind === 0) id = proofshare ? `ps-porep-${miner}-${sector}-${this.task++}` : `porep-${miner}-${sector}`;
    else if (kind === 1) id = proofshare ? `ps-snap-${miner}-${sector}-${this.task++}` : `snap-${miner}-${sector}`;
    else if (kind === 2) id = `wdpost-${miner}-${partitionIndex}-[${this.bytes8().join(' ')}]`;
    else id = `winpost-${miner}-${Buffer.from(this.bytes8()).toString('hex')}`;
    return { id, kind, partitionIndex, sectorNumber: sector, minerId: miner };
  }
}
