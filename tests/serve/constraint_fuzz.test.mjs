// Mutated structured-output constraints against the embedded default: regexes, Lark grammars,
// JSON schemas (response_format) and tool parameters (tool_choice "required"), each with 1-3
// random edits (characters inserted, deleted or repeated; keywords set to values of the wrong
// kind). Every request must get a 200 or a 4xx in OpenAI's error shape whose message says what is
// wrong in words (never an exception's text), no 5xx, and the server must stay up. Found so far:
// keyword values of the wrong type answered with a JSON library's exception; a grammar whose
// first rule is empty (`sta:rt ::= ...`) compiled to the empty output alone and failed with a
// 500 at the decode side; `x?` in a grammar read as Lark's rule marker.
// FUZZ_SEED=<n> replays another draw, FUZZ_COUNT=<n> sends more. Usage: node constraint_fuzz.test.mjs caf-launch
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { check, finishSeeded, postChat, seededRandom, serverUp, setupFailed, startServer } from './harness.mjs';

const exe = process.argv[2];
const SEED = Number(process.env.FUZZ_SEED ?? 20261206), COUNT = Number(process.env.FUZZ_COUNT ?? 1000);
console.log(`fuzz seed ${SEED} (replay with FUZZ_SEED=${SEED}), ${COUNT} requests`);
const { rand, pick } = seededRandom(SEED);

const regexes = ['^[a-z]+(_[a-z]+)*$', '^\\d{4}-\\d{2}-\\d{2}$', '[A-Z]{2,3}-[0-9]+', '^(yes|no|maybe)$',
  '^#[0-9a-fA-F]{6}$', '(\\w+@\\w+\\.com)', '^[^ ]{1,8}$', 'v[0-9]+\\.[0-9]+(\\.[0-9]+)?'];
const grammars = ['start: "a" b*\nb: /[0-9]+/ | "x"', 'start ::= item ("," item)*\nitem ::= "yes" | "no"',
  'start: obj\nobj: "{" pair? "}"\npair: /"[a-z]+"/ ":" /[0-9]{1,3}/', '// c\nstart: ("a" | "b")+ [ "!" ]',
  '?start: value\nvalue: NUMBER | "[" value ("," value)* "]"\nNUMBER: /-?[0-9]+/'];
const schemas = [
  { type: 'object', properties: { name: { type: 'string', maxLength: 20 }, age: { type: 'integer', minimum: 0 } }, required: ['name'] },
  { type: 'array', items: { enum: ['red', 'green', 'blue'] }, uniqueItems: true, maxItems: 3 },
  { $defs: { p: { type: 'object', properties: { x: { type: 'number' } } } }, type: 'object', properties: { a: { $ref: '#/$defs/p' }, b: { anyOf: [{ type: 'string', pattern: '^[a-z]+$' }, { type: 'null' }] } } },
  { type: 'object', properties: { kind: { enum: ['a', 'b'] }, n: { type: 'integer' } }, if: { properties: { kind: { const: 'a' } } }, then: { required: ['n'] } },
  { type: 'object', properties: { tags: { type: 'array', items: { type: 'string', format: 'email' }, minItems: 1 } }, additionalProperties: false },
];
const junk = ['(', ')', '[', ']', '{', '}', '*', '+', '?', '|', '\\', '^', '$', '.', '-', ',', '9', '{99999}', '(?<=', '\\p{L}',
  '\\u', '\u00e9', '\u{1F600}', '/', '"', ':', '::=', '\n', '#', 'start', '!', '\0'];
const mutateText = (s) => {
  let t = s;
  for (let k = 1 + Math.floor(rand() * 3); k > 0; --k) {
    const at = Math.floor(rand() * (t.length + 1)), op = rand();
    if (op < 0.5) t = t.slice(0, at) + pick(junk) + t.slice(at);
    else if (op < 0.8) t = t.slice(0, at) + t.slice(at + 1 + Math.floor(rand() * 3));
    else t = t.slice(0, at) + t.slice(at, at + 8).repeat(2 + Math.floor(rand() * 4)) + t.slice(at + 8);
  }
  return t;
};
const values = [true, false, null, [], {}, 0, -1, 1.5, 1e300, 'x', '', '#/', '#/$defs/none', [1, 'a'], { type: 'string' },
  [true], { $ref: '#' }, '[', 2 ** 63, { not: {} }, { enum: [] }];
const keywords = ['type', 'properties', 'items', 'required', 'enum', 'const', 'allOf', 'anyOf', 'oneOf', 'not', 'if', 'then',
  '$ref', 'pattern', 'format', 'minimum', 'maxLength', 'minItems', 'additionalProperties', 'uniqueItems', 'dependencies'];
const mutateSchema = (s) => {
  const c = structuredClone(s);
  for (let k = 1 + Math.floor(rand() * 3); k > 0; --k) {
    const objects = [];
    const walk = (x) => {
      if (x && typeof x === 'object') {
        if (!Array.isArray(x)) objects.push(x);
        Object.values(x).forEach(walk);
      }
    };
    walk(c);
    const o = pick(objects);
    if (rand() < 0.8 || Object.keys(o).length === 0) o[pick(keywords)] = structuredClone(pick(values));
    else delete o[pick(Object.keys(o))];
  }
  return c;
};

const logPath = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'deepinfer-fuzz-')), 'server.log');
const server = await startServer(exe, { name: 'fuzzed', logPath });
try {
  await serverUp(server);
  await check(`${COUNT} mutated regexes, grammars, schemas and tool parameters: each a 200 or a 4xx that says what is wrong, no 5xx, the server up`, async () => {
    const tally = {}, wrong = [];
    const messages = [{ role: 'user', content: 'hi' }];
    for (let i = 0; i < COUNT; ++i) {
      const kind = pick(['regex', 'grammar', 'schema', 'tool']);
      let body = { model: 'deepseek-v4.1-flash', messages, max_tokens: 8, temperature: 0 };
      if (kind === 'regex') body.structured_outputs = { regex: rand() < 0.8 ? mutateText(pick(regexes)) : pick(regexes) };
      else if (kind === 'grammar') body.structured_outputs = { grammar: rand() < 0.8 ? mutateText(pick(grammars)) : pick(grammars) };
      else if (kind === 'schema') body.response_format = { type: 'json_schema', json_schema: { name: 'x', schema: mutateSchema(pick(schemas)) } };
      else body = { ...body, tools: [{ type: 'function', function: { name: 'f', parameters: mutateSchema(pick(schemas)) } }], tool_choice: 'required' };
      const r = await postChat(server.base, body);
      tally[`${kind} ${r.status}`] = (tally[`${kind} ${r.status}`] ?? 0) + 1;
      const message = r.json?.error?.message ?? '';
      if (r.status >= 500 || (r.status !== 200 && (typeof message !== 'string' || !message || /json\.exception|invalid constraint/.test(message))))
        wrong.push(`#${i} ${kind}: ${r.status} ${String(message).slice(0, 160)} <- ${JSON.stringify(body).slice(0, 300)}`);
    }
    console.log(`     ${JSON.stringify(tally)}`);
    assert.deepEqual(wrong, [], 'every answer a 200 or a 4xx in words');
    assert.ok(Object.keys(tally).some((k) => k.endsWith(' 200')) && Object.keys(tally).some((k) => k.endsWith(' 400')),
              'the draw has both kinds of answer');
    assert.equal((await fetch(server.base + '/health')).status, 200, 'the server is up');
  });
} catch (e) {
  setupFailed(e);
}
await finishSeeded(server, logPath, SEED);
