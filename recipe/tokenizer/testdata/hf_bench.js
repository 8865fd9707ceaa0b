// node hf_bench.js TOKENIZER_JSON TEXT_FILE REPS
// HuggingFace reference timing: one whole-string encode of the file per repetition (after a
// warm-up); prints "hf <tokens> <milliseconds>" per repetition.
const { Tokenizer } = require("@anush008/tokenizers");
const fs = require("fs");
(async () => {
  const tok = Tokenizer.fromFile(process.argv[2]);
  const text = fs.readFileSync(process.argv[3], "utf8");
  const reps = Number(process.argv[4] || 1);
  const opts = { addSpecialTokens: false };
  await tok.encode(text.slice(0, 10000), null, opts);
  for (let r = 0; r < reps; r++) {
    const t0 = process.hrtime.bigint();
    const n = (await tok.encode(text, null, opts)).getIds().length;
    console.log(`hf ${n} ${(Number(process.hrtime.bigint() - t0) / 1e6).toFixed(3)}`);
  }
})().catch(e => { console.error(e); process.exit(1); });
