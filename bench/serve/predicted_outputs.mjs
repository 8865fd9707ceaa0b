// node bench/serve/predicted_outputs.mjs CAF_LAUNCH [--rounds=3] [--tokens=256] [--streams=1,8]
// What OpenAI's Predicted Outputs buy on a server (embedded default, no draft head): STREAMS
// concurrent greedy chat completions of TOKENS tokens (ignore_eos), each (a) without a prediction,
// (b) with its own earlier answer as the prediction (a rewrite that changes nothing), (c) with that
// answer edited (a sentence inserted a third of the way in, a word changed two thirds in). The
// answers must be equal in all three (checked); prints output tokens/s, and the accepted and
// rejected prediction tokens per answer. Medians over rounds at the end.
import { startEmbedded } from './embedded_server.mjs';

const args = process.argv.slice(2);
const bin = args.find((a) => !a.startsWith('--'));
const opt = (name, dflt) => args.find((a) => a.startsWith(`--${name}=`))?.split('=')[1] ?? dflt;
const rounds = Number(opt('rounds', 3)), tokens = Number(opt('tokens', 256));
const streamCounts = opt('streams', '1,8').split(',').map(Number);
if (!bin) {
  console.error('usage: node bench/serve/predicted_outputs.mjs CAF_LAUNCH [--rounds=N] [--tokens=N] [--streams=1,8]');
  process.exit(2);
}
const MODEL = 'deepseek-v4.1-flash';

const start = (exe) => startEmbedded(exe, '/tmp/predicted-kv-');

const chat = (base, body) => fetch(base + '/v1/chat/completions', {
  method: 'POST', headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ model: MODEL, max_tokens: tokens, ignore_eos: true, temperature: 0, ...body }),
}).then(async (r) => {
  const j = await r.json();
  if (!r.ok) throw new Error(JSON.stringify(j));
  return j;
});

const edit = (t) => {
  const a = Math.floor(t.length / 3), b = Math.floor((2 * t.length) / 3);
  return t.slice(0, a) + ' This sentence was added by the editor. ' + t.slice(a, b) + 'changed' + t.slice(b + 7);
};

async function pass(base, streams, predictionOf) {
  const prompts = [...Array(streams).keys()].map((i) => [{ role: 'user', content: `Rewrite document number ${i} please.` }]);
  const t0 = performance.now();
  const res = await Promise.all(prompts.map((messages, i) => chat(base, {
    messages, ...(predictionOf ? { prediction: { type: 'content', content: predictionOf(i) } } : {}) })));
  const s = (performance.now() - t0) / 1000;
  const n = res.reduce((a, r) => a + r.usage.completion_tokens, 0);
  const d = res.map((r) => r.usage.completion_tokens_details);
  return { rate: n / s, texts: res.map((r) => r.choices[0].message.content),
           accepted: d.reduce((a, x) => a + x.accepted_prediction_tokens, 0) / res.length,
           rejected: d.reduce((a, x) => a + x.rejected_prediction_tokens, 0) / res.length };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const rows = {};
for (let round = 0; round < rounds; ++round) {
  const server = await start(bin);
  try {
    console.log(`\nround ${round + 1}: | streams | prediction | tok/s | accepted / rejected per answer |`);
    for (const streams of streamCounts) {
      await pass(server.base, streams, null); // warm-up
      const none = await pass(server.base, streams, null);
      const right = await pass(server.base, streams, (i) => none.texts[i]);
      const edited = await pass(server.base, streams, (i) => edit(none.texts[i]));
      for (const [name, r] of [['none', none], ['its own answer', right], ['edited', edited]]) {
        if (r.texts.some((t, i) => t !== none.texts[i]))
          throw new Error(`the answers changed with prediction "${name}"`);
        const key = `${streams}|${name}`;
        (rows[key] ??= []).push(r);
        console.log(`| ${streams} | ${name} | ${r.rate.toFixed(0)} | ${r.accepted.toFixed(0)} / ${r.rejected.toFixed(0)} |`);
      }
    }
  } finally {
    await server.stop();
  }
}
console.log(`\nmedians over ${rounds} rounds, ${tokens} tokens per answer:\n| streams | prediction | tok/s | accepted / rejected per answer |\n|---|---|---|---|`);
for (const [key, rs] of Object.entries(rows)) {
  const [streams, name] = key.split('|');
  console.log(`| ${streams} | ${name} | ${median(rs.map((r) => r.rate)).toFixed(0)} | ` +
              `${median(rs.map((r) => r.accepted)).toFixed(0)} / ${median(rs.map((r) => r.rejected)).toFixed(0)} |`);
}
