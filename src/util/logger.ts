/**
 * A small structured logger in the exporter-toolkit style: `--log.level` and
 * `--log.format` (logfmt or json), one line per record on stderr.
 */
export const LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];
export const LOG_FORMATS = ['logfmt', 'json'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

export type Fields = Record<string, string | number | boolean | null | undefined>;

export interface Logger {
  debug(msg: string, fields?: Fields): void;
  info(msg: string, fields?: Fields): void;
  warn(msg: string, fields?: Fields): void;
  error(msg: string, fields?: Fields): void;
}

function logfmtValue(v: string): string {
  return /^[^\s"=\\]+$/.test(v) ? v : JSON.stringify(v);
}

/**
 * Marks a stream as guarded. On the stream, not in this module: the streams are the
 * process's, while this module can be loaded more than once in a process (jest loads it
 * afresh for every test file of a worker), and a module-level flag then added one more
 * 'error' listener per load (MaxListenersExceededWarning after ten).
 */
const GUARDED = Symbol.for('cuzk-exporter.stdio-guarded');

/**
 * A closed stdout/stderr (`cuzk-exporter run 2>&1 | head`, a log shipper that went away)
 * reports EPIPE as an 'error' event on the stream, which, unhandled, ends the process at
 * the next log line. The exporter's job is serving metrics, not its log: from the first
 * such error on, lines to that stream are dropped and the process carries on.
 */
export function guardStdio(): void {
  const err = process.stderr as NodeJS.WriteStream & { [GUARDED]?: { gone: boolean } };
  const out = process.stdout as NodeJS.WriteStream & { [GUARDED]?: { gone: boolean } };
  if (!err[GUARDED]) {
    const state = { gone: false };
    err[GUARDED] = state;
    err.on('error', () => {
      state.gone = true;
    });
  }
  if (!out[GUARDED]) {
    out[GUARDED] = { gone: false };
    out.on('error', () => {});
  }
}

const writeStderr = (l: string): void => {
  const guard = (process.stderr as { [GUARDED]?: { gone: boolean } })[GUARDED];
  if (guard?.gone) return;
  try {
    process.stderr.write(l + '\n');
  } catch {
    if (guard) guard.gone = true;
  }
};

export function createLogger(
  level: LogLevel = 'info',
  format: LogFormat = 'logfmt',
  write: (line: string) => void = writeStderr,
): Logger {
  // Only a logger that writes to stderr needs the guard (silentLogger, tests' collectors do not).
  if (write === writeStderr) guardStdio();
  const min = LOG_LEVELS.indexOf(level);
  const emit = (lvl: LogLevel, msg: string, fields: Fields = {}) => {
    if (LOG_LEVELS.indexOf(lvl) < min) return;
    const rec: Record<string, string | number | boolean | null> = { ts: new Date().toISOString(), level: lvl, msg };
    for (const [k, v] of Object.entries(fields)) if (v !== undefined) rec[k] = v;
    if (format === 'json') write(JSON.stringify(rec));
    else write(Object.entries(rec).map(([k, v]) => `${k}=${logfmtValue(String(v))}`).join(' '));
  };
  return {
    debug: (m, f) => emit('debug', m, f),
    info: (m, f) => emit('info', m, f),
    warn: (m, f) => emit('warn', m, f),
    error: (m, f) => emit('error', m, f),
  };
}

/** A logger that drops everything (tests, benchmarks). */
export const silentLogger: Logger = createLogger('error', 'logfmt', () => {});
