#!/usr/bin/env node
/**
 * cuzk-exporter CLI (DESIGN §8). Exit codes: 0 ok, 1 runtime failure (or failed proofs),
 * 2 bad flags or configuration (one readable line on stderr).
 */
// First, before yargs and the rest load (a few hundred ms on a busy host): from here on a
// SIGINT/SIGTERM/SIGHUP is caught and acted on once the command is known, never Node's
// default kill (signals.ts).
import { armSignals, endAtOnceOnSignal, exitWhenDrained, installSignalHandlers } from './signals';
if (require.main === module) armSignals();
import yargs, { Argv } from 'yargs';
import { createLogger, LogFormat, LogLevel } from '../util/logger';
import { packageVersion } from '../util/package-root';
import { Command, defaultOf, envName, OPTIONS, resolveOptions, UsageError } from './options';
import { FLEET_HELP } from './fleet-help';

const COMMANDS: Record<Command, string> = {
  run: 'Run the reference GPU prover with a proof workload and serve its metrics (the default for npm start)',
  attach: 'Serve the same metrics from a running cuzk daemon, read through its gRPC API (--cuzk.grpc-address), the TIMELINE lines of its log (--cuzk.timeline-file) and/or its /status (--cuzk.status-url)',
  prove: 'Submit proofs to the reference prover, show progress and per-proof timings (gpu_s and synth_s summed over each proof\'s partitions)',
  bench: 'Run the benchmarks (same as npm run bench)',
  dashboards: 'Write the Grafana dashboards and Prometheus alert/recording rules to a folder',
  fleet: 'Attach to many cuzk daemons listed in --targets.file: each prover\'s metrics at /probe?target=NAME, a fleet page at /',
  simulate: 'Run a cuzk-compatible daemon (reference prover behind cuzk\'s gRPC, /status and TIMELINE surfaces, blind spots included) for tests and demos',
};

/** How --help shows the types yargs is not told about. */
const NUMERIC_TYPES: Record<string, string | undefined> = { number: 'number', integer: 'number', duration: 'duration' };

/**
 * yargs names flags without their dashes ("Unknown argument: web.listen-adress"); users type
 * them with, so the message does too. Positional words (a stray "extra") stay as they are.
 */
export function flagsAsTyped(msg: string, args: string[]): string {
  const asTyped = (name: string) => {
    for (const a of args) {
      const m = /^(--?)(?:no-)?([^=]+)/.exec(a);
      if (m && m[2] === name) return `${m[1]}${name}`;
    }
    return name;
  };
  const unknown = /^(Unknown arguments?: )(.*)$/.exec(msg);
  if (unknown) return unknown[1] + unknown[2].split(', ').map(asTyped).join(', ');
  const missing = /^(Not enough arguments following: )(.*)$/.exec(msg);
  if (missing) return `${missing[1]}${asTyped(missing[2])}`;
  return msg;
}

function addOptions(y: Argv, cmd: Command): Argv {
  for (const o of OPTIONS.filter((x) => x.commands.includes(cmd))) {
    const parts = [o.describe];
    if (o.choices) parts.push(`[choices: ${o.choices.join(', ')}]`);
    const dflt = defaultOf(o, cmd);
    if (dflt !== undefined) parts.push(`[default: ${JSON.stringify(dflt)}]`);
    parts.push(`[env: ${envName(o.name)}]`);
    // Values are validated by resolveOptions (after env and config file are merged), from
    // the text as typed: yargs' own number type would turn "abc" into NaN first. So numbers
    // and durations get no yargs type (parse-numbers is off: they stay text) and show theirs.
    const shown = NUMERIC_TYPES[o.type];
    if (shown) parts.push(`[${shown}]`);
    y.option(o.name, {
      ...(shown ? { requiresArg: true } : { type: o.type === 'boolean' ? 'boolean' : 'string' }),
      describe: parts.join(' '),
      group: `${o.group}:`,
    });
  }
  return y;
}

