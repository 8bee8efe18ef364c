/**
 * Reads a file we were told to trust (a config, a web config, a certificate or key) only
 * if it is a regular file, and only up to a size: the type is checked before anything is
 * opened or read, the open is non-blocking and the type checked again on what was opened,
 * and the read stops one byte past the limit. So a FIFO cannot hang the process (opening
 * one for reading waits for a writer, and a blocked open ignores SIGTERM), /dev/zero or a
 * link to it cannot fill memory, and a file swapped between the checks is caught.
 */
import * as fs from 'node:fs';

/** The file is not one we read (its type, or its size); the message says why. */
export class FileRefused extends Error {}

const { O_RDONLY, O_NONBLOCK, O_NOCTTY } = fs.constants;

/** "a named pipe (FIFO)", "a directory", …: what a non-regular file is, for a message. */
export function fileKind(st: fs.Stats): string {
  if (st.isDirectory()) return 'a directory';
  if (st.isFIFO()) return 'a named pipe (FIFO)';
  if (st.isCharacterDevice()) return 'a character device';
  if (st.isBlockDevice()) return 'a block device';
  if (st.isSocket()) return 'a socket';
  return 'not a regular file';
}

function sizeText(bytes: number): string {
  return bytes % (1024 * 1024) === 0 ? `${bytes / (1024 * 1024)} MiB` : `${bytes} bytes`;
}

function refuseIfNot(st: fs.Stats, maxBytes: number): void {
  if (!st.isFile()) throw new FileRefused(`is ${fileKind(st)}, not a regular file`);
  if (st.size > maxBytes) throw new FileRefused(`larger than ${sizeText(maxBytes)}`);
}

/**
 * The whole file, if it is a regular file of at most `maxBytes`. Throws FileRefused (type,
 * size) or the system error (its `code`: ENOENT, EACCES, …).
 */
export function readRegularFile(file: string, maxBytes: number): Buffer {
  refuseIfNot(fs.statSync(file), maxBytes);
  const fd = fs.openSync(file, O_RDONLY | O_NONBLOCK | O_NOCTTY);
  try {
    refuseIfNot(fs.fstatSync(fd), maxBytes);
    // Read to the end, but never past the limit (the file may grow while we read).
    const buf = Buffer.allocUnsafe(maxBytes + 1);
    let n = 0;
    for (;;) {
      const r = fs.readSync(fd, buf, n, buf.length - n, null);
      if (r <= 0) break;
      n += r;
      if (n > maxBytes) throw new FileRefused(`larger than ${sizeText(maxBytes)}`);
    }
    return Buffer.from(buf.subarray(0, n));
  } finally {
    fs.closeSync(fd);
  }
}
