/**
 * grpc-unary.ts makes the GetMetrics / GetStatus calls on grpc-js' channel without
 * Client.makeUnaryRequest's wrappers. The reference for every outcome is grpc-js itself:
 * the same call through `Client.makeUnaryRequest` against the same real grpc-js server
 * (loopback) must end the same way — answer, or error code, details and message — for an
 * answer, a server error, an answer the deserializer refuses, no answer, two answers, a
 * deadline, a closed port, a cancel and a closed channel.
 */
import * as grpc from '@grpc/grpc-js';
import { unaryCall } from '../../src/engine/sources/attach/grpc-unary';

type Outcome = { res?: unknown; code?: number; details?: string; message?: string; threw?: string };

const identity = (b: Buffer) => b;
/** A deserializer that refuses answers starting with "!" (as protobufjs refuses bad bytes). */
const deserialize = (b: Buffer) => {
  const s = b.toString('utf8');
  if (s.startsWith('!')) throw new Error(`cannot decode ${JSON.stringify(s)}`);
  return { text: s };
};

const unary = (path: string): grpc.MethodDefinition<Buffer, Buffer> => ({
  path,
  requestStream: false,
  responseStream: false,
  requestSerialize: identity,
  requestDeserialize: identity,
  responseSerialize: identity,
  responseDeserialize: identity,
});
// Server-streaming on the server's side, unary on the client's: a way to end OK with no
// message or with two.
const streaming = (path: string): grpc.MethodDefinition<Buffer, Buffer> => ({ ...unary(path), responseStream: true });

const service: grpc.ServiceDefinition = {
  Ok: unary('/t.T/Ok'),
  Fail: unary('/t.T/Fail'),
  Garbage: unary('/t.T/Garbage'),
  Hang: unary('/t.T/Hang'),
  None: streaming('/t.T/None'),
  Two: streaming('/t.T/Two'),
};

let server: grpc.Server;
let address = '';
const hung: (() => void)[] = [];

beforeAll(async () => {
  server = new grpc.Server();
  server.addService(service, {
    Ok: (call: grpc.ServerUnaryCall<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) => cb(null, Buffer.concat([Buffer.from('answer to '), call.request])),
    Fail: (_c: unknown, cb: grpc.sendUnaryData<Buffer>) => cb({ code: grpc.status.FAILED_PRECONDITION, details: 'not now: the engine is busy' }, null),
    Garbage: (_c: unknown, cb: grpc.sendUnaryData<Buffer>) => cb(null, Buffer.from('!not the message')),
    Hang: (_c: unknown, cb: grpc.sendUnaryData<Buffer>) => hung.push(() => cb(null, Buffer.from('late'))),
    None: (call: grpc.ServerWritableStream<Buffer, Buffer>) => call.end(),
    Two: (call: grpc.ServerWritableStream<Buffer, Buffer>) => {
      call.write(Buffer.from('one'));
      call.write(Buffer.from('two'));
      call.end();
    },
  });
  const port = await new Promise<number>((resolve, reject) => server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e, p) => (e ? reject(e) : resolve(p))));
  address = `127.0.0.1:${port}`;
});

afterAll(async () => {
  for (const h of hung) h();
  await new Promise<void>((resolve) => server.tryShutdown(() => resolve()));
});

const outcome = (err: grpc.ServiceError | null, res?: unknown): Outcome => (err ? { code: err.code, details: err.details, message: err.message } : { res });

/** The call through grpc-js' Client (the reference). */
function reference(client: grpc.Client, path: string, req: Buffer, deadline: grpc.Deadline, cancel = false): Promise<Outcome> {
  return new Promise((resolve) => {
    try {
      const c = client.makeUnaryRequest(path, identity, deserialize, req, { deadline }, (e, r) => resolve(outcome(e, r)));
      if (cancel) c.cancel();
    } catch (e) {
      resolve({ threw: (e as Error).message });
    }
  });
}

/** The same call through unaryCall. */
function ours(client: grpc.Client, path: string, req: Buffer, deadline: grpc.Deadline, cancel = false): Promise<Outcome> {
  return new Promise((resolve) => {
    try {
      const c = unaryCall(client.getChannel(), path, req, deserialize, deadline, (e, r) => resolve(outcome(e, r)));
      if (cancel) c.cancel();
    } catch (e) {
      resolve({ threw: (e as Error).message });
    }
  });
}

const soon = (ms = 5000) => new Date(Date.now() + ms);

