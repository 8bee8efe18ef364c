/**
 * grpc-wire.ts at its edges (issue 23), in-process and without a daemon: the wire walk that
 * bounds GetStatus' gpus before decoding (protobuf encoding: varints of at most 10 bytes,
 * tag = field << 3 | wire type, wire types 0/1/2/5, lengths that must fit the buffer), the
 * guarded service around grpc-js' decoder, cuzk's GetMetrics text as upstream cuzk-server
 * writes it (`service.rs` get_metrics: `name value\n`, per-kind `name{proof_kind="x"} value`),
 * grpc-js' connection-error text, and GetStatus validation at the GRPC_LIMITS bounds.
 * Byte strings are hand-encoded; expected values come from the encoding rules and the
 * module's header comments.
 */
import {
  GRPC_LIMITS,
  countRepeatedField,
  grpcDetail,
  guardedService,
  loadCuzkProto,
  metricsKindIndex,
  parseCuzkMetrics,
  provingEngineService,
  validateStatus,
} from '../../src/engine/sources/attach/grpc-wire';

const hex = (h: string) => Buffer.from(h.replace(/\s+/g, ''), 'hex');
const count = (h: string, field = 1, limit = 100) => countRepeatedField(hex(h), field, limit);

describe('countRepeatedField: the protobuf wire walk', () => {
  test('length-delimited entries of the field are counted, other fields skipped', () => {
    expect(count('')).toBe(0);
    expect(count('0a00')).toBe(1); // field 1, wire 2, length 0
    expect(count('0a00 0a00 0a00')).toBe(3);
    expect(count('0a00 1200 0a00', 2)).toBe(1); // field 2 = tag 0x12
    expect(count('0a02 4142 1a01 41 0a00')).toBe(2); // field 3 in between, bytes skipped by length
    expect(count('0a02 0000')).toBe(1); // the entry ends exactly at the end
  });

  test('every occurrence of the field counts, whatever its wire type (protobufjs decodes each as a message)', () => {
    // 08 00 (wire 0), 09 + 8 bytes (wire 1), 0d + 4 bytes (wire 5), 0a 00 (wire 2).
    expect(count('0800 09 0000000000000000 0d 00000000 0a00')).toBe(4);
    // the same wire types under another field are skipped by their size
    expect(count('1801 19 ffffffffffffffff 1d ffffffff 0a00')).toBe(1);
  });

  test('multi-byte varints: lengths of 128 and 300, a field number of 16, a 10-byte value', () => {
    // length 128 = 80 01, length 300 = ac 02; the bytes inside (ff) would be malformed if walked
    expect(count(`0a8001 ${'ff'.repeat(128)} 0a00`)).toBe(2);
    expect(count(`0aac02 ${'ff'.repeat(300)} 0a00`)).toBe(2);
    // field 16, wire 2: tag 130 = 82 01
    expect(count('8201 00 0a00', 16)).toBe(1);
    expect(count('8201 00 0a00', 1)).toBe(1);
    expect(count('8201 00 8201 00', 2)).toBe(0);
    // field 3, wire 0, value 2^64 - 1 (10 bytes), then one entry
    expect(count(`18 ${'ff'.repeat(9)}01 0a00`)).toBe(1);
  });

  test('not a well-formed message: Infinity', () => {
    expect(count('0a')).toBe(Infinity); // length missing
    expect(count('0a05 0000')).toBe(Infinity); // length past the end
    expect(count('18')).toBe(Infinity); // varint value missing
    expect(count('1880')).toBe(Infinity); // varint cut inside
    expect(count(`18 ${'80'.repeat(10)}00`)).toBe(Infinity); // an 11-byte varint
    expect(count(`${'80'.repeat(10)}00 01`)).toBe(Infinity); // an 11-byte tag
    expect(count('19 00000000')).toBe(Infinity); // fixed64 cut short
    expect(count('1d 0000')).toBe(Infinity); // fixed32 cut short
    expect(count('0a00 19 0000000000000000')).toBe(1); // ... and whole
    expect(count('0a00 1d 00000000')).toBe(1);
    for (const wire of ['1b', '1c', '1e', '1f']) expect(count(`0a00 ${wire} 00`)).toBe(Infinity); // wire types 3, 4, 6, 7
    expect(count('0aff')).toBe(Infinity); // length varint cut inside
    expect(count(`18 ${'80'.repeat(10)} 0a00`)).toBe(Infinity); // an 11-byte value, then what would read as an entry
    expect(count(`0a ${'80'.repeat(10)} 00 0a00`)).toBe(Infinity); // an 11-byte length, the same
    expect(count('0000 0a00')).toBe(Infinity); // field number 0 (protobuf field numbers start at 1)
    expect(count('0a00 0701')).toBe(Infinity); // field 0, wire type 7
    expect(count('0801 1000', 2)).toBe(1); // the smallest tags are fine: field 1 wire 0, field 2 wire 0
  });

  test('stops past the limit: limit + 1 without reading further; at the limit the whole message is still checked', () => {
    expect(count('0a00 0a00 0a00', 1, 2)).toBe(3);
    expect(count('0a00 0a00 0a00 ff', 1, 2)).toBe(3); // the garbage after is never reached
    expect(count('0a00 0a00', 1, 2)).toBe(2);
    expect(count('0a00 0a00 ff', 1, 2)).toBe(Infinity); // exactly at the limit: the rest is walked
    expect(count('0a00', 1, 0)).toBe(1);
    expect(count('1200 1200', 1, 0)).toBe(0);
  });
});

