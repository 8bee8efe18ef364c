/**
 * RequestQueue (src/exporter/request-queue.ts) driven in-process with stand-in sockets and
 * responses, from its header's rules (as Go's net/http serves one connection):
 *  - one request at a time: a pipelined request waits, uncomputed, until the answer before it
 *    was handed to the system ('close' on its response), and starts on a later turn of the
 *    event loop (setImmediate), never inside that 'close';
 *  - at most `maxPipelined` answers in a row to requests that were already waiting; the next
 *    one closes the connection (onOverflow); a client that waits for each answer starts a new
 *    row with every request;
 *  - more than `hardLimit` waiting closes the connection (onOverflow);
 *  - the parser is fed in slices of 128 bytes, none while `maxPipelined` requests wait or the
 *    stream is paused; the rest goes back in front of the stream (unshift) and is read on
 *    resume; `_handle._consumed` is set on a stream-base handle;
 *  - once closed (by the client or by us) nothing it sent or queued is computed.
 * The full HTTP path (real sockets, Node's parser) is test/hostile/http-edge.test.ts and
 * fuzz-pipelining.test.ts; here each rule is checked one step at a time, without a server.
 */
import { EventEmitter } from 'node:events';
import type * as http from 'node:http';
import type * as net from 'node:net';
import { RequestQueue } from '../../src/exporter/request-queue';

class FakeRes extends EventEmitter {
  writableEnded = false;
  writableFinished = false;
  constructor(readonly id: number) {
    super();
  }
}

function flushImmediates(): Promise<void> {
  return new Promise((r) => setImmediate(r));
}

function setup(maxPipelined = 2, hardLimit = 100) {
  const sock = { destroyed: false, destroyCalls: 0, destroy() { this.destroyed = true; this.destroyCalls++; } };
  const handled: number[] = [];
  let overflows = 0;
  const q = new RequestQueue(sock as unknown as net.Socket, {
    maxPipelined,
    hardLimit,
    handler: (req) => void handled.push((req as unknown as { id: number }).id),
    onOverflow: () => void overflows++,
  });
  const res: FakeRes[] = [];
  const send = (id: number) => {
    const r = new FakeRes(id);
    res[id] = r;
    q.request({ id } as unknown as http.IncomingMessage, r as unknown as http.ServerResponse);
    return r;
  };
  return { q, sock, handled, overflows: () => overflows, send, res };
}

describe('one request at a time', () => {
  test('an idle connection: the request is handled at once, and counted', () => {
    const s = setup();
    expect(s.q.idle).toBe(true);
    s.send(1);
    expect(s.handled).toEqual([1]);
    expect(s.q.requests).toBe(1);
    expect(s.q.active).toBe(1);
    expect(s.q.idle).toBe(false);
    expect(s.q.current).toBe(s.res[1]);
  });

  test('a pipelined request waits, uncomputed, until the answer before it is closed, and starts on a later turn', async () => {
    const s = setup();
    s.send(1);
    s.send(2);
    expect(s.handled).toEqual([1]);
    expect(s.q.requests).toBe(2);
    s.res[1].emit('close');
    expect(s.q.active).toBe(0);
    expect(s.q.current).toBeNull();
    expect(s.handled).toEqual([1]); // not inside 'close'
    expect(s.q.idle).toBe(false); // one still waits
    await flushImmediates();
    expect(s.handled).toEqual([1, 2]);
    expect(s.q.current).toBe(s.res[2]);
    s.res[2].emit('close');
    await flushImmediates();
    expect(s.q.idle).toBe(true);
    expect(s.handled).toEqual([1, 2]);
    expect(s.overflows()).toBe(0);
  });

  test('requests arriving while one runs wait in order', async () => {
    const s = setup(4);
    for (const id of [1, 2, 3, 4]) s.send(id);
    for (const id of [1, 2, 3]) {
      s.res[id].emit('close');
      await flushImmediates();
    }
    expect(s.handled).toEqual([1, 2, 3, 4]);
  });

  test('waitingOnClient: only while the current answer is written but not yet flushed', () => {
    const s = setup();
    expect(s.q.waitingOnClient).toBe(false);
    const r = s.send(1);
    expect(s.q.waitingOnClient).toBe(false);
    r.writableEnded = true;
    expect(s.q.waitingOnClient).toBe(true);
    r.writableFinished = true;
    expect(s.q.waitingOnClient).toBe(false);
  });
});