describe('unaryCall ends as Client.makeUnaryRequest does', () => {
  let client: grpc.Client;
  beforeAll(() => {
    client = new grpc.Client(address, grpc.credentials.createInsecure());
  });
  afterAll(() => client.close());

  test.each([
    ['an answer', '/t.T/Ok'],
    ['a server error (code and details passed on)', '/t.T/Fail'],
    ['an answer the deserializer refuses (INTERNAL, parsing error)', '/t.T/Garbage'],
    ['OK with no message (UNIMPLEMENTED, no message received)', '/t.T/None'],
    ['a method the server lacks', '/t.T/Missing'],
  ])('%s', async (_what, path) => {
    const req = Buffer.from('question');
    const want = await reference(client, path, req, soon());
    const got = await ours(client, path, req, soon());
    expect(got).toEqual(want);
  });

  test('the outcomes checked above are the ones their names say (the reference itself)', async () => {
    const req = Buffer.from('q');
    expect(await reference(client, '/t.T/Ok', req, soon())).toEqual({ res: { text: 'answer to q' } });
    expect(await ours(client, '/t.T/Ok', req, soon())).toEqual({ res: { text: 'answer to q' } });
    const fail = await ours(client, '/t.T/Fail', req, soon());
    expect(fail).toEqual({ code: grpc.status.FAILED_PRECONDITION, details: 'not now: the engine is busy', message: '9 FAILED_PRECONDITION: not now: the engine is busy' });
    const garbage = await ours(client, '/t.T/Garbage', req, soon());
    expect(garbage.code).toBe(grpc.status.INTERNAL);
    expect(garbage.details).toBe('Response message parsing error: cannot decode "!not the message"');
    expect(await ours(client, '/t.T/None', req, soon())).toMatchObject({ code: grpc.status.UNIMPLEMENTED, details: 'No message received' });
  });

  test('two messages: as grpc-js, one is read and the status awaited (here: the deadline)', async () => {
    const [want, got] = await Promise.all([reference(client, '/t.T/Two', Buffer.alloc(0), soon(300)), ours(client, '/t.T/Two', Buffer.alloc(0), soon(300))]);
    expect(want.code).toBe(grpc.status.DEADLINE_EXCEEDED);
    expect(got.code).toBe(want.code);
  });

  test('a deadline: DEADLINE_EXCEEDED', async () => {
    const [want, got] = await Promise.all([reference(client, '/t.T/Hang', Buffer.alloc(0), soon(200)), ours(client, '/t.T/Hang', Buffer.alloc(0), soon(200))]);
    expect(want.code).toBe(grpc.status.DEADLINE_EXCEEDED);
    expect(got.code).toBe(want.code);
    expect(got.details?.split(' after ')[0]).toBe(want.details?.split(' after ')[0]);
  });

  test('cancelled: CANCELLED "Cancelled on client"', async () => {
    const want = await reference(client, '/t.T/Hang', Buffer.alloc(0), soon(), true);
    const got = await ours(client, '/t.T/Hang', Buffer.alloc(0), soon(), true);
    expect(want).toEqual({ code: grpc.status.CANCELLED, details: 'Cancelled on client', message: '1 CANCELLED: Cancelled on client' });
    expect(got).toEqual(want);
  });

  test('an answer, the same bytes sent each call: the request buffer is not consumed', async () => {
    const req = Buffer.from('again');
    for (let i = 0; i < 3; i++) expect(await ours(client, '/t.T/Ok', req, soon())).toEqual({ res: { text: 'answer to again' } });
    expect(req.toString()).toBe('again');
  });
});

test('nobody listening: UNAVAILABLE from both', async () => {
  // A port that was just free: bound by a server that is then shut down.
  const probe = new grpc.Server();
  const port = await new Promise<number>((resolve, reject) => probe.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e, p) => (e ? reject(e) : resolve(p))));
  await new Promise<void>((resolve) => probe.tryShutdown(() => resolve()));
  const a = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  const b = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure(), { 'grpc.use_local_subchannel_pool': 1 });
  try {
    const want = await reference(a, '/t.T/Ok', Buffer.alloc(0), soon());
    const got = await ours(b, '/t.T/Ok', Buffer.alloc(0), soon());
    expect(want.code).toBe(grpc.status.UNAVAILABLE);
    expect(got.code).toBe(want.code);
    expect(got.details).toContain('ECONNREFUSED');
  } finally {
    a.close();
    b.close();
  }
});

test('a closed channel: both throw the same', async () => {
  const client = new grpc.Client(address, grpc.credentials.createInsecure());
  client.close();
  const want = await reference(client, '/t.T/Ok', Buffer.alloc(0), soon());
  const got = await ours(client, '/t.T/Ok', Buffer.alloc(0), soon());
  expect(want.threw).toBe('Channel has been shut down');
  expect(got).toEqual(want);
});