describe('guardedService: GetStatus bounded before grpc-js decodes it', () => {
  const plain = provingEngineService().GetStatus;
  const encode = (gpus: number) =>
    plain.responseSerialize({ gpus: Array.from({ length: gpus }, (_, k) => ({ ordinal: k, name: `GPU ${k}` })), uptime_seconds: 5, total_proofs_completed: 7 });

  test('up to the bound the answer decodes as cuzk.v1 (field names kept, uint64 as strings, defaults filled)', () => {
    const m = guardedService(3).GetStatus.responseDeserialize(encode(3)) as Record<string, any>;
    expect(m.gpus).toHaveLength(3);
    expect(m.gpus[2]).toMatchObject({ ordinal: 2, name: 'GPU 2', current_job_id: '', current_proof_kind: '' });
    expect(m.uptime_seconds).toBe('5');
    expect(m.total_proofs_completed).toBe('7');
    expect(m.total_proofs_failed).toBe('0');
    expect(m.queues).toEqual([]);
  });

  test('over the bound, or not a message: refused with the reason', () => {
    expect(() => guardedService(2).GetStatus.responseDeserialize(encode(3))).toThrow('parse refused: GetStatusResponse has more than 2 gpus entries');
    expect(() => guardedService(2).GetStatus.responseDeserialize(hex('0a05 00'))).toThrow('parse refused: GetStatusResponse is not a protobuf message');
  });

  test('gpus sent under wire type 0 count too (protobufjs would decode each as a GPUStatus)', () => {
    const sneaky = hex('0800'.repeat(3));
    expect((plain.responseDeserialize(sneaky) as { gpus: unknown[] }).gpus).toHaveLength(3); // why they must count
    expect(() => guardedService(2).GetStatus.responseDeserialize(sneaky)).toThrow(/more than 2 gpus/);
  });

  test('the other methods and the GetStatus path are the plain service', () => {
    const g = guardedService(1);
    expect(g.GetStatus.path).toBe('/cuzk.v1.ProvingEngine/GetStatus');
    expect(g.GetMetrics).toBe(provingEngineService().GetMetrics);
    expect(Object.keys(g).sort()).toEqual(Object.keys(provingEngineService()).sort());
    expect(loadCuzkProto()).toBe(loadCuzkProto()); // the proto file is read once
  });
});

