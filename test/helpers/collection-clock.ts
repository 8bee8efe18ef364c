/**
 * The engine's own clock at each collection. In run mode every collection reads the
 * engine's counters once (NativeEngine.runningTotals), and every time counter and running
 * gauge of that scrape is exact at that read's timestamp. A test that wants "the time
 * between two scrapes" must use these timestamps, not a clock read before the request (the
 * request can wait behind anything on a loaded machine).
 */
import type { NativeEngine } from '../../src/engine/sources/native/native-engine';

export interface CollectionClock {
  /** Engine clock (ns) of every counter read so far, in order. */
  readonly reads: number[];
  /** The latest one; throws if there was none. */
  last(): number;
}

export function recordCollections(engine: NativeEngine): CollectionClock {
  const reads: number[] = [];
  const read = engine.runningTotals.bind(engine);
  engine.runningTotals = () => {
    const t = read();
    if (t) reads.push(t.nowNs);
    return t;
  };
  return {
    reads,
    last() {
      if (reads.length === 0) throw new Error('no collection has read the engine counters yet');
      return reads[reads.length - 1];
    },
  };
}
