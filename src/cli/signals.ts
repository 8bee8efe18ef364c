/**
 * Process signals for the long-running commands (run, attach, prove), installed as early
 * as the command is known — before the engine opens or the server listens — so a SIGTERM
 * during startup is as orderly as one later (the command starts, sees it, and stops):
 *
 *   1st SIGINT/SIGTERM  orderly shutdown (proofs in flight get --shutdown.grace)
 *   2nd                 hurry: stop waiting for proofs (they are cancelled), still close
 *                       the engine and server cleanly (exit 0)
 *   3rd                 exit at once, 128 + signal number (a stuck shutdown can always be ended)
 *   SIGHUP              reload the web config (--web.config.file); never exits
 *
 * The same signal again within REPEAT_MS counts once: under `npm start` (which execs node,
 * so npm's child is the exporter) a Ctrl-C reaches us twice, from the terminal (the whole
 * foreground process group) and forwarded by npm, as does a SIGTERM sent to the process
 * group (systemd's default KillMode); that is one request to stop, not a hurry.
 *
 * Small on purpose (no imports beyond the logger type): main.ts loads it before anything heavy.
 */
import type { Logger } from '../util/logger';

const SIGNO: Record<string, number> = { SIGINT: 2, SIGTERM: 15 };

/** A repeat of the same signal within this many ms is the same request delivered twice. */
export const REPEAT_MS = 300;

interface State {
  log: Logger;
  count: number;
  first: Promise<string>;
  resolveFirst(sig: string): void;
  again: (() => void)[];
  reload: (() => void)[];
}

let state: State | null = null;

/** Installs the handlers (once per process; later calls only swap the logger). */
export function installSignalHandlers(log: Logger): void {
  if (state) {
    state.log = log;
    return;
  }
  let resolveFirst!: (sig: string) => void;
  const first = new Promise<string>((r) => (resolveFirst = r));
  const s: State = { log, count: 0, first, resolveFirst, again: [], reload: [] };
  state = s;
  let last: { sig: string; at: number } | null = null;
  const onSignal = (sig: NodeJS.Signals) => {
    const now = performance.now();
    if (last && last.sig === sig && now - last.at < REPEAT_MS) {
      s.log.debug('same signal again at once: counted once (delivered twice, e.g. by the terminal and by npm)', { signal: sig });
      return;
    }
    last = { sig, at: now };
    s.count++;
    if (s.count === 1) {
      s.resolveFirst(sig);
      return;
    }
    if (s.count === 2) {
      s.log.warn('second signal: no longer waiting for proofs in flight (they are cancelled); a third signal exits at once', { signal: sig });
      for (const f of s.again.splice(0)) {
        try {
          f();
        } catch (e) {
          s.log.error('shutdown step failed', { err: (e as Error).message });
        }
      }
      return;
    }
    s.log.error('third signal: exiting now, without closing', { signal: sig });
    process.exit(128 + (SIGNO[sig] ?? 15));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  log.debug('signal handlers installed', { signals: 'SIGINT,SIGTERM,SIGHUP' });
  process.on('SIGHUP', () => {
    if (s.reload.length === 0) {
      s.log.info('SIGHUP: nothing to reload (no --web.config.file, or the server is not up yet)');
      return;
    }
    for (const f of s.reload) {
      try {
        f();
      } catch (e) {
        s.log.error('reload failed', { err: (e as Error).message });
      }
    }
  });
}

/** Resolves on the first SIGINT/SIGTERM (at once if one came already). */
export function untilSignal(log: Logger): Promise<string> {
  installSignalHandlers(log);
  return state!.first;
}

/** Runs `f` on the second SIGINT/SIGTERM (at once, if it came already). */
export function onSecondSignal(f: () => void): void {
  if (!state) return;
  if (state.count >= 2) f();
  else state.again.push(f);
}

/** Runs `f` on every SIGHUP; returns a function that stops that. */
export function onReloadSignal(f: () => void): () => void {
  if (!state) return () => {};
  const list = state.reload;
  list.push(f);
  return () => {
    const i = list.indexOf(f);
    if (i >= 0) list.splice(i, 1);
  };
}
