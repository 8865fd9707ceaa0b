// A minimal PNG writer for the vision tests (8-bit RGB, no filter, node:zlib), so test images
// are made in the test, seeded, instead of stored.
import zlib from 'node:zlib';

const crcTable = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; ++k) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});
function crc32(buf) {
  let c = 0xffffffff;
  for (const b of buf) c = crcTable[(c ^ b) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}
function chunk(type, data) {
  const len = Buffer.alloc(4); len.writeUInt32BE(data.length);
  const td = Buffer.concat([Buffer.from(type, 'ascii'), data]);
  const crc = Buffer.alloc(4); crc.writeUInt32BE(crc32(td));
  return Buffer.concat([len, td, crc]);
}
/// A width x height PNG whose pixels are a seeded pseudo-random pattern (`flat`: one colour).
export function png(width, height, seed, flat = false) {
  const raw = Buffer.alloc((width * 3 + 1) * height);
  let x = (seed * 2654435761) >>> 0;
  for (let y = 0; y < height; ++y) {
    raw[y * (width * 3 + 1)] = 0; // filter: none
    for (let i = 0; i < width * 3; ++i) {
      x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
      raw[y * (width * 3 + 1) + 1 + i] = flat ? 128 : x >>> 24;
    }
  }
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0); ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8; ihdr[9] = 2; ihdr[10] = 0; ihdr[11] = 0; ihdr[12] = 0;
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), chunk('IHDR', ihdr),
                        chunk('IDAT', zlib.deflateSync(raw)), chunk('IEND', Buffer.alloc(0))]);
}
export const dataUri = (buf, type = 'image/png') => `data:${type};base64,${buf.toString('base64')}`;
