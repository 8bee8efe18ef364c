/**
 * The koffi binding of native/include/cuzk_engine.h (src/engine/sources/native/abi.ts), on
 * the real reference library and on tiny stand-in libraries compiled here. Expectations come
 * from the header (enum values, counter word offsets, "every fallible call returns a status
 * and fills the caller's error buffer"), from native/README.md (the library's status names)
 * and from what a user must be told when the library is missing, is not a library, does not
 * implement the ABI or implements another version of it.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { ABI_VERSION, CTR, ERR_BUF_SIZE, NativeError, STATUS, check, defaultLibraryPath, errText, loadLibrary } from '../../src/engine/sources/native/abi';
import { NativeEngine } from '../../src/engine/sources/native/native-engine';

const ROOT = path.join(__dirname, '..', '..');
const HEADER = fs.readFileSync(path.join(ROOT, 'native', 'include', 'cuzk_engine.h'), 'utf8');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'cuzk-abi-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

/** `#define NAME 12u` values of the header. */
function define(name: string): number {
  const m = new RegExp(`#define ${name}\\s+(\\d+)u`).exec(HEADER);
  if (!m) throw new Error(`header has no #define ${name}`);
  return Number(m[1]);
}
/** `NAME = 3,` enum values of the header. */
function enumValue(name: string): number {
  const m = new RegExp(`\\b${name}\\s*=\\s*(\\d+)`).exec(HEADER);
  if (!m) throw new Error(`header has no enum value ${name}`);
  return Number(m[1]);
}

/**
 * A stand-in library: every function of the header, each returning a fixed answer, and
 * cuzk_abi_version() returning `abi`. `omit` leaves one function out.
 */
let stubs = 0;
function stubLibrary(abi: number, omit?: string): string {
  const fns: Array<[string, string]> = [
    ['cuzk_abi_version', `unsigned cuzk_abi_version(void) { return ${abi}u; }`],
    ['cuzk_status_name', 'const char *cuzk_status_name(int s) { (void)s; return "STUB"; }'],
    ['cuzk_now_ns', 'unsigned long long cuzk_now_ns(void) { return 1; }'],
    ['cuzk_engine_open', 'int cuzk_engine_open(const char *c, void **o, char *e, size_t n) { (void)c; (void)o; (void)e; (void)n; return 8; }'],
    ['cuzk_engine_close', 'int cuzk_engine_close(void **x, char *e, size_t n) { (void)x; (void)e; (void)n; return 0; }'],
    ['cuzk_submit', 'int cuzk_submit(void) { return 8; }'],
    ['cuzk_await', 'int cuzk_await(void) { return 8; }'],
    ['cuzk_cancel', 'int cuzk_cancel(void) { return 8; }'],
    ['cuzk_proof_copy', 'int cuzk_proof_copy(void) { return 8; }'],
    ['cuzk_proof_verify', 'int cuzk_proof_verify(void) { return 8; }'],
    ['cuzk_events_drain', 'int cuzk_events_drain(void) { return 8; }'],
    ['cuzk_events_wait', 'int cuzk_events_wait(void) { return 8; }'],
    ['cuzk_counters_read', 'int cuzk_counters_read(void) { return 8; }'],
    ['cuzk_status_json', 'int cuzk_status_json(void) { return 8; }'],
    ['cuzk_job_id', 'int cuzk_job_id(void) { return 8; }'],
  ];
  const n = ++stubs;
  const src = path.join(tmp, `stub${n}.c`);
  const so = path.join(tmp, `libstub${n}.so`);
  fs.writeFileSync(src, '#include <stddef.h>\n' + fns.filter(([name]) => name !== omit).map(([, body]) => body).join('\n') + '\n');
  execFileSync('cc', ['-shared', '-fPIC', '-o', so, src], { stdio: 'pipe' });
  return so;
}

