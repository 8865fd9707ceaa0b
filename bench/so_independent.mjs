// Judge deepinfer-so-check's random outputs with an independent ECMA-262 validator,
// @cfworker/json-schema (installed with the API clients by scripts/bootstrap.sh).
//
//   build/recipe/deepinfer-so-check --json-whitespace 16 --sample 10 --sample-out drawn.jsonl < mb.jsonl > so.jsonl
//   node bench/so_independent.mjs mb.jsonl drawn.jsonl
//
// Our validator shares the compiler's reading of every keyword, so a keyword both misread would
// pass `--sample` unseen. @cfworker/json-schema was written apart from both; it runs `pattern`
// as a JavaScript RegExp in unicode mode (ECMA-262, as JSON Schema says) and checks the formats
// date, time, date-time, duration, uri, uri-reference, uri-template, email, hostname, ipv4, ipv6,
// regex, uuid, json-pointer and relative-json-pointer (and `url`, which is no JSON Schema format:
// the compiler reads it as an annotation, so those rejections are listed apart). Each rejection
// is listed with the keyword and schema location the validator names.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { createRequire } from 'node:module';

const cache = process.env.DEEPINFER_CACHE || path.join(os.homedir(), '.cache', 'deepinfer');
const require = createRequire(path.join(cache, 'api-clients', 'node_modules', 'x.js'));
const { Validator } = require('@cfworker/json-schema');

if (process.argv.length !== 4) {
  console.error('usage: node bench/so_independent.mjs MASKBENCH.jsonl DRAWN.jsonl');
  process.exit(2);
}

function draftOf(schema) {
  const s = typeof schema === 'object' && schema !== null ? String(schema.$schema || '') : '';
  if (s.includes('draft-04')) return '4';
  if (s.includes('draft-06') || s.includes('draft-07')) return '7';
  if (s.includes('2019-09')) return '2019-09';
  return '2020-12';
}

async function lines(file) {
  const out = [];
  const rl = readline.createInterface({ input: fs.createReadStream(file), crlfDelay: Infinity });
  for await (const line of rl) if (line.trim()) out.push(JSON.parse(line));
  return out;
}

const schemas = new Map();
for (const d of await lines(process.argv[2])) schemas.set(d.file ?? '', d.schema);

const validators = new Map();
const byKeyword = new Map();
const examples = new Map();
let total = 0, faults = 0, skipped = 0, rejected = 0;
const longNumber = /[0-9]{16}|[0-9][eE][+-]?[0-9]{3,}/;
for (const d of await lines(process.argv[3])) {
  ++total;
  if (d.fault) { ++faults; continue; }
  if (longNumber.test(d.text)) { ++skipped; continue; }
  if (!validators.has(d.file)) {
    try {
      validators.set(d.file, new Validator(schemas.get(d.file), draftOf(schemas.get(d.file)), false));
    } catch (e) {
      validators.set(d.file, e);
    }
  }
  const v = validators.get(d.file);
  if (v instanceof Error) { ++skipped; continue; }
  let result;
  try {
    result = v.validate(JSON.parse(d.text));
  } catch (e) {
    ++skipped;  // a schema it cannot walk (an unresolved remote $ref...)
    continue;
  }
  if (result.valid) continue;
  ++rejected;
  // The deepest error names the keyword that failed; the others are its parents (allOf, properties...).
  const leaf = result.errors.reduce((a, b) => (b.keywordLocation.length > a.keywordLocation.length ? b : a));
  const key = leaf.keyword === 'format' ? `format ${leaf.error.match(/format "([^"]+)"/)?.[1] ?? ''}`.trim() : leaf.keyword;
  byKeyword.set(key, (byKeyword.get(key) || 0) + 1);
  const ek = `${key} ${d.file}`;
  if (!examples.has(ek)) examples.set(ek, { file: d.file, text: d.text.slice(0, 300), where: leaf.keywordLocation, error: leaf.error });
}
console.log(`outputs ${total}, faults in the draw ${faults}, not judged ${skipped} (long numbers, schemas it cannot load), rejected ${rejected}`);
for (const [k, n] of [...byKeyword].sort((a, b) => b[1] - a[1])) console.log(`  ${String(n).padStart(6)}  ${k}`);
for (const [k, e] of [...examples].sort()) console.log(`\n${k}\n  output: ${e.text}\n  at ${e.where}: ${e.error}`);
