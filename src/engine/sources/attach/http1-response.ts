/**
 * A strict, bounded, incremental parser of ONE HTTP/1.x response to a GET (the /status poll,
 * http1-client.ts), fed the bytes as they arrive. It accepts a subset of what Node's own
 * client parser (llhttp, strict mode) accepts, and where both accept, the status, framing and
 * body are the same (test/attach/http1-response.test.ts checks both against Node's client):
 *
 *  - status line `HTTP/<v> <3 digits>[ <reason>]` CRLF, v one of 1.1, 1.0, 0.9, 2.0 (what
 *    llhttp takes); 1xx answers but 101 are skipped (their head only, as Node does; one that
 *    does not keep the connection is an error); after a 101 everything is ignored (Node
 *    waits for its deadline there too);
 *  - header lines `token:[OWS]value[OWS]` CRLF, values without control characters but HTAB;
 *    no folding, no bare CR or LF anywhere in a head; each head at most `maxHeadBytes`
 *    (Node's 16 KiB) counted from its first byte to its last LF;
 *  - body: Content-Length (digits, one header only, up to 2^64 - 1 as llhttp; the caller
 *    compares it with its own limit); `Transfer-Encoding` whose last coding is `chunked`
 *    (sizes up to 16 significant hex digits, extensions checked, trailers checked and
 *    bounded like a head; a Content-Length or an empty Transfer-Encoding among the trailers is
 *    refused, as llhttp does); otherwise (no length, or another coding last) until the
 *    connection closes. Both framings at once are refused, as llhttp does; so is a second
 *    Content-Length or Transfer-Encoding header (llhttp refuses the first, merges the
 *    second: refused here, stricter), and `chunked` followed by HTAB (llhttp reads that body
 *    to the close: refused here);
 *  - keep-alive as llhttp decides it: HTTP/1.1 unless `Connection: close`, older versions
 *    only with `Connection: keep-alive`, never when the body runs to the close;
 *  - bytes after the end of the response (no second request was sent) are an error, as they
 *    are to Node when they come with the response's last bytes.
 * Errors are HttpParseError, with llhttp's codes and, mostly, its words ("Parse Error: ...").
 * Nothing here allocates more than the head bytes it is allowed and the chunks it hands on.
 */

/** A parse failure; `code` and message as Node's client gives them (HPE_*). */
export class HttpParseError extends Error {
  constructor(
    readonly code: string,
    reason: string,
  ) {
    super(`Parse Error: ${reason}`);
  }
}

export interface ResponseHead {
  status: number;
  reason: string;
  /** The declared Content-Length, or -1 where none (chunked, or to the close). */
  contentLength: number;
  chunked: boolean;
  /** Whether the connection may carry another request after this response. */
  keepAlive: boolean;
  /** Seconds from `Keep-Alive: timeout=N`, or -1. */
  keepAliveTimeoutS: number;
}

export interface ResponseHandlers {
  /** The final response's head (not called for skipped 1xx heads). */
  onHead(head: ResponseHead): void;
  /** A piece of the body (a view into the fed buffer: copy it to keep it past the call). */
  onBody(chunk: Buffer): void;
  /** The response is complete. */
  onComplete(): void;
}

const enum S {
  STATUS,
  HEADERS,
  BODY_LENGTH,
  BODY_CLOSE,
  CHUNK_SIZE,
  CHUNK_DATA,
  CHUNK_DATA_CR,
  CHUNK_DATA_LF,
  TRAILERS,
  DONE,
  /** After a 101, or stopped by the caller: everything is dropped. */
  IGNORE,
}

