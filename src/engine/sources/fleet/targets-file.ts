/**
 * The targets file of `cuzk-exporter fleet` (--targets.file): the cuzk daemons one exporter
 * attaches to, each with its surfaces and optional labels. YAML (or JSON, which is YAML):
 *
 *   targets:
 *     - name: gpu-17                       # the Prometheus `instance` of its series
 *       labels: { rack: r3 }               # optional; attached by Prometheus (http_sd /targets)
 *       grpc_address: 10.0.0.17:9820       # any non-empty set of the three surfaces
 *       status_url: http://10.0.0.17:9821/status
 *       timeline_command: [ssh, gpu-17, journalctl, -fu, cuzk, -o, cat, --lines=0]
 *     - name: gpu-18
 *       grpc_address: unix:///run/curio/cuzk.sock
 *       timeline_file: /var/log/cuzk.log
 *
 * Validated whole: at start (a bad file is one line and exit 2) and at every reload (a bad
 * file keeps the last good set, logged and counted; fleet.ts). Anything unknown is an error,
 * as in the web config: a typo must not silently drop a surface. Limits (docs/hostile-inputs.md):
 * 1 MiB, 1000 targets, 32 labels per target, names of at most 128 characters, commands of
 * at most 64 arguments of 4096 characters, 64 levels of lists and mappings (measured on the
 * syntax tree, which the yaml package builds without recursion, before it composes the file:
 * its composer recurses once per level, overflows the stack at ~1000 levels, and in the
 * same process a later overflow could abort node, "RegExpCompiler Allocation failed - process
 * out of memory", which no catch sees: a fleet's second reload of such a file ended it).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import YAML from 'yaml';
import { grpcTarget } from '../attach/grpc-surface';
import { MAX_NESTING, yamlNestingDepth } from '../../../util/yaml-depth';
import { yamlErrorLine } from '../../../util/yaml-error';

export interface TargetSpec {
  name: string;
  labels: Record<string, string>;
  grpcAddress?: string;
  statusUrl?: string;
  /** Absolute path (a relative one in the file is relative to the file's folder). */
  timelineFile?: string;
  /** argv, run without a shell; its standard output is the log. */
  timelineCommand?: string[];
}

export const MAX_TARGETS_FILE_BYTES = 1024 * 1024;
export const MAX_TARGETS = 1000;
export const MAX_LABELS = 32;
export const MAX_LABEL_VALUE = 1024;
export const MAX_COMMAND_ARGS = 64;
export const MAX_COMMAND_ARG = 4096;
export { MAX_NESTING, yamlNestingDepth } from '../../../util/yaml-depth';

/** A target name: the `instance` label, the `target` query parameter and a path segment. */
export const TARGET_NAME = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
/**
 * Label names a target may not set: Prometheus' own, and every label our series carry (a
 * target label of the same name would rename the series' own to exported_<name>).
 */
export const RESERVED_LABELS = new Set(['job', 'instance', 'target', 'gpu', 'worker', 'proof_kind', 'state', 'reason', 'surface', 'version', 'source', 'backend', 'surfaces', 'name', 'uuid', 'pci_bus_id', 'le', 'quantile']);
const TARGET_KEYS = ['name', 'labels', 'grpc_address', 'status_url', 'timeline_file', 'timeline_command'];

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

export class TargetsFileError extends Error {}

