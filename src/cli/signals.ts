/**
 * Process signals for the long-running commands (run, attach, prove, simulate, fleet). Armed by
 * main.ts before anything else loads, so from the moment our code runs a signal is caught,
 * never Node's default kill; what it does depends on what the process has become:
 *
 *   before the command is known   remembered (the command, once known, acts on it)
 *   1st SIGINT/SIGTERM            orderly shutdown (proofs in flight get --shutdown.grace)
 *   2nd                           hurry: stop waiting for proofs (they are cancelled), still
 *                                 close the engine and server cleanly (exit 0)
 *   3rd                           exit at once, 128 + signal number (a stuck shutdown can
 *                                 always be ended)
 *   SIGHUP                        reload the web config (--web.config.file); never exits
 *   short commands (dashboards, bench, --help): exit at once with 128 + signal number.
 *
 * Signals less than REPEAT_WINDOW_MS after the last one that counted are the same request:
 * a burst (a supervisor's kill loop, Ctrl-C delivered to both `npm start` and us) is one
 * orderly shutdown, not an escalation to "exit at once". Under `npm start` (which execs node,
 * so npm's child is the exporter) a Ctrl-C reaches us twice, from the terminal (the whole
 * foreground process group) and forwarded by npm, as does a SIGTERM sent to the process group
 * (systemd's default KillMode).
 *
 * And never a death by the signal while exiting: when the event loop has drained, Node's
 * teardown would put the default action back before the process is gone, so a signal in
 * that last moment killed it; exitWhenDrained ends the process from the 'exit' event instead.
 *
 * Small on purpose (no imports beyond the logger type): main.ts loads it before anything heavy.
 */
import type { Logger } from '../util/logger';

const SIGNO: Record<string, number> = { SIGINT: 2, SIGTERM: 15 };
/** Signals closer than this to the last one counted are one request (see above). */
export const REPEAT_WINDOW_MS = 1000;

interface State {
  log: Logger | null;
  /** pending: command not known yet; orderly: a long-running command; immediate: a short one. */
  mode: 'pending' | 'orderly' | 'immediate';
  count: number;
  /** performance.now() of the last signal that counted. */
  lastCounted: number;
  lastSignal: NodeJS.Signals | null;
  first: Promise<string>;
  resolveFirst(sig: string): void;
  again: (() => void)[];
  reload: (() => void)[];
}

let state: State | null = null;

function exitAtOnce(sig: NodeJS.Signals): never {
  process.exit(128 + (SIGNO[sig] ?? 15));
}

/** Catches SIGINT, SIGTERM and SIGHUP from now on (once per process; main.ts calls it first). */
export function armSignals(): void {
  if (state) return;
  let resolveFirst!: (sig: string) => void;
  const first = new Promise<string>((r) => (resolveFirst = r));
  const s: State = { log: null, mode: 'pending', count: 0, lastCounted: 0, lastSignal: null, first, resolveFirst, again: [], reload: [] };
  state = s;
  const onSignal = (sig: NodeJS.Signals) => {
    const now = performance.now();
    if (s.count > 0 && now - s.lastCounted < REPEAT_WINDOW_MS) return; // the same request
    s.count++;
    s.lastCounted = now;
    s.lastSignal = sig;
    if (s.mode === 'immediate') exitAtOnce(sig);
    if (s.count === 1) {
      s.resolveFirst(sig);
      return;
    }
    if (s.count === 2) {
      s.log?.warn('second signal: no longer waiting for proofs in flight (they are cancelled); a third signal exits at once', { signal: sig });
      for (const f of s.again.splice(0)) {
        try {
          f();
        } catch (e) {
          s.log?.error('shutdown step failed', { err: (e as Error).message });
        }
      }
      return;
    }
    s.log?.error('third signal: exiting now, without closing', { signal: sig });
    exitAtOnce(sig);
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  process.on('SIGHUP', () => {
    if (s.reload.length === 0) {
      s.log?.info('SIGHUP: nothing to reload (no --web.config.file, or the server is not up yet)');
      return;
    }
    for (const f of s.reload) {
      try {
        f();
      } catch (e) {
        s.log?.error('reload failed', { err: (e as Error).message });
      }
    }
  });
}

/** A long-running command: signals shut it down in order (arms them if main.ts did not). */
export function installSignalHandlers(log: Logger): void {
  armSignals();
  const s = state!;
  const was = s.log;
  s.log = log;
  if (s.mode === 'orderly' && was) return;
  s.mode = 'orderly';
  log.debug('signal handlers installed', { signals: 'SIGINT,SIGTERM,SIGHUP' });
}

/** A short command (nothing to shut down): a signal ends it at once, 128 + signal number. */
export function endAtOnceOnSignal(): void {
  if (!state) return;
  state.mode = 'immediate';
  if (state.count > 0 && state.lastSignal) exitAtOnce(state.lastSignal);
}

/**
 * The command is done and the event loop is left to drain (that nothing keeps running is
 * part of a clean stop). When it has, end the process from the 'exit' event: Node's own
 * teardown after it would restore the default signal actions while the process still
 * exists, and a signal in that moment would kill it instead of exit `code`.
 */
export function exitWhenDrained(code: number): void {
  process.exitCode = code;
  process.once('exit', (c) => process.exit(c));
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
