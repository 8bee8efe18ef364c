/**
 * Every CLI flag, once: its type, default and help, and where it applies. A flag's value
 * comes from, in order: the command line, the environment (CUZK_EXPORTER_<FLAG>, dots and
 * dashes as underscores: --web.listen-address -> CUZK_EXPORTER_WEB_LISTEN_ADDRESS), the
 * config file (--config.file, YAML or JSON, keys are flag names), the default.
 * Bad values give one readable line (UsageError) and a non-zero exit.
 */
import YAML from 'yaml';
import { MAX_NESTING, yamlNestingDepth } from '../util/yaml-depth';
import { LOG_FORMATS, LOG_LEVELS } from '../util/logger';
import { FileRefused, readRegularFile } from '../util/regular-file';
import { parseStrictJson } from '../util/strict-json';
import { yamlErrorLine } from '../util/yaml-error';
import { PROOF_KINDS } from '../engine/model/kinds';

export type Command = 'run' | 'attach' | 'prove' | 'bench' | 'dashboards' | 'simulate' | 'fleet';
type OptType = 'string' | 'number' | 'integer' | 'boolean' | 'duration' | 'path';

export interface OptSpec {
  name: string;
  type: OptType;
  describe: string;
  default?: string | number | boolean;
  /** A command's own default where it differs (fleet: slower polls, one process watches many daemons). */
  defaults?: Partial<Record<Command, string | number | boolean>>;
  choices?: readonly string[];
  min?: number;
  max?: number;
  commands: readonly Command[];
  group: string;
}

export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

const SERVE: Command[] = ['run', 'attach'];
/** Commands that serve HTTP (fleet: no OTLP push; its targets are scraped through /probe). */
const WEB: Command[] = ['run', 'attach', 'fleet'];
/** Commands that attach to cuzk daemons (fleet: the defaults of every target). */
const ATTACH: Command[] = ['attach', 'fleet'];
const ENGINE: Command[] = ['run', 'prove', 'simulate'];
const ALL: Command[] = ['run', 'attach', 'prove', 'bench', 'dashboards', 'simulate', 'fleet'];