/** Reads, parses and validates a targets file. Throws TargetsFileError with one readable line. */
export function loadTargetsFile(file: string): TargetSpec[] {
  let text: string;
  try {
    const st = fs.statSync(file);
    if (st.isDirectory()) throw new TargetsFileError(`targets file ${file} is a directory`);
    if (st.size > MAX_TARGETS_FILE_BYTES) throw new TargetsFileError(`targets file ${file}: larger than 1 MiB`);
    text = fs.readFileSync(file, 'utf8');
  } catch (e) {
    if (e instanceof TargetsFileError) throw e;
    throw new TargetsFileError(`targets file ${file}: cannot read (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
  }
  if (text.length > MAX_TARGETS_FILE_BYTES) throw new TargetsFileError(`targets file ${file}: larger than 1 MiB`);
  return parseTargets(text, file);
}

/** Parses and validates the text of a targets file; `file` names it in messages and anchors relative paths. */
export function parseTargets(text: string, file: string): TargetSpec[] {
  let doc: unknown;
  if (yamlNestingDepth(text) > MAX_NESTING) throw new TargetsFileError(`targets file ${file}: not valid YAML: nested too deeply (more than ${MAX_NESTING} levels)`);
  try {
    doc = YAML.parse(text, { uniqueKeys: true, maxAliasCount: 100 });
  } catch (e) {
    const msg = e instanceof RangeError || /Maximum call stack/.test((e as Error).message) ? 'nested too deeply' : yamlErrorLine(e as Error, text);
    throw new TargetsFileError(`targets file ${file}: not valid YAML: ${msg}`);
  }
  const fail = (what: string): never => {
    throw new TargetsFileError(`targets file ${file}: ${what}`);
  };
  if (!isObj(doc)) fail('the top level must be a mapping with a "targets" list');
  const top = doc as Obj;
  for (const k of Object.keys(top)) if (k !== 'targets') fail(`unknown key "${k}" at the top level (allowed: targets)`);
  const list = top.targets;
  if (!Array.isArray(list)) fail('"targets" must be a list of targets (each with a name and at least one surface)');
  const targets = list as unknown[];
  if (targets.length > MAX_TARGETS) fail(`${targets.length} targets: at most ${MAX_TARGETS}`);
  const dir = path.dirname(path.resolve(file));
  const seen = new Set<string>();
  return targets.map((t, i) => {
    const spec = parseTarget(t, i, dir, (what) => fail(what));
    if (seen.has(spec.name)) fail(`target "${spec.name}" is listed twice (names are the instance label: they must be unique)`);
    seen.add(spec.name);
    return spec;
  });
}

function parseTarget(t: unknown, i: number, dir: string, fail: (what: string) => never): TargetSpec {
  if (!isObj(t)) return fail(`targets[${i}] must be a mapping (name, labels, grpc_address, status_url, timeline_file or timeline_command)`);
  const rawName = t.name;
  if (typeof rawName !== 'string') return fail(`targets[${i}] needs a name (a string)`);
  if (!TARGET_NAME.test(rawName)) {
    return fail(`targets[${i}]: name ${JSON.stringify(rawName.slice(0, 140))} must be 1-128 letters, digits and ._:- starting with a letter or digit`);
  }
  const name = rawName;
  const where = `target "${name}"`;
  for (const k of Object.keys(t)) if (!TARGET_KEYS.includes(k)) fail(`${where}: unknown key "${k}" (allowed: ${TARGET_KEYS.join(', ')})`);
  const spec: TargetSpec = { name, labels: parseLabels(t.labels, where, fail) };

  const str = (key: string): string | undefined => {
    const v = t[key];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'string' || v.trim() === '') return fail(`${where}: ${key} must be a non-empty string`);
    return v;
  };
  const grpc = str('grpc_address');
  if (grpc !== undefined) {
    try {
      grpcTarget(grpc);
    } catch (e) {
      fail(`${where}: ${(e as Error).message.replace(/^--cuzk\.grpc-address /, 'grpc_address ')}`);
    }
    spec.grpcAddress = grpc;
  }
  const url = str('status_url');
  if (url !== undefined) {
    let u: URL | null = null;
    try {
      u = new URL(url);
    } catch {
      u = null;
    }
    if (!u || (u.protocol !== 'http:' && u.protocol !== 'https:') || u.hostname === '') fail(`${where}: status_url "${url}" is not an http:// or https:// URL (for example http://10.0.0.17:9821/status)`);
    spec.statusUrl = url;
  }
  const file = str('timeline_file');
  if (file !== undefined) {
    if (file === '-') fail(`${where}: timeline_file "-" (standard input) cannot feed a fleet: use timeline_command, e.g. [journalctl, -fu, cuzk, -o, cat, --lines=0]`);
    const abs = path.resolve(dir, file);
    let st: fs.Stats | null = null;
    try {
      st = fs.statSync(abs);
    } catch {
      // Not there yet is fine (followed like tail -F); a folder that is not there is a typo.
      if (!fs.existsSync(path.dirname(abs))) fail(`${where}: timeline_file "${file}": folder ${path.dirname(abs)} does not exist`);
    }
    if (st && st.isDirectory()) fail(`${where}: timeline_file "${file}" is a directory, not cuzk's log file`);
    spec.timelineFile = abs;
  }
  if (t.timeline_command !== undefined && t.timeline_command !== null) {
    if (file !== undefined) fail(`${where}: give timeline_file or timeline_command, not both`);
    spec.timelineCommand = parseCommand(t.timeline_command, where, fail);
  }
  if (!spec.grpcAddress && !spec.statusUrl && !spec.timelineFile && !spec.timelineCommand) {
    fail(`${where}: give at least one surface: grpc_address (cuzk's [daemon] listen), timeline_file or timeline_command (its log), status_url (its status_listen)`);
  }
  return spec;
}

function parseLabels(v: unknown, where: string, fail: (what: string) => never): Record<string, string> {
  if (v === undefined || v === null) return {};
  if (!isObj(v)) return fail(`${where}: labels must be a mapping of label names to strings`);
  const keys = Object.keys(v);
  if (keys.length > MAX_LABELS) fail(`${where}: ${keys.length} labels: at most ${MAX_LABELS}`);
  const out: Record<string, string> = {};
  for (const k of keys) {
    if (!LABEL_NAME.test(k) || k.startsWith('__')) fail(`${where}: label name "${k.slice(0, 64)}" is not a Prometheus label name ([a-zA-Z_][a-zA-Z0-9_]*, not starting with __)`);
    if (RESERVED_LABELS.has(k)) fail(`${where}: label "${k}" is reserved (Prometheus' own, or a label the exporter's series carry)`);
    const val = v[k];
    if (typeof val !== 'string') fail(`${where}: label "${k}" must be a string (quote it: "${String(val).slice(0, 64)}")`);
    if ((val as string).length > MAX_LABEL_VALUE) fail(`${where}: label "${k}" is longer than ${MAX_LABEL_VALUE} characters`);
    out[k] = val as string;
  }
  return out;
}

function parseCommand(v: unknown, where: string, fail: (what: string) => never): string[] {
  if (typeof v === 'string') {
    return fail(`${where}: timeline_command must be a list (argv, run without a shell), e.g. [ssh, gpu-17, journalctl, -fu, cuzk, -o, cat, --lines=0]`);
  }
  if (!Array.isArray(v) || v.length === 0) return fail(`${where}: timeline_command must be a non-empty list (argv, run without a shell)`);
  if (v.length > MAX_COMMAND_ARGS) fail(`${where}: timeline_command has ${v.length} arguments: at most ${MAX_COMMAND_ARGS}`);
  const argv = v.map((a, j) => {
    if (typeof a !== 'string' && typeof a !== 'number') return fail(`${where}: timeline_command[${j}] must be a string`);
    const s = String(a);
    if (s.length > MAX_COMMAND_ARG) fail(`${where}: timeline_command[${j}] is longer than ${MAX_COMMAND_ARG} characters`);
    if (s.includes('\0')) fail(`${where}: timeline_command[${j}] contains a NUL character`);
    return s;
  });
  if (argv[0] === '') fail(`${where}: timeline_command[0] (the program) is empty`);
  if (!findExecutable(argv[0])) fail(`${where}: timeline_command program "${argv[0]}" is not ${argv[0].includes('/') ? 'an executable file' : 'an executable found in PATH'}`);
  return argv;
}

/** The program's path if it exists and is executable (looked up in PATH without a "/"). */
export function findExecutable(prog: string, env: NodeJS.ProcessEnv = process.env): string | null {
  const ok = (p: string) => {
    try {
      fs.accessSync(p, fs.constants.X_OK);
      const st = fs.statSync(p);
      // (root passes access(X_OK) for files nobody may execute)
      return st.isFile() && (st.mode & 0o111) !== 0;
    } catch {
      return false;
    }
  };
  if (prog.includes('/')) return ok(prog) ? prog : null;
  for (const d of (env.PATH ?? '').split(path.delimiter)) {
    if (!d) continue;
    const p = path.join(d, prog);
    if (ok(p)) return p;
  }
  return null;
}

/** Same target, same surfaces (labels may differ: those change without restarting it). */
export function sameSurfaces(a: TargetSpec, b: TargetSpec): boolean {
  return (
    a.name === b.name &&
    a.grpcAddress === b.grpcAddress &&
    a.statusUrl === b.statusUrl &&
    a.timelineFile === b.timelineFile &&
    JSON.stringify(a.timelineCommand ?? null) === JSON.stringify(b.timelineCommand ?? null)
  );
}
