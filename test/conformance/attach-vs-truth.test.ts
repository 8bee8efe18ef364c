/**
 * Upstream conformance: every row of docs/upstream-conformance.md that runs as a whole
 * (rows.ts) — `simulate` behaving as upstream cuzk's code does — with an attach exporter on
 * each surface combination (t, g, s, tg, ts, gs, tgs), attached before the workload, compared
 * with the ground truth's `upstream` block by rules.ts. First the row must really have
 * happened (its upstream paths in the truth); then every check of every combination.
 * CONFORMANCE_ROWS=id,id runs some rows only.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { runRow } from './harness';
import { ROWS } from './rows';
import { compareRow } from './rules';

const only = (process.env.CONFORMANCE_ROWS ?? '').split(',').filter(Boolean);
const rows = only.length ? ROWS.filter((r) => only.includes(r.id)) : ROWS;

describe.each(rows.map((r) => [r.id, r] as const))('row %s', (_id, row) => {
  test('simulate takes the row\'s upstream paths; attach agrees with truth.upstream on every surface combination', async () => {
    const run = await runRow(row);
    try {
      const paths = run.truth.upstream.paths as Record<string, number>;
      for (const [p, n] of Object.entries(row.paths ?? {})) expect([p, paths[p] >= n]).toEqual([p, true]);
      const failures = await compareRow(run);
      if (failures.length) {
        console.log(`conformance ${row.id}:\n  ${failures.join('\n  ')}`);
        // The daemon's log, kept for the post-mortem (the run's folder goes on close).
        const dir = path.join(__dirname, '..', '.artifacts', 'conformance');
        fs.mkdirSync(dir, { recursive: true });
        fs.copyFileSync(run.timelineFile, path.join(dir, `${row.id}-${process.pid}.log`));
      }
      expect(failures).toEqual([]);
    } finally {
      await run.close();
    }
  }, 300_000);
});
