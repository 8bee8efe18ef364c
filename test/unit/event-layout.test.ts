/**
 * The 48-byte cuzk_event record (src/engine/model/event-layout.ts) against the C layout of
 * native/include/cuzk_engine.h: seq @0 u64, t_ns @8 u64, job @16 u64, value @24 u64,
 * partition @32 u32, type @36 u16, kind @38 u8 (0xff = none), gpu @39 u8 (0xff = none),
 * worker @40 u16 (0xffff = none), flags @42 u16, aux @44 u32, all little-endian. Bytes are
 * written here by hand, not through the module's own readers.
 */
import { encodeEvent, encodeEvents, EVENT_SIZE, readU64, writeU64 } from '../../src/engine/model/event-layout';

const bytes = (v: DataView, off = 0, n = v.byteLength - off) => [...new Uint8Array(v.buffer, v.byteOffset + off, n)];

describe('readU64 / writeU64', () => {
  test('little-endian halves: low word first', () => {
    const v = new DataView(new ArrayBuffer(16));
    // 0x0000_0102_0304_0506 at offset 4
    [6, 5, 4, 3, 2, 1, 0, 0].forEach((b, i) => v.setUint8(4 + i, b));
    expect(readU64(v, 4)).toBe(0x010203040506);
    expect(readU64(v, 0)).toBe(0x03040506 * 0x1_0000_0000);
  });

  test('values up to 2^53 - 1 round-trip, and their bytes are the little-endian u64', () => {
    for (const x of [0, 1, 0xffffffff, 0x1_0000_0000, 0x1_0000_0001, 123456789012345, Number.MAX_SAFE_INTEGER]) {
      const v = new DataView(new ArrayBuffer(8));
      writeU64(v, 0, x);
      expect(readU64(v, 0)).toBe(x);
      expect(v.getBigUint64(0, true)).toBe(BigInt(x));
    }
  });

  test('negative values write 0; fractions round to the nearest integer', () => {
    const v = new DataView(new ArrayBuffer(8));
    v.setBigUint64(0, 0xffffffffffffffffn, true);
    writeU64(v, 0, -5);
    expect(v.getBigUint64(0, true)).toBe(0n);
    writeU64(v, 0, -0.4);
    expect(v.getBigUint64(0, true)).toBe(0n);
    writeU64(v, 0, 2.5);
    expect(v.getBigUint64(0, true)).toBe(3n);
    writeU64(v, 0, 2.4);
    expect(v.getBigUint64(0, true)).toBe(2n);
    writeU64(v, 0, 0x1_0000_0000 + 0.6);
    expect(v.getBigUint64(0, true)).toBe(0x1_0000_0001n);
  });

  test('writes only its 8 bytes', () => {
    const v = new DataView(new ArrayBuffer(12));
    for (let i = 0; i < 12; i++) v.setUint8(i, 0xaa);
    writeU64(v, 2, 0x0102030405);
    expect(bytes(v)).toEqual([0xaa, 0xaa, 5, 4, 3, 2, 1, 0, 0, 0, 0xaa, 0xaa]);
  });
});

describe('encodeEvent(s)', () => {
  test('every field at its C offset, little-endian', () => {
    const v = new DataView(new ArrayBuffer(EVENT_SIZE * 2));
    encodeEvent(v, EVENT_SIZE, {
      seq: 0x0102,
      tNs: 0x1_0000_0003,
      job: 0x04,
      value: 0x0506,
      partition: 0x0708090a,
      type: 0x0b0c,
      kind: 0x0d,
      gpu: 0x0e,
      worker: 0x0f10,
      flags: 0x1112,
      aux: 0x13141516,
    });
    expect(bytes(v, 0, EVENT_SIZE)).toEqual(new Array(EVENT_SIZE).fill(0));
    expect(bytes(v, EVENT_SIZE)).toEqual([
      0x02, 0x01, 0, 0, 0, 0, 0, 0, // seq @0
      0x03, 0, 0, 0, 0x01, 0, 0, 0, // t_ns @8
      0x04, 0, 0, 0, 0, 0, 0, 0, // job @16
      0x06, 0x05, 0, 0, 0, 0, 0, 0, // value @24
      0x0a, 0x09, 0x08, 0x07, // partition @32
      0x0c, 0x0b, // type @36
      0x0d, // kind @38
      0x0e, // gpu @39
      0x10, 0x0f, // worker @40
      0x12, 0x11, // flags @42
      0x16, 0x15, 0x14, 0x13, // aux @44
    ]);
  });

  test('absent fields: job, value, partition, flags, aux 0; kind and gpu 0xff; worker 0xffff', () => {
    const v = encodeEvents([{ seq: 7, tNs: 9, type: 3 }]);
    expect(v.byteLength).toBe(48);
    expect(bytes(v)).toEqual([
      7, 0, 0, 0, 0, 0, 0, 0,
      9, 0, 0, 0, 0, 0, 0, 0,
      0, 0, 0, 0, 0, 0, 0, 0,
      0, 0, 0, 0, 0, 0, 0, 0,
      0, 0, 0, 0,
      3, 0,
      0xff,
      0xff,
      0xff, 0xff,
      0, 0,
      0, 0, 0, 0,
    ]);
  });

  test('records follow each other every 48 bytes; no records is one empty record-sized buffer', () => {
    const v = encodeEvents([
      { seq: 1, tNs: 10, type: 1, kind: 0, gpu: 0, worker: 0 },
      { seq: 2, tNs: 20, type: 2, job: 5 },
      { seq: 3, tNs: 30, type: 6, aux: 1 },
    ]);
    expect(v.byteLength).toBe(3 * 48);
    expect(v.getBigUint64(48 * 0, true)).toBe(1n);
    expect(v.getBigUint64(48 * 1, true)).toBe(2n);
    expect(v.getBigUint64(48 * 2, true)).toBe(3n);
    expect(v.getBigUint64(48 * 1 + 8, true)).toBe(20n);
    expect(v.getBigUint64(48 * 1 + 16, true)).toBe(5n);
    expect(v.getUint16(48 * 2 + 36, true)).toBe(6);
    expect(v.getUint32(48 * 2 + 44, true)).toBe(1);
    // explicit zeros are zeros, not "none"
    expect(v.getUint8(38)).toBe(0);
    expect(v.getUint8(39)).toBe(0);
    expect(v.getUint16(40, true)).toBe(0);
    const empty = encodeEvents([]);
    expect(empty.byteLength).toBe(48);
    expect(bytes(empty)).toEqual(new Array(48).fill(0));
  });
});