export const OPTIONS: OptSpec[] = [
  { name: 'web.listen-address', type: 'string', default: ':9464', describe: 'Address to serve /metrics, /status and the status page on (host:port; ":9464" is every interface)', commands: WEB, group: 'Web' },
  { name: 'web.telemetry-path', type: 'string', default: '/metrics', describe: 'Path under which to expose metrics', commands: WEB, group: 'Web' },
  { name: 'web.config.file', type: 'path', describe: 'Exporter-toolkit web config (TLS, basic auth) in YAML', commands: WEB, group: 'Web' },
  { name: 'web.compression', type: 'string', default: 'gzip', choices: ['gzip', 'none'], describe: 'Compress /metrics answers with gzip when the scraper accepts it (Prometheus always does), or never', commands: WEB, group: 'Web' },
  { name: 'web.max-connections', type: 'integer', default: 512, min: 1, max: 1_000_000, describe: 'Connections open at once; at the limit the oldest idle connection is closed to admit a new one (counted in cuzk_exporter_errors_total{reason="connection_limit"})', commands: WEB, group: 'Web' },
  { name: 'otlp.endpoint', type: 'string', describe: 'Also push metrics over OTLP/HTTP to this URL (e.g. http://collector:4318/v1/metrics)', commands: SERVE, group: 'Web' },
  { name: 'otlp.interval', type: 'duration', default: '15s', describe: 'OTLP push interval', min: 0.1, commands: SERVE, group: 'Web' },
  { name: 'log.level', type: 'string', default: 'info', choices: LOG_LEVELS, describe: 'Only log messages with this severity or above', commands: ALL, group: 'Logging' },
  { name: 'log.format', type: 'string', default: 'logfmt', choices: LOG_FORMATS, describe: 'Log line format', commands: ALL, group: 'Logging' },
  { name: 'config.file', type: 'path', describe: 'YAML or JSON file of flag values (keys are flag names, e.g. "web.listen-address")', commands: ALL, group: 'Configuration' },
  { name: 'config.check', type: 'boolean', default: false, describe: 'Validate flags and configuration, print the result and exit', commands: ALL, group: 'Configuration' },

  { name: 'engine.library', type: 'path', describe: 'Shared library implementing the cuzk ABI (default: the reference engine built by npm install)', commands: [...ENGINE, 'bench'], group: 'Engine' },
  { name: 'engine.backend', type: 'string', default: 'cpu', choices: ['cpu', 'sim'], describe: 'cpu: real field arithmetic on CPU threads; sim: timing model of a real cuzk box, no arithmetic', commands: ENGINE, group: 'Engine' },
  { name: 'engine.gpus', type: 'integer', default: 1, min: 1, max: 64, describe: 'GPUs (reference engine: simulated devices)', commands: ENGINE, group: 'Engine' },
  { name: 'engine.workers-per-gpu', type: 'integer', default: 2, min: 1, max: 8, describe: 'GPU workers per GPU (they share the per-GPU kernel lock)', commands: ENGINE, group: 'Engine' },
  { name: 'engine.synthesis-concurrency', type: 'integer', default: 2, min: 1, max: 256, describe: 'Partitions synthesized at once', commands: ENGINE, group: 'Engine' },
  { name: 'engine.time-scale', type: 'number', default: 1, min: 0.0001, max: 1000, describe: 'sim backend: multiply the timing model by this (0.01 = 100x faster)', commands: ENGINE, group: 'Engine' },
  { name: 'engine.split-proving', type: 'boolean', default: true, describe: "Split proving, as cuzk does it: a partition's CPU finalize tail runs after its kernels release the GPU lock while the worker picks its next partition (false: the worker finishes the tail first)", commands: ENGINE, group: 'Engine' },
  { name: 'engine.config', type: 'path', describe: 'JSON file of further engine settings (native/README.md); flags win over it', commands: ENGINE, group: 'Engine' },
  { name: 'fault.status-bug-kind', type: 'string', choices: PROOF_KINDS, describe: 'FAULT INJECTION: reproduce the historical status bug for this proof kind (see --fault.status-bug-mode)', commands: ENGINE, group: 'Fault injection (testing only)' },
  { name: 'fault.status-bug-mode', type: 'string', choices: ['clobber', 'skip'], describe: "FAULT INJECTION: how --fault.status-bug-kind breaks the worker state: clobber (default: the finalizer race cuzk shipped, a partition's end clears its worker even if it owns a newer one) or skip (the worker is never marked busy for the kind)", commands: ENGINE, group: 'Fault injection (testing only)' },
  { name: 'fault.fail-partition-nth', type: 'integer', min: 1, describe: 'FAULT INJECTION: the n-th partition to reach the GPU fails', commands: ENGINE, group: 'Fault injection (testing only)' },
  { name: 'fault.fail-partition-rate', type: 'number', min: 0, max: 1, describe: 'FAULT INJECTION: each partition fails with this probability', commands: ENGINE, group: 'Fault injection (testing only)' },
  { name: 'fault.corrupt-proof-nth', type: 'integer', min: 1, describe: 'FAULT INJECTION: the n-th proof is corrupted (verification fails)', commands: ENGINE, group: 'Fault injection (testing only)' },
  { name: 'fault.verify-as-job', type: 'string', describe: 'FAULT INJECTION: verify every proof as if it belonged to the job with this request id (a proof presented for the wrong job must not verify)', commands: ['prove'], group: 'Fault injection (testing only)' },

  { name: 'workload.mix', type: 'string', default: 'porep-c2=1,snap-update=3,window-post=1,winning-post=1', describe: 'Proof kinds to submit, with weights', commands: ['run', 'simulate'], group: 'Workload' },
  { name: 'workload.concurrency', type: 'integer', default: 4, min: 0, max: 10000, describe: 'Proofs kept in flight (0: no workload, serve metrics only)', commands: ['run', 'simulate'], group: 'Workload' },
  { name: 'shutdown.grace', type: 'duration', default: '10s', min: 0, describe: 'On SIGINT/SIGTERM, proofs in flight get this long to finish before they are cancelled', commands: ['run', 'prove', 'simulate'], group: 'Workload' },

  { name: 'cuzk.status-url', type: 'string', describe: "Surface: URL of the cuzk daemon's /status (its status_listen address), e.g. http://127.0.0.1:9821/status (blind to WindowPoSt/WinningPoSt)", commands: ['attach'], group: 'cuzk' },
  { name: 'cuzk.grpc-address', type: 'string', describe: "Surface: cuzk's gRPC API (its [daemon] listen address): unix:///run/curio/cuzk.sock or host:port, e.g. 127.0.0.1:9820 (no TLS, as cuzk)", commands: ['attach'], group: 'cuzk' },
  { name: 'cuzk.timeline-file', type: 'path', describe: 'Surface: cuzk\'s log with its TIMELINE lines, followed like tail -F; "-" reads standard input (journalctl -fu cuzk -o cat --lines=0 | cuzk-exporter attach --cuzk.timeline-file - ...)', commands: ['attach'], group: 'cuzk' },
  { name: 'cuzk.poll-interval', type: 'duration', default: '1s', defaults: { fleet: '5s' }, min: 0.05, describe: 'How often to poll /status and gRPC GetMetrics (fleet: 5s by default, to keep many targets cheap; busy time comes from TIMELINE lines, exact whatever the poll)', commands: ATTACH, group: 'cuzk' },
  { name: 'cuzk.grpc-status-interval', type: 'duration', default: '5s', defaults: { fleet: '15s' }, min: 5, describe: 'How often to call gRPC GetStatus (cuzk runs nvidia-smi on every call: never faster than 5s; fleet: 15s by default)', commands: ATTACH, group: 'cuzk' },
  { name: 'cuzk.timeline-poll-interval', type: 'duration', default: '100ms', defaults: { fleet: '500ms' }, min: 0.01, describe: 'How often to look at the TIMELINE log file for new lines (its lines carry their own times: a later look delays the gauges, never changes the seconds counted; fleet: 500ms by default)', commands: ATTACH, group: 'cuzk' },
  { name: 'cuzk.timeout', type: 'duration', default: '2s', min: 0.01, describe: 'Give up on a /status or gRPC request after this long', commands: ATTACH, group: 'cuzk' },
  { name: 'cuzk.max-body-bytes', type: 'integer', default: 16 * 1024 * 1024, min: 1024, describe: 'Reject /status bodies and gRPC answers larger than this', commands: ATTACH, group: 'cuzk' },

  { name: 'targets.file', type: 'path', describe: 'fleet: YAML file of the cuzk daemons to attach to (name, labels, grpc_address, status_url, timeline_file or timeline_command per target); re-read when it changes and on SIGHUP (a bad file keeps the previous targets)', commands: ['fleet'], group: 'Fleet' },

  { name: 'workload.count', type: 'integer', default: 0, min: 0, describe: 'Stop submitting after this many proofs (0: until stopped)', commands: ['simulate'], group: 'Workload' },
  { name: 'simulate.grpc-listen', type: 'string', default: '127.0.0.1:9820', describe: 'Where the cuzk.v1.ProvingEngine gRPC service listens: unix:///path/cuzk.sock or host:port (port 0: any free port, printed at startup)', commands: ['simulate'], group: 'Simulate' },
  { name: 'simulate.status-listen', type: 'string', default: '127.0.0.1:9821', describe: 'host:port of the /status listener, like cuzk\'s status_listen ("" turns it off, as cuzk\'s default does)', commands: ['simulate'], group: 'Simulate' },
  { name: 'simulate.timeline-file', type: 'string', default: '-', describe: 'Where TIMELINE lines go: "-" for standard error (as cuzk), a file path (appended), or "" for nowhere', commands: ['simulate'], group: 'Simulate' },
  { name: 'simulate.status-shows-post', type: 'boolean', default: false, describe: 'Fix /status\'s blind spot: show WindowPoSt/WinningPoSt jobs in pipelines, workers and counters (cuzk does not)', commands: ['simulate'], group: 'Simulate' },
  { name: 'simulate.status-extensions', type: 'boolean', default: false, describe: 'Keep the reference engine\'s additions in /status (last_seq, gpus[], busy_total_secs, finalizing, …; engine truth, PoSt included); cuzk has none of them', commands: ['simulate'], group: 'Simulate' },
  { name: 'simulate.grpc-clears-owner-only', type: 'boolean', default: false, describe: 'Fix GetStatus\'s finalizer race: a partition\'s end clears a worker\'s current_job only if it still runs that partition (cuzk clears it unconditionally)', commands: ['simulate'], group: 'Simulate' },
  { name: 'simulate.truth-listen', type: 'string', describe: 'host:port serving GET /truth: the engine\'s native counters as JSON (nanoseconds), the ground truth for tests', commands: ['simulate'], group: 'Simulate' },
  { name: 'simulate.truth-file', type: 'path', describe: 'Write the same ground-truth JSON to this file on SIGUSR2 and at exit', commands: ['simulate'], group: 'Simulate' },
  { name: 'simulate.split-prove', type: 'boolean', default: true, describe: "Upstream's split GPU proving; false = CUZK_DISABLE_SPLIT_PROVE=1: synchronous gpu_prove, no GPU_START/GPU_END lines at all (also turns the engine's split proving off)", commands: ['simulate'], group: 'Simulate' },
  { name: 'simulate.pipeline', type: 'boolean', default: true, describe: "Upstream's pipeline.enabled; false: monolithic workers — no TIMELINE lines, one worker per GPU, /status shows registered idle workers only, GetStatus shows a worker's job start to end", commands: ['simulate'], group: 'Simulate' },
  { name: 'simulate.gpu-failure', type: 'string', default: 'finish', choices: ['finish', 'start'], describe: "Where an injected GPU failure (--fault.fail-partition-*) happens upstream: finish (gpu_prove_finish: no GPU_END, /status 'done', the job fails once) or start (gpu_prove_start: no end, /status left in 'gpu', a failure counted per partition, siblings go on, the job never completes)", commands: ['simulate'], group: 'Simulate' },
  { name: 'simulate.batch-size', type: 'integer', default: 1, min: 1, max: 64, describe: "Upstream's scheduler.max_batch_size: > 1 collects PoRep (or SnapDeals) requests into one monolithic job whose lines carry only the first id (/status blind to it)", commands: ['simulate'], group: 'Simulate' },
  { name: 'simulate.batch-wait', type: 'duration', default: '10s', min: 0.001, describe: "Upstream's scheduler.max_batch_wait_ms: a batch flushes this long after its first request", commands: ['simulate'], group: 'Simulate' },
  { name: 'simulate.tracing', type: 'boolean', default: true, describe: "Write upstream's ANSI tracing lines to the TIMELINE sink too (one journal holds both)", commands: ['simulate'], group: 'Simulate' },
  { name: 'simulate.tear-rate', type: 'number', default: 0.02, min: 0, max: 1, describe: 'Share of TIMELINE lines torn by a tracing line landing between two of eprintln!\'s write(2) pieces (needs --simulate.tracing)', commands: ['simulate'], group: 'Simulate' },
  { name: 'simulate.seed', type: 'integer', default: 1, min: 0, max: 2 ** 31 - 1, describe: 'Seed of the workload (kinds, ids) and tearing draws', commands: ['simulate'], group: 'Simulate' },
  { name: 'simulate.request-ids', type: 'string', default: 'curio', choices: ['curio', 'opaque'], describe: "Workload request ids: curio (Curio's formats: porep-<miner>-<sector>, ps-snap-…, wdpost-<miner>-<partition>-[r r …], winpost-<miner>-<hex>) or opaque (uuid-like, no kind in them)", commands: ['simulate'], group: 'Simulate' },
  { name: 'simulate.retries', type: 'integer', default: 0, min: 0, max: 100, describe: 'Workload: prove a failed request again under the same id, up to this many times (Curio retries with deterministic ids)', commands: ['simulate'], group: 'Simulate' },
  { name: 'simulate.gpu-queue-collisions', type: 'boolean', default: true, describe: "Upstream's GPU queue is a map keyed (job_seq, partition): every PoSt job and the first partitioned job's partition 0 share key (0,0), and a second one queued before the first is picked up replaces it — the first is lost (its callers wait forever). false: no job is lost", commands: ['simulate'], group: 'Simulate' },
  { name: 'simulate.cancel', type: 'boolean', default: false, describe: 'Make CancelProof cancel (upstream\'s is a no-op answering was_running: false)', commands: ['simulate'], group: 'Simulate' },
  { name: 'simulate.self-check', type: 'boolean', default: true, describe: "Verify each assembled PoRep proof as upstream's self-check does (cpu backend; a failure is a failed proof)", commands: ['simulate'], group: 'Simulate' },
  { name: 'simulate.boxes', type: 'integer', default: 1, min: 1, max: 256, describe: 'Run this many cuzk boxes in one process, each with its own engine, surfaces (ports 0, sockets and TIMELINE files suffixed .box-N) and truth', commands: ['simulate'], group: 'Simulate' },
  { name: 'simulate.fleet-file', type: 'path', describe: 'YAML list of boxes (name, gpus, workers_per_gpu, time_scale, faults, mix, concurrency, surfaces, split_prove, pipeline) to run in one process; see src/sim/fleet.ts', commands: ['simulate'], group: 'Simulate' },
  { name: 'simulate.addresses-file', type: 'path', describe: 'Write every box\'s addresses (name, grpc, status, truth, timeline) to this JSON file once they listen', commands: ['simulate'], group: 'Simulate' },
  { name: 'fault.fail-synthesis-nth', type: 'integer', min: 1, describe: 'FAULT INJECTION: the n-th partition synthesis fails (its job fails)', commands: ['simulate'], group: 'Fault injection (testing only)' },

  { name: 'kind', type: 'string', default: 'snap-update', choices: PROOF_KINDS, describe: 'Proof kind to submit', commands: ['prove'], group: 'Prove' },
  { name: 'count', type: 'integer', default: 1, min: 1, max: 100000, describe: 'Proofs to submit', commands: ['prove'], group: 'Prove' },
  { name: 'concurrency', type: 'integer', default: 2, min: 1, max: 1000, describe: 'Proofs in flight at once', commands: ['prove'], group: 'Prove' },
  { name: 'verify', type: 'boolean', default: true, describe: 'Verify every proof (cpu backend)', commands: ['prove'], group: 'Prove' },
  { name: 'json', type: 'boolean', default: false, describe: 'Print results as JSON lines instead of a table', commands: ['prove'], group: 'Prove' },

  { name: 'out', type: 'path', describe: 'Folder to write the dashboards and rules to', commands: ['dashboards'], group: 'Dashboards' },
];

