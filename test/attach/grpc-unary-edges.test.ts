/**
 * grpc-unary.ts, the outcomes test/attach/grpc-unary.test.ts leaves open (issue 23): a
 * deserializer that throws something other than an Error, the metadata an error carries
 * (the server's trailers; an empty Metadata for a parsing error, as grpc-js'
 * client-interceptors.ts builds its readError), the error being an Error, and `done` called
 * once even when the call is cancelled after it ended. The reference is grpc-js'
 * Client.makeUnaryRequest against the same real grpc-js server on loopback.
 */
import * as grpc from '@grpc/grpc-js';
import { unaryCall } from '../../src/engine/sources/attach/grpc-unary';

const identity = (b: Buffer) => b;
const unary = (path: string): grpc.MethodDefinition<Buffer, Buffer> => ({
  path,
  requestStream: false,
  responseStream: false,
  requestSerialize: identity,
  requestDeserialize: identity,
  responseSerialize: identity,
  responseDeserialize: identity,
});
const trailers = () => {
  const m = new grpc.Metadata();
  m.set('x-cuzk-reason', 'busy');
  return m;
};

let server: grpc.Server;
const hanging: grpc.ServerWritableStream<Buffer, Buffer>[] = [];
let client: grpc.Client;

beforeAll(async () => {
  server = new grpc.Server();
  server.addService(
    { Ok: unary('/t.T/Ok'), Fail: unary('/t.T/Fail'), None: { ...unary('/t.T/None'), responseStream: true }, OneThenHang: { ...unary('/t.T/OneThenHang'), responseStream: true } },
    {
      Ok: (_c: unknown, cb: grpc.sendUnaryData<Buffer>) => cb(null, Buffer.from('answer')),
      Fail: (_c: unknown, cb: grpc.sendUnaryData<Buffer>) => cb({ code: grpc.status.RESOURCE_EXHAUSTED, details: 'queue full', metadata: trailers() }, null),
      None: (call: grpc.ServerWritableStream<Buffer, Buffer>) => call.end(trailers()),
      // One message, then no status until the test ends: only the client can end the call.
      OneThenHang: (call: grpc.ServerWritableStream<Buffer, Buffer>) => {
        call.write(Buffer.from('not the message'));
        hanging.push(call);
      },
    },
  );
  const port = await new Promise<number>((resolve, reject) => server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e, p) => (e ? reject(e) : resolve(p))));
  client = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
});

afterAll(async () => {
  for (const c of hanging) c.end();
  client.close();
  await new Promise<void>((resolve) => server.tryShutdown(() => resolve()));
});

const soon = (ms = 5000) => new Date(Date.now() + ms);
type Got = { err: grpc.ServiceError | null; res?: unknown; calls: number };

function reference(path: string, deserialize: (b: Buffer) => unknown): Promise<Got> {
  return new Promise((resolve) => {
    client.makeUnaryRequest(path, identity, deserialize, Buffer.alloc(0), { deadline: soon() }, (err, res) => resolve({ err, res, calls: 1 }));
  });
}

function ours(path: string, deserialize: (b: Buffer) => unknown): Promise<Got> {
  return new Promise((resolve) => {
    unaryCall(client.getChannel(), path, Buffer.alloc(0), deserialize, soon(), (err, res) => resolve({ err, res, calls: 1 }));
  });
}

/** The server's `date` header is left out: the two calls may straddle a second. */
const withoutDate = (m: Record<string, unknown> | undefined) => m && Object.fromEntries(Object.entries(m).filter(([k]) => k !== 'date'));
const view = (g: Got) => ({ code: g.err?.code, details: g.err?.details, message: g.err?.message, isError: g.err instanceof Error, metadata: withoutDate(g.err?.metadata?.getMap()), res: g.res });

test('a deserializer that throws a string: INTERNAL with the string in the details', async () => {
  const throwsString = () => {
    throw 'not protobuf'; // eslint-disable-line no-throw-literal
  };
  const want = await reference('/t.T/Ok', throwsString);
  const got = await ours('/t.T/Ok', throwsString);
  expect(view(want)).toEqual({ code: grpc.status.INTERNAL, details: 'Response message parsing error: not protobuf', message: '13 INTERNAL: Response message parsing error: not protobuf', isError: true, metadata: {}, res: undefined });
  expect(view(got)).toEqual(view(want));
});

test("a server error carries the server's trailers", async () => {
  const want = await reference('/t.T/Fail', identity);
  const got = await ours('/t.T/Fail', identity);
  expect(view(want)).toMatchObject({ code: grpc.status.RESOURCE_EXHAUSTED, details: 'queue full', isError: true, metadata: { 'x-cuzk-reason': 'busy' } });
  expect(view(got)).toEqual(view(want));
});

test("OK without a message: UNIMPLEMENTED, with the status' trailers", async () => {
  const want = await reference('/t.T/None', identity);
  const got = await ours('/t.T/None', identity);
  expect(view(want)).toMatchObject({ code: grpc.status.UNIMPLEMENTED, details: 'No message received', metadata: { 'x-cuzk-reason': 'busy' } });
  expect(view(got)).toEqual(view(want));
});

test('done is called once: an answer, then a cancel of the ended call', async () => {
  let calls = 0;
  let ended!: () => void;
  const end = new Promise<void>((r) => (ended = r));
  const call = unaryCall(client.getChannel(), '/t.T/Ok', Buffer.alloc(0), (b) => b.toString(), soon(), (err, res) => {
    calls++;
    expect(err).toBeNull();
    expect(res).toBe('answer');
    ended();
  });
  await end;
  call.cancel();
  // a second round trip on the same channel: anything the cancel would have delivered is in by then
  expect((await ours('/t.T/Ok', (b) => b.toString())).res).toBe('answer');
  expect(calls).toBe(1);
});

test('an answer the deserializer refuses ends the call then, not at the deadline (the call is cancelled)', async () => {
  const refuse = () => {
    throw new Error('bad bytes');
  };
  // The deadline is past the test's own 5 s limit: only the cancel can end these calls in time.
  const [want, got] = await Promise.all([
    new Promise<Got>((resolve) => client.makeUnaryRequest('/t.T/OneThenHang', identity, refuse, Buffer.alloc(0), { deadline: soon(60_000) }, (err, res) => resolve({ err, res, calls: 1 }))),
    new Promise<Got>((resolve) => unaryCall(client.getChannel(), '/t.T/OneThenHang', Buffer.alloc(0), refuse, soon(60_000), (err, res) => resolve({ err, res, calls: 1 }))),
  ]);
  expect(view(want)).toMatchObject({ code: grpc.status.INTERNAL, details: 'Response message parsing error: bad bytes' });
  expect(view(got)).toEqual(view(want));
}, 5000);