/** cuzk-server's GetMetrics text (service.rs get_metrics), hand-written. */
const UPSTREAM = [
  '# HELP cuzk_proofs_completed_total Total proofs completed',
  '# TYPE cuzk_proofs_completed_total counter',
  'cuzk_proofs_completed_total 12',
  '# HELP cuzk_proofs_failed_total Total proofs failed',
  '# TYPE cuzk_proofs_failed_total counter',
  'cuzk_proofs_failed_total 2',
  '# HELP cuzk_uptime_seconds Daemon uptime',
  '# TYPE cuzk_uptime_seconds gauge',
  'cuzk_uptime_seconds 3600',
  '# HELP cuzk_queue_depth Current queue depth',
  '# TYPE cuzk_queue_depth gauge',
  'cuzk_queue_depth 4',
  '# HELP cuzk_proofs_completed Per proof-kind completions',
  '# TYPE cuzk_proofs_completed counter',
  'cuzk_proofs_completed{proof_kind="porep_c2"} 5',
  'cuzk_proofs_completed{proof_kind="window_post"} 7',
  '# HELP cuzk_proofs_failed Per proof-kind failures',
  '# TYPE cuzk_proofs_failed counter',
  'cuzk_proofs_failed{proof_kind="snap_update"} 2',
  '# HELP cuzk_proof_duration_seconds Proof duration',
  '# TYPE cuzk_proof_duration_seconds summary',
  'cuzk_proof_duration_seconds_count{proof_kind="porep_c2"} 5',
  'cuzk_proof_duration_seconds_sum{proof_kind="porep_c2"} 612.125',
  '# HELP cuzk_running_jobs Currently running proofs',
  '# TYPE cuzk_running_jobs gauge',
  'cuzk_running_jobs 1',
  '# HELP cuzk_gpu_workers Number of GPU workers',
  '# TYPE cuzk_gpu_workers gauge',
  'cuzk_gpu_workers 8',
].join('\n');