export function envName(flag: string): string {
  return 'CUZK_EXPORTER_' + flag.toUpperCase().replace(/[.-]/g, '_');
}

const DURATION = /^(\d+(?:\.\d+)?)(ms|s|m|h)$/;

/** The longest delay a Node.js timer can wait: longer ones fire after 1 ms instead. */
export const MAX_TIMER_MS = 2_147_483_647;

/** Parses "500ms", "1s", "2m", "1h" (or a bare number of seconds) to seconds. */
export function parseDuration(v: string | number, flag: string): number {
  if (typeof v === 'number') {
    if (!Number.isFinite(v) || v < 0) throw new UsageError(`--${flag} ${v} is not a duration (for example 500ms, 1s, 2m)`);
    return v;
  }
  const s = v.trim();
  if (/^\d+(?:\.\d+)?$/.test(s)) return Number(s);
  const m = DURATION.exec(s);
  if (!m) throw new UsageError(`--${flag} "${v}" is not a duration (for example 500ms, 1s, 2m)`);
  const mult = { ms: 0.001, s: 1, m: 60, h: 3600 }[m[2] as 'ms' | 's' | 'm' | 'h'];
  return Number(m[1]) * mult;
}

export type Resolved = Record<string, string | number | boolean | undefined>;

/** Flags of a Resolved set that were given (command line, environment or file), not defaulted. */
const explicitFlags = new WeakMap<Resolved, Set<string>>();
export function isExplicit(o: Resolved, flag: string): boolean {
  return explicitFlags.get(o)?.has(flag) ?? false;
}

