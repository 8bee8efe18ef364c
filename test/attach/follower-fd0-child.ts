/**
 * Child of follower-fd0.test.ts: runs in a process of its own whose descriptor 0 is closed
 * first (an exporter started with standard input closed), so the followed log is opened as
 * descriptor 0. Prints one JSON line: what the sink got at each step, and where descriptor 0
 * pointed. Loaded through a TypeScript require hook (transpile only), so it runs the source.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { LogFollower } from '../../src/engine/sources/attach/timeline-follower';
import { RecordingSink } from './follower-sink';

const fd0 = (): string => {
  try {
    return fs.readlinkSync('/proc/self/fd/0');
  } catch {
    return 'closed';
  }
};

async function main(): Promise<void> {
  const dir = process.argv[2];
  const file = path.join(dir, 'cuzk.log');
  fs.writeFileSync(file, 'old-1\n');
  fs.closeSync(0);
  const sink = new RecordingSink();
  const f = new LogFollower({ path: file, pollMs: 1_000_000, maxLineBytes: 1024, catchUpBytes: 1024 * 1024 }, sink);
  const out: Record<string, unknown> = {};
  await f.tick(); // present at start: caught up as history
  out.fdAfterOpen = fd0();
  out.history = [...sink.history];
  fs.appendFileSync(file, 'live-1\n');
  await f.tick();
  await f.tick(); // a look with nothing new
  fs.appendFileSync(file, 'live-2\n');
  await f.tick();
  out.liveBeforeRotation = [...sink.live];
  // Rotated by rename: the old file gets one more line, then the new one starts.
  fs.appendFileSync(file, 'old-last\n');
  fs.renameSync(file, `${file}.1`);
  fs.writeFileSync(file, 'new-1\n');
  await f.tick();
  await f.tick();
  out.liveAfterRotation = [...sink.live];
  out.newFileAt = [...sink.newFileAt];
  out.fdBeforeStop = fd0();
  await f.stop();
  out.fdAfterStop = fd0();
  out.file = file;
  process.stdout.write(`${JSON.stringify(out)}\n`);
}

main().catch((e) => {
  process.stderr.write(`${(e as Error).stack}\n`);
  process.exitCode = 1;
});