const CR = 13;
const LF = 10;
const STATUS_LINE = /^HTTP\/(\d)\.(\d) (\d{3})(?: ([^]*))?$/;
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** Control characters llhttp refuses in a header value (HTAB allowed). */
const BAD_VALUE = /[\x00-\x08\x0a-\x1f\x7f]/;
const HEX = /^[0-9A-Fa-f]+/;
/** Chunk extensions: `;name[=token|quoted-string]`, repeated. */
const CHUNK_EXT = /^(?:;[!#$%&'*+\-.^_`|~0-9A-Za-z]+(?:=(?:[!#$%&'*+\-.^_`|~0-9A-Za-z]+|"(?:[^"\\\x00-\x08\x0a-\x1f\x7f]|\\[\t\x20-\x7e\x80-\xff])*"))?)*$/;
const MAX_U64 = '18446744073709551615';
/** 1xx heads skipped in one response at most (each bounded like any head). */
const MAX_INFORMATIONAL = 16;

export class ResponseParser {
  private state = S.STATUS;
  /** Bytes of the current head (or chunk-size line, or trailers) so far. */
  private lineBytes = 0;
  private partial = '';
  private headBytes = 0;
  private informational = 0;
  // The head being read.
  private status = 0;
  private reason = '';
  private major = 0;
  private minor = 0;
  private contentLength = -1;
  private te: string | null = null;
  private connClose = false;
  private connKeepAlive = false;
  private kaTimeout = -1;
  private remaining = 0;
  head: ResponseHead | null = null;

  constructor(
    private readonly h: ResponseHandlers,
    private readonly maxHeadBytes = 16 * 1024,
  ) {}

  /** Whether the response is complete. */
  get complete(): boolean {
    return this.state === S.DONE;
  }

  /** Whether everything is dropped from now on (after a 101, or stop()). */
  get ignoring(): boolean {
    return this.state === S.IGNORE;
  }

  /** Drops whatever comes from now on (the caller gave up on this response). */
  stop(): void {
    this.state = S.IGNORE;
  }

  /** Parses the next bytes; throws HttpParseError. Stops early if a handler calls stop(). */
  execute(data: Buffer): void {
    let i = 0;
    const n = data.length;
    while (i < n) {
      switch (this.state) {
        case S.IGNORE:
          return;
        case S.DONE:
          throw this.head !== null && this.head.keepAlive
            ? new HttpParseError('HPE_INVALID_CONSTANT', 'Expected HTTP/, RTSP/ or ICE/')
            : new HttpParseError('HPE_CLOSED_CONNECTION', 'Data after `Connection: close`');
        case S.STATUS:
        case S.HEADERS:
        case S.TRAILERS:
        case S.CHUNK_SIZE:
        case S.CHUNK_DATA_CR:
        case S.CHUNK_DATA_LF:
          i = this.lines(data, i);
          break;
        case S.BODY_LENGTH:
        case S.CHUNK_DATA: {
          const take = Math.min(this.remaining, n - i);
          this.remaining -= take;
          const chunk = data.subarray(i, i + take);
          i += take;
          const chunked = this.state === S.CHUNK_DATA;
          if (this.remaining === 0) {
            if (chunked) this.state = S.CHUNK_DATA_CR;
            else this.state = S.DONE;
          }
          this.h.onBody(chunk);
          if (this.state === S.DONE) {
            if (i < n) throw this.afterEnd();
            this.h.onComplete();
            return;
          }
          break;
        }
        case S.BODY_CLOSE:
          this.h.onBody(i === 0 ? data : data.subarray(i));
          return;
      }
    }
  }

  /** The connection ended (EOF). Returns whether that completed the response (a body read to the close). */
  finish(): boolean {
    if (this.state === S.BODY_CLOSE) {
      this.state = S.DONE;
      this.h.onComplete();
      return true;
    }
    return false;
  }

  private afterEnd(): HttpParseError {
    return this.head!.keepAlive
      ? new HttpParseError('HPE_INVALID_CONSTANT', 'Expected HTTP/, RTSP/ or ICE/')
      : new HttpParseError('HPE_CLOSED_CONNECTION', 'Data after `Connection: close`');
  }

  /** Line-wise states: reads up to the end of `data` or a state change to a body; returns the new offset. */
  private lines(data: Buffer, from: number): number {
    let i = from;
    const n = data.length;
    while (i < n) {
      const st = this.state;
      if (st !== S.STATUS && st !== S.HEADERS && st !== S.TRAILERS && st !== S.CHUNK_SIZE && st !== S.CHUNK_DATA_CR && st !== S.CHUNK_DATA_LF) return i;
      if (st === S.CHUNK_DATA_CR) {
        if (data[i] !== CR) throw new HttpParseError('HPE_STRICT', 'Expected LF after chunk data');
        this.state = S.CHUNK_DATA_LF;
        i++;
        continue;
      }
      if (st === S.CHUNK_DATA_LF) {
        if (data[i] !== LF) throw new HttpParseError('HPE_STRICT', 'Expected LF after chunk data');
        this.state = S.CHUNK_SIZE;
        this.lineBytes = 0;
        i++;
        continue;
      }
      const lf = data.indexOf(LF, i);
      const end = lf < 0 ? n : lf + 1;
      const limit = st === S.CHUNK_SIZE ? this.maxHeadBytes : this.maxHeadBytes - this.headBytes;
      if (this.lineBytes + (end - i) > limit) {
        throw st === S.CHUNK_SIZE ? new HttpParseError('HPE_CHUNK_EXTENSIONS_OVERFLOW', 'Chunk extensions overflow') : new HttpParseError('HPE_HEADER_OVERFLOW', 'Header overflow');
      }
      if (lf < 0) {
        this.partial += data.toString('latin1', i, n);
        this.lineBytes += n - i;
        return n;
      }
      let line = this.partial + data.toString('latin1', i, lf);
      const lineLen = this.lineBytes + (lf + 1 - i);
      this.partial = '';
      this.lineBytes = 0;
      i = lf + 1;
      if (line.length === 0 || line.charCodeAt(line.length - 1) !== CR) throw this.crExpected(st);
      line = line.slice(0, -1);
      if (line.indexOf('\r') >= 0) throw this.lfExpected(st);
      if (st === S.CHUNK_SIZE) this.chunkSize(line);
      else {
        this.headBytes += lineLen;
        if (st === S.STATUS) this.statusLine(line);
        else if (line.length > 0) this.headerLine(line, st === S.TRAILERS);
        else if (st === S.TRAILERS) {
          this.state = S.DONE;
          if (i < n) throw this.afterEnd();
          this.h.onComplete();
          return n;
        } else {
          this.endOfHead();
          if (this.state === S.DONE) {
            if (i < n) throw this.afterEnd();
            this.h.onComplete();
            return n;
          }
        }
      }
    }
    return i;
  }

  private crExpected(st: S): HttpParseError {
    const where = st === S.STATUS ? 'response line' : st === S.CHUNK_SIZE ? 'chunk size' : 'header value';
    return new HttpParseError('HPE_CR_EXPECTED', `Missing expected CR after ${where}`);
  }

  private lfExpected(st: S): HttpParseError {
    const where = st === S.STATUS ? 'response line' : st === S.CHUNK_SIZE ? 'chunk size' : 'header value';
    return new HttpParseError('HPE_LF_EXPECTED', `Missing expected LF after ${where}`);
  }

  private statusLine(line: string): void {
    const m = STATUS_LINE.exec(line);
    if (!m) {
      if (!line.startsWith('HTTP/')) throw new HttpParseError('HPE_INVALID_CONSTANT', 'Expected HTTP/, RTSP/ or ICE/');
      if (!/^HTTP\/\d\.\d /.test(line)) throw new HttpParseError('HPE_INVALID_VERSION', 'Invalid HTTP version');
      throw new HttpParseError('HPE_INVALID_STATUS', 'Invalid response status');
    }
    const major = m[1].charCodeAt(0) - 48;
    const minor = m[2].charCodeAt(0) - 48;
    if (!((major === 1 && minor <= 1) || (major === 0 && minor === 9) || (major === 2 && minor === 0))) throw new HttpParseError('HPE_INVALID_VERSION', 'Invalid HTTP version');
    this.major = major;
    this.minor = minor;
    this.status = Number(m[3]);
    this.reason = m[4] ?? '';
    this.contentLength = -1;
    this.te = null;
    this.connClose = false;
    this.connKeepAlive = false;
    this.kaTimeout = -1;
    this.state = S.HEADERS;
  }

  private headerLine(line: string, trailer: boolean): void {
    const colon = line.indexOf(':');
    if (colon <= 0 || !TOKEN.test(line.slice(0, colon))) throw new HttpParseError('HPE_INVALID_HEADER_TOKEN', 'Invalid header token');
    let a = colon + 1;
    let b = line.length;
    while (a < b && (line.charCodeAt(a) === 32 || line.charCodeAt(a) === 9)) a++;
    while (b > a && (line.charCodeAt(b - 1) === 32 || line.charCodeAt(b - 1) === 9)) b--;
    const value = line.slice(a, b);
    if (BAD_VALUE.test(value)) throw new HttpParseError('HPE_INVALID_HEADER_TOKEN', 'Invalid header value char');
    // Only four names matter (content-length 14, transfer-encoding 17, connection and keep-alive 10).
    const name = colon === 14 || colon === 17 || colon === 10 ? line.slice(0, colon).toLowerCase() : '';
    if (trailer) {
      // llhttp reads trailers as more headers of the chunked message: it refuses a Content-Length
      // and an empty Transfer-Encoding there; nothing else in them matters.
      if (name === 'content-length') throw new HttpParseError('HPE_INVALID_CONTENT_LENGTH', "Content-Length can't be present with Transfer-Encoding");
      if (name === 'transfer-encoding' && value.length === 0) throw new HttpParseError('HPE_INVALID_TRANSFER_ENCODING', 'Empty Transfer-Encoding');
      return;
    }
    if (name === 'content-length') {
      if (this.contentLength >= 0) throw new HttpParseError('HPE_UNEXPECTED_CONTENT_LENGTH', 'Duplicate Content-Length');
      if (this.te !== null) throw new HttpParseError('HPE_INVALID_CONTENT_LENGTH', "Content-Length can't be present with Transfer-Encoding");
      if (value.length === 0) throw new HttpParseError('HPE_INVALID_CONTENT_LENGTH', 'Empty Content-Length');
      if (!/^\d+$/.test(value)) throw new HttpParseError('HPE_INVALID_CONTENT_LENGTH', 'Invalid character in Content-Length');
      const digits = value.replace(/^0+(?=\d)/, '');
      if (digits.length > 20 || (digits.length === 20 && digits > MAX_U64)) throw new HttpParseError('HPE_INVALID_CONTENT_LENGTH', 'Content-Length overflow');
      this.contentLength = Number(digits);
    } else if (name === 'transfer-encoding') {
      if (this.te !== null) throw new HttpParseError('HPE_INVALID_TRANSFER_ENCODING', 'Duplicate Transfer-Encoding');
      if (this.contentLength >= 0) throw new HttpParseError('HPE_INVALID_TRANSFER_ENCODING', "Transfer-Encoding can't be present with Content-Length");
      if (value.length === 0) throw new HttpParseError('HPE_INVALID_TRANSFER_ENCODING', 'Empty Transfer-Encoding');
      // llhttp takes `chunked<HTAB>` for another coding (the body then runs to the close): refused.
      if (line.slice(b).includes('\t')) throw new HttpParseError('HPE_INVALID_TRANSFER_ENCODING', 'Invalid Transfer-Encoding');
      for (const t of value.split(',')) if (!TOKEN.test(t.trim())) throw new HttpParseError('HPE_INVALID_TRANSFER_ENCODING', 'Invalid Transfer-Encoding');
      this.te = value;
    } else if (name === 'connection') {
      for (const t of value.split(',')) {
        const k = t.trim().toLowerCase();
        if (k === 'close') this.connClose = true;
        else if (k === 'keep-alive') this.connKeepAlive = true;
      }
    } else if (name === 'keep-alive') {
      const m = /(?:^|[\s,])timeout=(\d{1,9})(?![^,\s])/i.exec(value);
      if (m) this.kaTimeout = Number(m[1]);
    }
  }

  private endOfHead(): void {
    this.headBytes = 0;
    const status = this.status;
    if (status >= 100 && status < 200) {
      if (status === 101) {
        this.state = S.IGNORE; // Node's client, without an 'upgrade' listener, waits for its deadline
        return;
      }
      if (++this.informational > MAX_INFORMATIONAL) throw new HttpParseError('HPE_HEADER_OVERFLOW', 'Too many informational responses');
      // A 1xx that does not keep the connection (HTTP/1.0, `Connection: close`): nothing may follow it (llhttp).
      if (!(this.major > 0 && this.minor > 0 ? !this.connClose : this.connKeepAlive)) throw new HttpParseError('HPE_CLOSED_CONNECTION', 'Data after `Connection: close`');
      this.state = S.STATUS; // the final response follows
      return;
    }
    const chunked = this.te !== null && this.te.slice(this.te.lastIndexOf(',') + 1).trim().toLowerCase() === 'chunked';
    const noBody = status === 204 || status === 304;
    const toClose = !noBody && !chunked && this.contentLength < 0;
    const v11 = this.major > 0 && this.minor > 0;
    const keepAlive = !toClose && (v11 ? !this.connClose : this.connKeepAlive);
    this.head = { status, reason: this.reason, contentLength: chunked ? -1 : this.contentLength, chunked, keepAlive, keepAliveTimeoutS: this.kaTimeout };
    if (noBody) this.state = S.DONE;
    else if (chunked) {
      this.state = S.CHUNK_SIZE;
      this.lineBytes = 0;
    } else if (this.contentLength >= 0) {
      this.remaining = this.contentLength;
      this.state = this.contentLength === 0 ? S.DONE : S.BODY_LENGTH;
    } else this.state = S.BODY_CLOSE;
    this.h.onHead(this.head);
  }

  private chunkSize(line: string): void {
    const m = HEX.exec(line);
    if (!m) throw new HttpParseError('HPE_INVALID_CHUNK_SIZE', 'Invalid character in chunk size');
    if (!CHUNK_EXT.test(line.slice(m[0].length))) throw new HttpParseError('HPE_INVALID_CHUNK_SIZE', 'Invalid character in chunk size');
    const digits = m[0].replace(/^0+(?=[0-9A-Fa-f])/, '');
    if (digits.length > 16) throw new HttpParseError('HPE_INVALID_CHUNK_SIZE', 'Chunk size overflow');
    const size = parseInt(digits, 16);
    if (size === 0) {
      this.state = S.TRAILERS;
      this.headBytes = 0;
      return;
    }
    this.remaining = size;
    this.state = S.CHUNK_DATA;
  }
}