function coerce(spec: OptSpec, raw: unknown, origin: string): string | number | boolean {
  const where = `--${spec.name}${origin ? ` (from ${origin})` : ''}`;
  switch (spec.type) {
    case 'boolean': {
      if (typeof raw === 'boolean') return raw;
      const s = String(raw).toLowerCase();
      if (['true', '1', 'yes'].includes(s)) return true;
      if (['false', '0', 'no'].includes(s)) return false;
      throw new UsageError(`${where}: "${raw}" is not true or false`);
    }
    case 'number':
    case 'integer': {
      // Only numbers and numeric text: YAML null/empty (Number(null) = 0) and true
      // (Number(true) = 1) must not become silent zeros and ones.
      if (typeof raw !== 'number' && typeof raw !== 'string') throw new UsageError(`${where}: ${raw === null ? 'empty (null)' : JSON.stringify(raw)} is not a number (leave the key out for the default)`);
      const n = typeof raw === 'number' ? raw : /^\s*[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?\s*$/.test(raw) ? Number(raw) : NaN;
      if (!Number.isFinite(n)) throw new UsageError(`${where}: "${raw}" is not a number`);
      if (spec.type === 'integer' && !Number.isInteger(n)) throw new UsageError(`${where}: "${raw}" is not a whole number`);
      if (spec.min !== undefined && n < spec.min) throw new UsageError(`${where}: ${n} is below the minimum ${spec.min}`);
      if (spec.max !== undefined && n > spec.max) throw new UsageError(`${where}: ${n} is above the maximum ${spec.max}`);
      return n;
    }
    case 'duration': {
      if (typeof raw !== 'string' && typeof raw !== 'number') throw new UsageError(`${where}: ${raw === null ? 'empty (null)' : JSON.stringify(raw)} is not a duration (for example 500ms, 1s, 2m; leave the key out for the default)`);
      const secs = parseDuration(raw, spec.name);
      if (spec.min !== undefined && secs < spec.min) throw new UsageError(`${where}: ${raw} is shorter than ${spec.min}s`);
      if (spec.max !== undefined && secs > spec.max) throw new UsageError(`${where}: ${raw} is longer than ${spec.max}s`);
      // Every duration becomes a timer somewhere; Node clamps longer ones to 1 ms.
      if (secs * 1000 > MAX_TIMER_MS) throw new UsageError(`${where}: ${raw} is longer than the longest timer Node.js can run (${MAX_TIMER_MS} ms, about 24.8 days)`);
      return secs;
    }
    default: {
      if (typeof raw !== 'string' && typeof raw !== 'number') throw new UsageError(`${where}: not a string`);
      const s = String(raw);
      if (spec.choices && !spec.choices.includes(s)) throw new UsageError(`${where}: "${s}" is not one of ${spec.choices.join(', ')}`);
      if (spec.type === 'path' && s === '') throw new UsageError(`${where}: empty path`);
      return s;
    }
  }
}

/** --config.file and --engine.config: far above any real one. */
export const MAX_CONFIG_BYTES = 1024 * 1024;

function readConfigFile(file: string): Record<string, unknown> {
  let text: string;
  try {
    // A regular file of at most 1 MiB, or a refusal before anything is read (a FIFO would
    // hang the start, /dev/zero would fill memory): regular-file.ts.
    text = readRegularFile(file, MAX_CONFIG_BYTES).toString('utf8');
  } catch (e) {
    if (e instanceof FileRefused) throw new UsageError(`--config.file ${file}: ${e.message}`);
    throw new UsageError(`--config.file ${file}: cannot read (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
  }
  let doc: unknown;
  try {
    // Duplicate keys and deep nesting are errors in both formats (strict-json.ts).
    if (!file.endsWith('.json') && yamlNestingDepth(text) > MAX_NESTING) throw new RangeError(`more than ${MAX_NESTING} levels`);
    doc = file.endsWith('.json') ? parseStrictJson(text) : YAML.parse(text, { uniqueKeys: true, maxAliasCount: 100 });
  } catch (e) {
    // yaml reports a stack overflow inside its own error ("Maximum call stack size exceeded at line …").
    const msg = e instanceof RangeError || /Maximum call stack/.test((e as Error).message) ? `nested too deeply (more than ${MAX_NESTING} levels)` : file.endsWith('.json') ? (e as Error).message.split('\n')[0] : yamlErrorLine(e as Error, text);
    throw new UsageError(`--config.file ${file}: not valid ${file.endsWith('.json') ? 'JSON' : 'YAML'}: ${msg}`);
  }
  if (doc === null || doc === undefined) return {};
  if (typeof doc !== 'object' || Array.isArray(doc)) throw new UsageError(`--config.file ${file}: top level must be a mapping of flag names to values`);
  return doc as Record<string, unknown>;
}

/**
 * Resolves every flag of `command` from argv (as yargs parsed it: keys are flag names),
 * the environment and the config file. Throws UsageError on the first bad value.
 */
/** The default of `spec` under `command`. */
export function defaultOf(spec: OptSpec, command: Command): string | number | boolean | undefined {
  return spec.defaults?.[command] ?? spec.default;
}

export function resolveOptions(command: Command, argv: Record<string, unknown>, env: NodeJS.ProcessEnv = process.env): Resolved {
  const specs = OPTIONS.filter((o) => o.commands.includes(command));
  const cfgSpec = specs.find((s) => s.name === 'config.file')!;
  const cfgRaw = argv['config.file'] ?? env[envName('config.file')];
  const cfgPath = cfgRaw === undefined ? undefined : (coerce(cfgSpec, cfgRaw, '') as string);
  const file = cfgPath ? readConfigFile(cfgPath) : {};
  const known = new Set(specs.map((s) => s.name));
  for (const key of Object.keys(file)) {
    if (!known.has(key)) {
      const other = OPTIONS.find((o) => o.name === key);
      throw new UsageError(
        other
          ? `--config.file ${cfgPath}: "${key}" does not apply to the ${command} command`
          : `--config.file ${cfgPath}: unknown key "${key}" (keys are flag names, see --help)`,
      );
    }
  }
  const out: Resolved = {};
  const given = new Set<string>();
  explicitFlags.set(out, given);
  for (const spec of specs) {
    let raw: unknown = argv[spec.name];
    let origin = '';
    if (raw === undefined && env[envName(spec.name)] !== undefined) {
      raw = env[envName(spec.name)];
      origin = `environment ${envName(spec.name)}`;
    }
    if (raw === undefined && file[spec.name] !== undefined) {
      raw = file[spec.name];
      origin = `config file ${cfgPath}`;
    }
    if (Array.isArray(raw)) throw new UsageError(`--${spec.name} was given more than once`);
    if (raw !== undefined) given.add(spec.name);
    if (raw === undefined) raw = defaultOf(spec, command);
    out[spec.name] = raw === undefined ? undefined : coerce(spec, raw, origin);
  }
  return out;
}
