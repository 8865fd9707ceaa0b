// Minimal image writers for the vision tests, so test images are made in the test, seeded,
// instead of stored: PNG (8-bit RGB, no filter, node:zlib) and GIF (a 256-colour palette, every
// LZW code a literal). WebP files come from Debian's `cwebp` (package webp) in the tests.
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
  const rgb = Buffer.alloc(width * height * 3);
  let x = (seed * 2654435761) >>> 0;
  for (let i = 0; i < rgb.length; ++i) {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    rgb[i] = flat ? 128 : x >>> 24;
  }
  return pngOf(width, height, rgb);
}

/// A PNG of the given RGB pixels (row-major, 3 bytes each).
export function pngOf(width, height, rgb) {
  const raw = Buffer.alloc((width * 3 + 1) * height);
  for (let y = 0; y < height; ++y) {
    raw[y * (width * 3 + 1)] = 0; // filter: none
    rgb.copy(raw, y * (width * 3 + 1) + 1, y * width * 3, (y + 1) * width * 3);
  }
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0); ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8; ihdr[9] = 2; ihdr[10] = 0; ihdr[11] = 0; ihdr[12] = 0;
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), chunk('IHDR', ihdr),
                        chunk('IDAT', zlib.deflateSync(raw)), chunk('IEND', Buffer.alloc(0))]);
}
/// A seeded width x height picture of at most 256 colours: its palette (768 bytes), each pixel's
/// index, and its RGB pixels (what a PNG or GIF of it decodes to).
export function palettedImage(width, height, seed) {
  let x = (seed * 2654435761) >>> 0;
  const next = () => (x = (Math.imul(x, 1664525) + 1013904223) >>> 0) >>> 24;
  const palette = Buffer.from(Array.from({ length: 768 }, next));
  const indices = Buffer.from(Array.from({ length: width * height }, next));
  const rgb = Buffer.alloc(width * height * 3);
  indices.forEach((c, i) => palette.copy(rgb, 3 * i, 3 * c, 3 * c + 3));
  return { palette, indices, rgb };
}

/// A one-frame GIF of `indices` over a 256-colour `palette` (from palettedImage): every LZW code a
/// literal, a clear code every 100 so codes stay 9 bits wide.
export function gif(width, height, { palette, indices }) {
  const le16 = (v) => [v & 0xff, v >> 8];
  const head = Buffer.from([...Buffer.from('GIF89a', 'latin1'), ...le16(width), ...le16(height), 0xf7, 0, 0]);
  const codes = [];
  indices.forEach((c, i) => { if (i % 100 === 0) codes.push(256); codes.push(c); });
  codes.push(257);
  const lzw = [];
  let acc = 0, bits = 0;
  for (const c of codes) {
    acc |= c << bits;
    for (bits += 9; bits >= 8; bits -= 8, acc >>>= 8) lzw.push(acc & 0xff);
  }
  if (bits > 0) lzw.push(acc & 0xff);
  const blocks = [];
  for (let at = 0; at < lzw.length; at += 255) {
    const part = lzw.slice(at, at + 255);
    blocks.push(part.length, ...part);
  }
  const frame = Buffer.from([0x2c, ...le16(0), ...le16(0), ...le16(width), ...le16(height), 0, 8, ...blocks, 0, 0x3b]);
  return Buffer.concat([head, palette, frame]);
}

export const dataUri = (buf, type = 'image/png') => `data:${type};base64,${buf.toString('base64')}`;