describe('bounds', () => {
  test('maxPipelined answers in a row to waiting requests; the next closes the connection', async () => {
    const s = setup(2);
    for (const id of [1, 2, 3, 4]) s.send(id);
    s.res[1].emit('close');
    await flushImmediates();
    s.res[2].emit('close');
    await flushImmediates();
    expect(s.handled).toEqual([1, 2, 3]);
    expect(s.overflows()).toBe(0);
    expect(s.q.dead).toBe(false);
    s.res[3].emit('close');
    await flushImmediates();
    expect(s.handled).toEqual([1, 2, 3]); // the third in a row is never computed
    expect(s.overflows()).toBe(1);
    expect(s.q.dead).toBe(true);
    expect(s.sock.destroyCalls).toBe(1);
  });

  test('a client that waits for each answer starts a new row every time: never closed', async () => {
    const s = setup(1);
    for (let id = 1; id <= 5; id++) {
      s.send(id);
      s.res[id].emit('close');
      await flushImmediates();
    }
    expect(s.handled).toEqual([1, 2, 3, 4, 5]);
    expect(s.overflows()).toBe(0);
    expect(s.q.dead).toBe(false);
  });

  test('a row ended by an idle moment: the waiting ones of the next burst count from zero', async () => {
    const s = setup(1);
    s.send(1);
    s.send(2);
    s.res[1].emit('close');
    await flushImmediates(); // 2: first in a row
    s.res[2].emit('close');
    await flushImmediates();
    expect(s.q.idle).toBe(true);
    s.send(3); // idle: a new row
    s.send(4);
    s.res[3].emit('close');
    await flushImmediates();
    expect(s.handled).toEqual([1, 2, 3, 4]);
    expect(s.overflows()).toBe(0);
  });

  test('hardLimit waiting: the next request closes the connection and is never computed', () => {
    const s = setup(100, 2);
    s.send(1);
    s.send(2);
    s.send(3);
    expect(s.overflows()).toBe(0);
    expect(s.q.dead).toBe(false);
    s.send(4);
    expect(s.overflows()).toBe(1);
    expect(s.q.dead).toBe(true);
    expect(s.sock.destroyCalls).toBe(1);
    expect(s.handled).toEqual([1]);
  });
});

describe('a closed connection computes nothing more', () => {
  test('close drops what waits and destroys the socket; later requests are not even counted', async () => {
    const s = setup();
    s.send(1);
    s.send(2);
    s.q.close();
    expect(s.q.dead).toBe(true);
    expect(s.sock.destroyCalls).toBe(1);
    s.send(3);
    expect(s.q.requests).toBe(2);
    s.res[1].emit('close');
    await flushImmediates();
    expect(s.handled).toEqual([1]);
  });

  test('the client went away while a request waited: the waiting one is dropped, not computed', async () => {
    const s = setup();
    s.send(1);
    s.send(2);
    s.sock.destroyed = true;
    s.res[1].emit('close');
    await flushImmediates();
    expect(s.handled).toEqual([1]);
    expect(s.q.dead).toBe(true);
    expect(s.q.idle).toBe(true);
  });

  test('a request already running when more arrive is not run twice', async () => {
    const s = setup();
    s.send(1);
    s.send(2);
    s.res[1].emit('close');
    s.send(3); // arrives between the close and the next turn
    await flushImmediates();
    expect(s.handled).toEqual([1, 2]);
    expect(s.q.active).toBe(1);
  });
});

/** A stand-in for the socket the HTTP parser reads: records what 'data' delivers and the flow calls. */
class FakeStream extends EventEmitter {
  _paused = false;
  _handle: { isStreamBase?: boolean; _consumed?: boolean } | null = { isStreamBase: true };
  fed: Buffer[] = [];
  unshifted: Buffer[] = [];
  pauses = 0;
  resumes = 0;
  constructor() {
    super();
    this.on('data', (b: Buffer) => this.fed.push(b));
  }
  /** net.Socket's pause/resume: they do not touch `_paused`, the HTTP server's own flag. */
  pause() {
    this.pauses++;
    return this;
  }
  resume() {
    this.resumes++;
    return this;
  }
  unshift(b: Buffer) {
    this.unshifted.push(b);
  }
}

