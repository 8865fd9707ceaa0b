// node hf_encode.js TOKENIZER_JSON RECORDS_JSONL OUT_TXT
// The HuggingFace reference (npm @anush008/tokenizers, found through NODE_PATH): encodes every
// record (one JSON string per input line) without added special tokens and writes one line of
// space-separated ids per record.
const { Tokenizer } = require("@anush008/tokenizers");
const fs = require("fs");
(async () => {
  const tok = Tokenizer.fromFile(process.argv[2]);
  const records = fs.readFileSync(process.argv[3], "utf8").split("\n").filter(l => l.length > 0).map(l => JSON.parse(l));
  const out = [];
  const batch = 2000;
  for (let i = 0; i < records.length; i += batch) {
    const encs = await tok.encodeBatch(records.slice(i, i + batch), { addSpecialTokens: false });
    for (const e of encs) out.push(e.getIds().join(" "));
  }
  fs.writeFileSync(process.argv[4], out.join("\n") + "\n");
})().catch(e => { console.error(e); process.exit(1); });