async function dispatch(cmd: Command, argv: Record<string, unknown>): Promise<number> {
  const o = resolveOptions(cmd, argv);
  const log = createLogger(o['log.level'] as LogLevel, o['log.format'] as LogFormat);
  // Long-running commands catch SIGINT/SIGTERM/SIGHUP from here on, before anything heavy
  // loads: a signal during startup is an orderly shutdown, not a kill (signals.ts).
  if (cmd === 'run' || cmd === 'attach' || cmd === 'prove' || cmd === 'simulate' || cmd === 'fleet') installSignalHandlers(log);
  else endAtOnceOnSignal();
  switch (cmd) {
    case 'run':
      return (await import('./run')).runCommand(o, log);
    case 'attach':
      return (await import('./attach')).attachCommand(o, log);
    case 'prove':
      return (await import('./prove')).proveCommand(o, log);
    case 'bench':
      return (await import('../../bench/run')).benchCommand(o, log);
    case 'dashboards':
      return (await import('./dashboards')).dashboardsCommand(o);
    case 'simulate':
      return (await import('./simulate')).simulateCommand(o, log);
    case 'fleet':
      return (await import('./fleet')).fleetCommand(o, log);
  }
}

/**
 * `--flag -` (standard input, as in `--cuzk.timeline-file -`): yargs would read a lone "-"
 * as a positional argument; it is the value of the flag before it.
 */
function joinDashValues(args: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (a.startsWith('--') && !a.includes('=') && args[i + 1] === '-' && OPTIONS.some((o) => `--${o.name}` === a && o.type !== 'boolean')) {
      out.push(`${a}=-`);
      i++;
    } else out.push(a);
  }
  return out;
}

export async function main(args: string[]): Promise<number> {
  let failure: string | undefined;
  const parser = yargs(joinDashValues(args))
    .scriptName('cuzk-exporter')
    .usage('$0 <command> [options]\n\nPrometheus/OpenTelemetry exporter for GPU SNARK proving (Filecoin cuzk).')
    .parserConfiguration({ 'dot-notation': false, 'camel-case-expansion': false, 'boolean-negation': true, 'parse-numbers': false })
    .strict()
    .demandCommand(1, 'a command is required: run, attach, fleet, prove, bench, dashboards or simulate')
    .recommendCommands()
    .help()
    .alias('help', 'h')
    .version('version', 'Show the version and exit', `cuzk-exporter, version ${packageVersion()} (node ${process.version}, ${process.platform}/${process.arch})`)
    .wrap(Math.min(120, process.stdout.columns || 100))
    .epilog('Every flag can also be set with an environment variable CUZK_EXPORTER_<FLAG> (dots and dashes as underscores) or in --config.file.')
    .fail((msg, err) => {
      failure = flagsAsTyped(err ? err.message : msg, args);
    })
    .exitProcess(false);
  // The handler only records what to run: yargs may call it before reporting a
  // validation failure, and nothing may start on a command line that is wrong.
  let chosen: { cmd: Command; argv: Record<string, unknown> } | undefined;
  for (const cmd of Object.keys(COMMANDS) as Command[]) {
    parser.command(cmd, COMMANDS[cmd], (y) => (cmd === 'fleet' ? addOptions(y, cmd).epilog(FLEET_HELP) : addOptions(y, cmd)), (argv) => {
      chosen = { cmd, argv: argv as Record<string, unknown> };
    });
  }
  try {
    await parser.parseAsync();
  } catch (e) {
    failure ??= (e as Error).message;
  }
  if (failure !== undefined) {
    process.stderr.write(`cuzk-exporter: ${failure} (see cuzk-exporter --help)\n`);
    return 2;
  }
  if (chosen) {
    try {
      return await dispatch(chosen.cmd, chosen.argv);
    } catch (e) {
      if (e instanceof UsageError) {
        process.stderr.write(`cuzk-exporter: ${e.message}\n`);
        return 2;
      }
      process.stderr.write(`cuzk-exporter: ${(e as Error).message}\n`);
      return 1;
    }
  }
  return 0; // --help
}

if (require.main === module) {
  main(process.argv.slice(2)).then(
    // On success let the event loop drain by itself: exiting proves nothing was left
    // running (engine threads joined, servers closed). Failures exit at once.
    (code) => (code === 0 ? exitWhenDrained(0) : process.exit(code)),
    (e: Error) => {
      process.stderr.write(`cuzk-exporter: ${e.message}\n`);
      process.exit(1);
    },
  );
}