describe('constants agree with cuzk_engine.h', () => {
  test('ABI version', () => {
    expect(ABI_VERSION).toBe(define('CUZK_ABI_VERSION'));
  });

  test('status codes', () => {
    const names = ['OK', 'EINVAL', 'ENOMEM', 'ENOTFOUND', 'ETIMEDOUT', 'ECLOSED', 'EFULL', 'ERANGE', 'EINTERNAL'] as const;
    expect(Object.keys(STATUS).sort()).toEqual([...names].sort());
    for (const n of names) expect([n, STATUS[n]]).toEqual([n, enumValue(`CUZK_${n}`)]);
  });

  test('counter word offsets', () => {
    const map: Record<string, string> = {
      HDR_WORDS: 'CUZK_CTR_HDR_WORDS',
      NOW_NS: 'CUZK_CTR_NOW_NS',
      LAST_SEQ: 'CUZK_CTR_LAST_SEQ',
      GPUS: 'CUZK_CTR_GPUS',
      WORKERS_PER_GPU: 'CUZK_CTR_WORKERS_PER_GPU',
      KINDS: 'CUZK_CTR_KINDS',
      EVENTS_EMITTED: 'CUZK_CTR_EVENTS_EMITTED',
      EVENTS_OVERWRITTEN: 'CUZK_CTR_EVENTS_OVERWRITTEN',
      SYNTH_ACTIVE: 'CUZK_CTR_SYNTH_ACTIVE',
      SYNTH_MAX: 'CUZK_CTR_SYNTH_MAX',
      MEM_BUDGET: 'CUZK_CTR_MEM_BUDGET',
      MEM_USED: 'CUZK_CTR_MEM_USED',
      UPTIME_NS: 'CUZK_CTR_UPTIME_NS',
      KIND_WORDS: 'CUZK_CTR_KIND_WORDS',
      K_GPU_NS: 'CUZK_CTRK_GPU_NS',
      K_SYNTH_NS: 'CUZK_CTRK_SYNTH_NS',
      K_PARTS_COMPLETED: 'CUZK_CTRK_PARTS_COMPLETED',
      K_PARTS_FAILED: 'CUZK_CTRK_PARTS_FAILED',
      K_PROOFS_COMPLETED: 'CUZK_CTRK_PROOFS_COMPLETED',
      K_PROOFS_FAILED: 'CUZK_CTRK_PROOFS_FAILED',
      K_PROOFS_CANCELLED: 'CUZK_CTRK_PROOFS_CANCELLED',
      K_QUEUE_DEPTH: 'CUZK_CTRK_QUEUE_DEPTH',
      K_FINALIZE_NS: 'CUZK_CTRK_FINALIZE_NS',
      GPU_WORDS: 'CUZK_CTR_GPU_WORDS',
      G_LOCK_HELD_NS: 'CUZK_CTRG_LOCK_HELD_NS',
      G_STARVED_NS: 'CUZK_CTRG_STARVED_NS',
      G_LOCK_ACQUIRES: 'CUZK_CTRG_LOCK_ACQUIRES',
      WORKER_WORDS: 'CUZK_CTR_WORKER_WORDS',
      W_BUSY_NS: 'CUZK_CTRW_BUSY_NS',
      W_PARTITIONS: 'CUZK_CTRW_PARTITIONS',
      W_BUSY: 'CUZK_CTRW_BUSY',
    };
    expect(Object.keys(CTR).sort()).toEqual(Object.keys(map).sort());
    for (const [k, def] of Object.entries(map)) expect([k, CTR[k as keyof typeof CTR]]).toEqual([k, define(def)]);
  });
});