describe('pacing what the parser reads', () => {
  test('a stream-base handle is switched to data events; others are left alone', () => {
    const s = setup();
    const a = new FakeStream();
    s.q.pace(a as unknown as net.Socket);
    expect(a._handle!._consumed).toBe(true);
    const b = new FakeStream();
    b._handle = { isStreamBase: false };
    s.q.pace(b as unknown as net.Socket);
    expect(b._handle._consumed).toBeUndefined();
    const c = new FakeStream();
    c._handle = null;
    expect(() => s.q.pace(c as unknown as net.Socket)).not.toThrow();
  });

  test('data is fed in slices of 128 bytes; other events pass through with their arguments', () => {
    const s = setup();
    const st = new FakeStream();
    s.q.pace(st as unknown as net.Socket);
    const chunk = Buffer.alloc(300, 7);
    expect(st.emit('data', chunk)).toBe(true);
    expect(st.fed.map((b) => b.length)).toEqual([128, 128, 44]);
    expect(Buffer.concat(st.fed)).toEqual(chunk);
    const seen: unknown[] = [];
    st.on('end', (...a: unknown[]) => seen.push(a));
    expect(st.emit('end', 1, 2)).toBe(true);
    expect(seen).toEqual([[1, 2]]);
    expect(st.emit('nobody-listens')).toBe(false);
    expect(st.pauses).toBe(0);
  });

  test('a chunk of exactly 128 bytes is one slice', () => {
    const s = setup();
    const st = new FakeStream();
    s.q.pace(st as unknown as net.Socket);
    st.emit('data', Buffer.alloc(128));
    expect(st.fed.map((b) => b.length)).toEqual([128]);
    st.emit('data', Buffer.alloc(129));
    expect(st.fed.map((b) => b.length)).toEqual([128, 128, 1]);
  });

  test('with maxPipelined waiting, nothing more is fed: the rest goes back, reading is paused, and resumes once one is taken', async () => {
    const s = setup(2);
    const st = new FakeStream();
    s.q.pace(st as unknown as net.Socket);
    // Each slice the parser gets is one request.
    let id = 0;
    st.on('data', () => void s.send(++id));
    const chunk = Buffer.alloc(600, 1);
    st.emit('data', chunk);
    // 1 runs, 2 and 3 wait: the fourth slice is held back.
    expect(id).toBe(3);
    expect(st.fed.map((b) => b.length)).toEqual([128, 128, 128]);
    expect(st.pauses).toBe(1);
    expect(st.unshifted.map((b) => b.length)).toEqual([600 - 384]);
    expect(st.unshifted[0]).toEqual(chunk.subarray(384));
    // The answer to 1 is handed over: 2 starts, one waits, reading resumes.
    s.res[1].emit('close');
    await flushImmediates();
    expect(s.handled).toEqual([1, 2]);
    expect(st.resumes).toBe(1);
  });

  test('nothing is fed while the stream is paused (Node\'s own flag), and it is not resumed by the queue', async () => {
    const s = setup(2);
    const st = new FakeStream();
    s.q.pace(st as unknown as net.Socket);
    st._paused = true;
    st.emit('data', Buffer.alloc(10));
    expect(st.fed).toEqual([]);
    expect(st.unshifted.map((b) => b.length)).toEqual([10]);
    // Not held by the queue: a later answer does not resume what Node paused.
    s.send(1);
    s.send(2);
    s.res[1].emit('close');
    await flushImmediates();
    expect(st.resumes).toBe(0);
  });

  test('a held stream that Node paused meanwhile is not resumed', async () => {
    const s = setup(1);
    const st = new FakeStream();
    s.q.pace(st as unknown as net.Socket);
    let id = 0;
    st.on('data', () => void s.send(++id));
    st.emit('data', Buffer.alloc(400));
    expect(id).toBe(2); // 1 runs, 2 waits: held
    st._paused = true; // the HTTP server paused it meanwhile
    s.res[1].emit('close');
    await flushImmediates();
    expect(s.handled).toEqual([1, 2]);
    expect(st.resumes).toBe(0);
  });

  test('held with none waiting any more: resumed on the next turn after the answer', async () => {
    const s = setup(1);
    const st = new FakeStream();
    s.q.pace(st as unknown as net.Socket);
    let id = 0;
    st.on('data', () => void s.send(++id));
    st.emit('data', Buffer.alloc(400));
    expect(id).toBe(2);
    s.res[1].emit('close');
    expect(st.resumes).toBe(0);
    await flushImmediates();
    expect(st.resumes).toBe(1);
  });

  test('a closed connection feeds nothing more', () => {
    const s = setup();
    const st = new FakeStream();
    s.q.pace(st as unknown as net.Socket);
    s.q.close();
    expect(st.emit('data', Buffer.alloc(50))).toBe(true);
    expect(st.fed).toEqual([]);
    expect(st.unshifted).toEqual([]);
  });

  test('closed by a request inside a chunk (hard limit): the rest of the chunk is dropped', () => {
    const s = setup(100, 1);
    const st = new FakeStream();
    s.q.pace(st as unknown as net.Socket);
    let id = 0;
    st.on('data', () => void s.send(++id));
    st.emit('data', Buffer.alloc(1000));
    // 1 runs, 2 waits, 3 is over the hard limit: closed, nothing more fed.
    expect(id).toBe(3);
    expect(st.fed).toHaveLength(3);
    expect(s.overflows()).toBe(1);
    expect(st.unshifted).toEqual([]);
  });

  test('reading resumes only once fewer than maxPipelined wait (several requests in one slice)', async () => {
    const s = setup(2);
    const st = new FakeStream();
    s.q.pace(st as unknown as net.Socket);
    let id = 0;
    // Four 32-byte requests in each 128-byte slice.
    st.on('data', (b: Buffer) => {
      for (let i = 0; i < b.length / 32; i++) s.send(++id);
    });
    st.emit('data', Buffer.alloc(512));
    expect(id).toBe(4); // one slice: 1 runs, 2-4 wait
    expect(st.pauses).toBe(1);
    s.res[1].emit('close');
    await flushImmediates();
    expect(s.handled).toEqual([1, 2]);
    expect(st.resumes).toBe(0); // 3 and 4 still wait: 2 = maxPipelined
    s.res[2].emit('close');
    await flushImmediates();
    expect(s.handled).toEqual([1, 2, 3]);
    expect(st.resumes).toBe(1);
  });
});