describe("parseCuzkMetrics: cuzk's GetMetrics text", () => {
  test("upstream's text: every scalar and per-kind map, the summary ignored, nothing bad", () => {
    const m = parseCuzkMetrics(`${UPSTREAM}\n`);
    expect(m).toEqual({
      uptimeSeconds: 3600,
      totalCompleted: 12,
      totalFailed: 2,
      queueDepth: 4,
      runningJobs: 1,
      gpuWorkers: 8,
      completed: new Map([['porep_c2', 5], ['window_post', 7]]),
      failed: new Map([['snap_update', 2]]),
      bad: 0,
    });
    // the last line without its newline is a line too
    expect(parseCuzkMetrics(UPSTREAM).gpuWorkers).toBe(8);
    expect(parseCuzkMetrics('cuzk_gpu_workers 8').gpuWorkers).toBe(8);
    // an empty first line, comment and blank lines between samples
    expect(parseCuzkMetrics('\ncuzk_uptime_seconds 5\n\n#{\n# cuzk_queue_depth 3\ncuzk_queue_depth 4\n')).toMatchObject({ uptimeSeconds: 5, queueDepth: 4, bad: 0 });
  });

  test('nothing: all unknown', () => {
    expect(parseCuzkMetrics('')).toEqual({ uptimeSeconds: null, totalCompleted: null, totalFailed: null, queueDepth: null, runningJobs: null, gpuWorkers: null, completed: new Map(), failed: new Map(), bad: 0 });
    expect(parseCuzkMetrics('\n\n# cuzk_uptime_seconds 5\nsome_other_metric banana\nother{proof_kind="x"} -3\n').bad).toBe(0);
  });

  test('values: plain decimal counts up to 2^53 - 1; anything else is bad and leaves the field unknown', () => {
    const one = (v: string) => parseCuzkMetrics(`cuzk_queue_depth ${v}\n`);
    expect(one('0')).toMatchObject({ queueDepth: 0, bad: 0 });
    expect(one('9007199254740991')).toMatchObject({ queueDepth: 9007199254740991, bad: 0 });
    for (const v of ['9007199254740992', '9999999999999999', '12345678901234567', '', '5.0', '+5', '-1', '1e3', '0x10', 'NaN', 'x5', '5x', '١٢'])
      expect([v, one(v)]).toEqual([v, expect.objectContaining({ queueDepth: null, bad: 1 })]);
    // whitespace before the value, and a timestamp after it (the text format allows one)
    expect(parseCuzkMetrics('cuzk_queue_depth  \t 6\n').queueDepth).toBe(6);
    expect(parseCuzkMetrics('cuzk_queue_depth 6 1700000000000\n').queueDepth).toBe(6);
    // a name with no value: bad, and the next line is its own sample
    expect(parseCuzkMetrics('cuzk_queue_depth\ncuzk_uptime_seconds 5\n')).toMatchObject({ queueDepth: null, uptimeSeconds: 5, bad: 1 });
    expect(parseCuzkMetrics('cuzk_queue_depth \n7\n')).toMatchObject({ queueDepth: null, bad: 1 });
  });

  test('labels: scalars take none; per-kind samples need exactly proof_kind="1-64 chars without quote or backslash"', () => {
    expect(parseCuzkMetrics('cuzk_uptime_seconds{} 5\n')).toMatchObject({ uptimeSeconds: null, bad: 1 });
    expect(parseCuzkMetrics('cuzk_running_jobs{proof_kind="porep_c2"} 5\n')).toMatchObject({ runningJobs: null, bad: 1 });
    const kinds = (label: string) => {
      const m = parseCuzkMetrics(`cuzk_proofs_completed${label} 3\ncuzk_proofs_failed${label} 4\n`);
      return { completed: [...m.completed], failed: [...m.failed], bad: m.bad };
    };
    expect(kinds('{proof_kind="porep_c2"}')).toEqual({ completed: [['porep_c2', 3]], failed: [['porep_c2', 4]], bad: 0 });
    const k64 = 'k'.repeat(64);
    expect(kinds(`{proof_kind="${k64}"}`)).toEqual({ completed: [[k64, 3]], failed: [[k64, 4]], bad: 0 });
    for (const label of ['', '{}', `{proof_kind="${'k'.repeat(65)}"}`, '{proof_kind=""}', '{xproof_kind="a"}', '{proof_kind="a",x="y"}', '{proof_kind="a\\"b"}', '{proof_kind="a\\\\"}', '{proof_kind=a}', '{proof_kind="a"'])
      expect([label, kinds(label)]).toEqual([label, { completed: [], failed: [], bad: 2 }]);
    // a label value cannot run past its line's end (the brace that closes it is on the next line)
    expect(parseCuzkMetrics('cuzk_proofs_completed{proof_kind="a\nb"} 3\n')).toMatchObject({ completed: new Map(), bad: 1 });
    // an unclosed brace does not swallow the next line
    expect(parseCuzkMetrics('cuzk_proofs_completed{proof_kind="a" 3\ncuzk_proofs_failed{proof_kind="b"} 4\n')).toMatchObject({ failed: new Map([['b', 4]]), completed: new Map(), bad: 1 });
    // the value is read after the closing brace
    expect(parseCuzkMetrics('cuzk_proofs_completed{proof_kind="a"}9\n').completed.get('a')).toBe(9);
  });

  test('at most 64 kinds per map; a kind already held is still updated', () => {
    const lines: string[] = [];
    for (let k = 0; k < 65; k++) lines.push(`cuzk_proofs_completed{proof_kind="k${k}"} ${k}`);
    lines.push('cuzk_proofs_completed{proof_kind="k0"} 100');
    for (let k = 0; k < 64; k++) lines.push(`cuzk_proofs_failed{proof_kind="f${k}"} 1`);
    const m = parseCuzkMetrics(lines.join('\n'));
    expect(GRPC_LIMITS.kinds).toBe(64);
    expect(m.completed.size).toBe(64);
    expect(m.completed.has('k64')).toBe(false);
    expect(m.completed.get('k0')).toBe(100);
    expect(m.failed.size).toBe(64);
    expect(m.bad).toBe(1);
  });

  test('at most 20,000 lines are read', () => {
    const filler = (n: number) => '#\n'.repeat(n);
    expect(parseCuzkMetrics(`${filler(GRPC_LIMITS.metricLines - 1)}cuzk_uptime_seconds 5\n`).uptimeSeconds).toBe(5);
    expect(parseCuzkMetrics(`${filler(GRPC_LIMITS.metricLines)}cuzk_uptime_seconds 5\n`).uptimeSeconds).toBeNull();
    expect(parseCuzkMetrics(`${'\n'.repeat(GRPC_LIMITS.metricLines)}cuzk_uptime_seconds 5\n`).uptimeSeconds).toBeNull(); // empty lines count
    expect(GRPC_LIMITS.metricLines).toBe(20_000);
  });

  test("cuzk's kind spelling to our slot", () => {
    expect(metricsKindIndex('porep_c2')).toBe(0);
    expect(metricsKindIndex('snap_update')).toBe(1);
    expect(metricsKindIndex('window_post')).toBe(2);
    expect(metricsKindIndex('winning_post')).toBe(3);
    expect(metricsKindIndex('quantum_post')).toBe(-1);
    expect(metricsKindIndex('porepc2')).toBe(-1);
  });
});