describe('loadLibrary', () => {
  test('the reference library: loaded once per path, the ABI usable', () => {
    const lib = loadLibrary();
    expect(lib.path).toBe(path.join(ROOT, 'native', 'build', 'libcuzk_engine.so'));
    expect(defaultLibraryPath()).toBe(lib.path);
    // Once per path: the same path, spelt relatively, gives the same binding.
    expect(loadLibrary(lib.path)).toBe(lib);
    expect(loadLibrary(path.relative(process.cwd(), lib.path))).toBe(lib);
    expect(lib.abiVersion()).toBe(2);
    // The library's own names (native/src/names.c: "unknown" out of range).
    expect(lib.statusName(STATUS.ERANGE)).toBe('ERANGE');
    expect(lib.statusName(42)).toBe('unknown');
    const a = lib.nowNs() as number;
    const b = lib.nowNs() as number;
    expect(b).toBeGreaterThanOrEqual(a);
    expect(a).toBeGreaterThan(0);
  });

  test('a missing file is named, with no build hint for a path the user chose', () => {
    const p = path.join(tmp, 'nope', 'libcuzk_engine.so');
    let e: Error | undefined;
    try {
      loadLibrary(p);
    } catch (x) {
      e = x as Error;
    }
    expect(e?.message).toBe(`native library not found at ${p}`);
    // Relative paths are resolved before they are named.
    expect(() => loadLibrary('no-such-dir/libx.so')).toThrow(`native library not found at ${path.resolve('no-such-dir/libx.so')}`);
  });

  test('a file that is not a shared library', () => {
    const p = path.join(tmp, 'not-a-library.so');
    fs.writeFileSync(p, 'hello\n');
    expect(() => loadLibrary(p)).toThrow(new RegExp(`^cannot load native library ${p.replace(/[.]/g, '\\.')}: .+`));
  });

  test('a library that lacks one of the ABI functions', () => {
    const p = stubLibrary(2, 'cuzk_job_id');
    expect(() => loadLibrary(p)).toThrow(new RegExp(`^${p.replace(/[.]/g, '\\.')} does not implement the cuzk ABI \\(.+\\)$`));
  });

  test('another ABI version is refused, and not remembered as loaded', () => {
    const p = stubLibrary(1);
    const msg = `${p} implements cuzk ABI version 1, this exporter speaks version 2`;
    expect(() => loadLibrary(p)).toThrow(msg);
    expect(() => loadLibrary(p)).toThrow(msg);
    expect(() => NativeEngine.open({}, p)).toThrow(msg);
  });

  test('a complete stand-in of the right version loads, and its failures come back as NativeError', () => {
    const p = stubLibrary(2);
    const lib = loadLibrary(p);
    expect(lib.path).toBe(p);
    expect(lib.abiVersion()).toBe(2);
    // Its cuzk_engine_open fails with status 8 and writes no message.
    let e: unknown;
    try {
      NativeEngine.open({}, p);
    } catch (x) {
      e = x;
    }
    expect(e).toBeInstanceOf(NativeError);
    expect(e).toMatchObject({ fn: 'cuzk_engine_open', status: 8, statusName: 'STUB' });
    // An empty message from the library still leaves a readable text after the status.
    expect((e as Error).message).toMatch(/^cuzk_engine_open: STUB: \S/);
  });
});

describe('errText and check', () => {
  test('errText reads up to the NUL, or the whole buffer without one', () => {
    const b = Buffer.alloc(16);
    expect(errText(b)).toBe('');
    b.write('bad key\0junk');
    expect(errText(b)).toBe('bad key');
    expect(errText(Buffer.from('no terminator'))).toBe('no terminator');
    expect(ERR_BUF_SIZE).toBeGreaterThanOrEqual(256);
  });

  test('OK passes; every other status becomes a NativeError with the library name and message', () => {
    const lib = loadLibrary();
    const err = Buffer.alloc(ERR_BUF_SIZE);
    err.write('the library said so\0');
    expect(() => check(lib, 'cuzk_x', STATUS.OK, err)).not.toThrow();
    for (const [name, code] of Object.entries(STATUS)) {
      if (code === STATUS.OK) continue;
      let e: unknown;
      try {
        check(lib, 'cuzk_x', code, err);
      } catch (x) {
        e = x;
      }
      expect(e).toBeInstanceOf(NativeError);
      expect(e).toBeInstanceOf(Error);
      const ne = e as NativeError;
      expect({ name: ne.name, fn: ne.fn, status: ne.status, statusName: ne.statusName, message: ne.message }).toEqual({
        name: 'NativeError',
        fn: 'cuzk_x',
        status: code,
        statusName: name,
        message: `cuzk_x: ${name}: the library said so`,
      });
    }
    // A status the library does not know, and no message.
    let e: NativeError | undefined;
    try {
      check(lib, 'cuzk_y', 99, Buffer.alloc(8));
    } catch (x) {
      e = x as NativeError;
    }
    expect(e?.statusName).toBe('unknown');
    expect(e?.message).toMatch(/^cuzk_y: unknown: \S+/);
  });

  test('a real failing call: the message is the library\'s, naming the config key', () => {
    let e: unknown;
    try {
      NativeEngine.open({ gpus: 0 });
    } catch (x) {
      e = x;
    }
    expect(e).toBeInstanceOf(NativeError);
    expect(e).toMatchObject({ fn: 'cuzk_engine_open', status: STATUS.EINVAL, statusName: 'EINVAL' });
    expect((e as Error).message).toMatch(/^cuzk_engine_open: EINVAL: config: key "gpus"/);
  });
});
