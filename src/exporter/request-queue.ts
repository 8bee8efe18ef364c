/**
 * Requests on one connection, one at a time, as Go's net/http serves a connection: a
 * pipelined request waits, unanswered and uncomputed, until the answer before it has been
 * handed to the system; and the HTTP parser is fed what the client sent in small slices,
 * none while `maxPipelined` requests wait, so the rest stays in the socket (and the
 * client's writes block) instead of becoming thousands of request objects at once.
 *
 * And a bound Go does not have: at most `maxPipelined` answers in a row to requests that
 * were already waiting (sent before the client had the answer before them); the next one
 * closes the connection (counted). A client that waits for each answer — every scraper —
 * starts a new row with every request. Without it a client that never reads still gets as
 * many answers computed as the kernel's socket buffers hold (~360 of 11 KB each here, per
 * connection, before a write blocks).
 *
 * Why the slices: Node's parser reads what arrives (64 KiB at a time) and emits every
 * request in it before anything can stop it; 3000 pipelined `GET /metrics` on each of 512
 * connections were 1.5 million requests in memory and in the queue to be computed, long
 * after their clients had gone (issue 20, class 3). Here at most `maxPipelined` wait, plus
 * what one slice holds; a connection that still ends up over `hardLimit` (which pacing
 * makes impossible unless Node's internals change under it) is closed.
 *
 * What it uses of Node's internals, on purpose and checked by test/hostile/http-edge.test.ts:
 * `_handle._consumed` (set before Node's HTTP listener runs, so that the parser reads
 * through 'data' events, which can be paced, instead of straight from the handle) and
 * `_paused` (Node's own "stop reading" flag, honoured: no slice is fed while it is set).
 */
import type * as http from 'node:http';
import type * as net from 'node:net';

/** Bytes handed to the parser at a time: at most 7 requests (18-byte HTTP/1.0 ones). */
const SLICE = 128;

interface Internals {
  _handle?: { isStreamBase?: boolean; _consumed?: boolean } | null;
  _paused?: boolean;
}

export interface RequestQueueOptions {
  /** Requests that may wait behind the one in progress before reading stops, and answers in a row to such requests (4). */
  maxPipelined: number;
  /** More than this waiting closes the connection (a safety net; see above). */
  hardLimit: number;
  handler: http.RequestListener;
  /** The connection was closed for pipelining past the bounds. */
  onOverflow(): void;
}

export class RequestQueue {
  /** Requests handed to the handler and not finished (0 or 1). */
  active = 0;
  requests = 0;
  /** Closed (by the client or by us): what it still sends or queued is never computed. */
  dead = false;
  /** The answer in progress. */
  current: http.ServerResponse | null = null;
  private readonly waiting: [http.IncomingMessage, http.ServerResponse][] = [];
  /** Answers in a row to requests that were waiting (sent before the answer before them). */
  private inRow = 0;
  /** The stream the parser reads (the socket, or its TLS socket) while reading is held. */
  private held: net.Socket | null = null;

  constructor(
    private readonly sock: net.Socket,
    private readonly opts: RequestQueueOptions,
  ) {}

  /** Nothing in progress and nothing waiting. */
  get idle(): boolean {
    return this.active === 0 && this.waiting.length === 0;
  }

  /** The answer is written and waits only on the client reading it (or a full socket buffer). */
  get waitingOnClient(): boolean {
    return this.current !== null && this.current.writableEnded && !this.current.writableFinished;
  }

  /**
   * Paces what the HTTP parser reads from `stream` (call before Node's HTTP connection
   * listener sees it): slices of SLICE bytes, none while requests are held back.
   */
  pace(stream: net.Socket): void {
    const s = stream as net.Socket & Internals;
    if (s._handle?.isStreamBase) s._handle._consumed = true;
    const emit = s.emit as (this: net.Socket, ev: string | symbol, ...args: unknown[]) => boolean;
    const self = this;
    s.emit = function (this: net.Socket & Internals, ev: string | symbol, ...args: unknown[]): boolean {
      if (ev !== 'data') return emit.apply(this, [ev, ...args]);
      if (self.dead) return true;
      const chunk = args[0] as Buffer;
      let i = 0;
      while (i < chunk.length) {
        if (self.dead) return true;
        if (this._paused || self.waiting.length >= self.opts.maxPipelined) {
          // Stop here: the rest goes back in front of the socket's buffer, read on resume.
          this.pause();
          this.unshift(chunk.subarray(i));
          if (!this._paused) self.held = this;
          return true;
        }
        const end = Math.min(chunk.length, i + SLICE);
        emit.call(this, 'data', chunk.subarray(i, end));
        i = end;
      }
      return true;
    } as typeof s.emit;
  }

  /** A request parsed from this connection (the server's request listener calls it). */
  request(req: http.IncomingMessage, res: http.ServerResponse): void {
    if (this.dead) return; // parsed from a connection already closed: never computed
    this.requests++;
    if (this.idle) {
      this.inRow = 0; // the client waited for the answer before: a new row
      return this.dispatch(req, res);
    }
    if (this.waiting.length >= this.opts.hardLimit) {
      this.opts.onOverflow();
      return this.close();
    }
    this.waiting.push([req, res]);
  }

  /** The connection is gone or being closed: drop what waits, close it. */
  close(): void {
    this.dead = true;
    this.waiting.length = 0;
    this.sock.destroy();
  }

  private dispatch(req: http.IncomingMessage, res: http.ServerResponse): void {
    this.active++;
    this.current = res;
    // 'close' comes once the answer was handed to the system (after 'finish'), or when the
    // connection closed: either way the next request may start.
    res.once('close', () => {
      this.active--;
      this.current = null;
      // The next one after the event loop has polled: new connections and requests (a
      // scraper) get their turn between two pipelined answers, never behind a chain of them.
      if (this.waiting.length > 0 || this.held) setImmediate(() => this.next());
    });
    this.opts.handler(req, res);
  }

  private next(): void {
    if (this.dead || this.active > 0) return;
    if (this.sock.destroyed) return this.close(); // the client has gone: nothing computed for it
    const q = this.waiting.shift();
    if (q) {
      if (++this.inRow > this.opts.maxPipelined) {
        this.opts.onOverflow();
        return this.close();
      }
      this.dispatch(q[0], q[1]);
    }
    const h = this.held as (net.Socket & Internals) | null;
    if (h && this.waiting.length < this.opts.maxPipelined) {
      this.held = null;
      if (!h._paused) h.resume();
    }
  }
}