describe("grpcDetail: grpc-js' connection error without its wrappers", () => {
  test('the cases in its header', () => {
    expect(grpcDetail('No connection established. Last error: Error: connect ENOENT /run/cuzk.sock. Resolution note: ')).toBe('connect ENOENT /run/cuzk.sock');
    expect(grpcDetail('No connection established. Last error: connect ECONNREFUSED 127.0.0.1:1. Resolution note: ')).toBe('connect ECONNREFUSED 127.0.0.1:1');
    expect(grpcDetail('No connection established. Last error: Error: getaddrinfo ENOTFOUND prover-1. Resolution note: DNS lookup failed')).toBe('getaddrinfo ENOTFOUND prover-1 (resolution: DNS lookup failed)');
    expect(grpcDetail('No connection established. Last error: null. Resolution note:')).toBe('null');
  });

  test('text that is not that wrapper is kept', () => {
    expect(grpcDetail('Deadline exceeded after 5.001s')).toBe('Deadline exceeded after 5.001s');
    expect(grpcDetail('round_robin: No connection established. Last error: Error: x')).toBe('round_robin: No connection established. Last error: Error: x');
    expect(grpcDetail('Error: connect ENOENT /a')).toBe('Error: connect ENOENT /a');
    expect(grpcDetail('Resolution note: kept when not at the end.')).toBe('Resolution note: kept when not at the end.');
  });
});

describe('validateStatus: a decoded GetStatusResponse', () => {
  const gpu = (o: Record<string, unknown> = {}) => ({ ordinal: 0, name: 'GPU 0', current_job_id: '', current_proof_kind: '', ...o });
  const msg = (o: Record<string, unknown> = {}) => ({ gpus: [gpu()], queues: [], uptime_seconds: '10', total_proofs_completed: '3', total_proofs_failed: '1', ...o });

  test('a good answer, uint64 as strings (longs: String) or numbers', () => {
    const q = { proof_kind: 'porep-c2', pending: 2, in_progress: 1 };
    expect(validateStatus(msg({ gpus: [gpu(), gpu({ ordinal: '1', name: 'B', current_job_id: 'j', current_proof_kind: 'window-post' })], queues: [q] }))).toEqual({
      gpus: [
        { ordinal: 0, name: 'GPU 0', current_job_id: '', current_proof_kind: '' },
        { ordinal: 1, name: 'B', current_job_id: 'j', current_proof_kind: 'window-post' },
      ],
      queues: [q],
      uptimeSeconds: 10,
      totalCompleted: 3,
      totalFailed: 1,
    });
    expect(validateStatus(msg({ uptime_seconds: 0, total_proofs_completed: 0, total_proofs_failed: '0', gpus: [] }))).toEqual({ gpus: [], queues: [], uptimeSeconds: 0, totalCompleted: 0, totalFailed: 0 });
    expect(validateStatus(msg({ queues: undefined }))).toMatchObject({ queues: [] }); // queues absent: none
    expect(validateStatus(msg({ uptime_seconds: '9007199254740991' }))).toMatchObject({ uptimeSeconds: 9007199254740991 });
  });

  test('not a message', () => {
    for (const m of [null, undefined, 5, 'x', true]) expect(validateStatus(m)).toBe('not a message');
  });

  test('gpus: a list of at most 4096 workers, ordinals under 4096, strings of at most 1024 characters', () => {
    expect(GRPC_LIMITS.workers).toBe(4096);
    expect(GRPC_LIMITS.stringLength).toBe(1024);
    const many = (n: number) => validateStatus(msg({ gpus: Array.from({ length: n }, () => gpu()) }));
    expect((many(4096) as { gpus: unknown[] }).gpus).toHaveLength(4096);
    expect(many(4097)).toBe('gpus: not a list of at most 4096 workers');
    expect(validateStatus(msg({ gpus: undefined }))).toBe('gpus: not a list of at most 4096 workers');
    expect(validateStatus(msg({ gpus: { length: 1 } }))).toBe('gpus: not a list of at most 4096 workers');
    const s1024 = 'n'.repeat(1024);
    expect(validateStatus(msg({ gpus: [gpu({ ordinal: 4095, name: s1024, current_job_id: s1024, current_proof_kind: s1024 })] }))).toMatchObject({ gpus: [{ ordinal: 4095, name: s1024 }] });
    const bad: Record<string, unknown>[] = [
      { ordinal: 4096 },
      { ordinal: -1 },
      { ordinal: '1.5' },
      { ordinal: '-1' },
      { ordinal: '' },
      { ordinal: null },
      { ordinal: undefined },
      { ordinal: '12345678901234567' },
      { ordinal: NaN },
      { name: 'n'.repeat(1025) },
      { name: undefined },
      { name: 5 },
      { current_job_id: 'j'.repeat(1025) },
      { current_job_id: null },
      { current_proof_kind: 'k'.repeat(1025) },
      { current_proof_kind: 3 },
    ];
    for (const o of bad) expect([o, validateStatus(msg({ gpus: [gpu(), gpu(o)] }))]).toEqual([o, 'gpus[1]: malformed or over-long field']);
    expect(validateStatus(msg({ gpus: [null] }))).toBe('gpus[0]: malformed or over-long field');
    expect(validateStatus(msg({ gpus: [5] }))).toBe('gpus[0]: malformed or over-long field');
  });

  test('queues: entries checked, the first 64 only; counters must be counts', () => {
    const q = (o: Record<string, unknown> = {}) => ({ proof_kind: 'porep-c2', pending: 0, in_progress: 0, ...o });
    for (const o of [{ proof_kind: undefined }, { proof_kind: 'k'.repeat(1025) }, { pending: -1 }, { pending: 'x' }, { in_progress: -1 }, { in_progress: undefined }])
      expect([o, validateStatus(msg({ queues: [q(), q(o)] }))]).toEqual([o, 'queues: malformed entry']);
    expect(validateStatus(msg({ queues: [null] }))).toBe('queues: malformed entry');
    const list = Array.from({ length: 64 }, (_, k) => q({ pending: k }));
    const v = validateStatus(msg({ queues: [...list, q({ pending: -1 })] })) as { queues: unknown[] };
    expect(v.queues).toHaveLength(64);
    expect(v.queues[63]).toEqual({ proof_kind: 'porep-c2', pending: 63, in_progress: 0 });
    expect(validateStatus(msg({ queues: 'x' }))).toMatchObject({ queues: [] });
    for (const k of ['uptime_seconds', 'total_proofs_completed', 'total_proofs_failed'])
      for (const v2 of [undefined, '-1', 'x', '1.5', '9007199254740992', -1])
        expect([k, v2, validateStatus(msg({ [k]: v2 }))]).toEqual([k, v2, 'uptime/total counters: not counts']);
  });
});
