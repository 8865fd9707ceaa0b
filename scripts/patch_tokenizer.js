// node patch_tokenizer.js DIR : writes the V3.2 and V4.1 variants of DIR/tokenizer_v3.json
// (spec: ../shared/spec/tokenizer-reference.md §4) plus "_plain" copies with no added tokens.
const fs = require("fs");
const path = require("path");
const dir = process.argv[2];
const base = JSON.parse(fs.readFileSync(path.join(dir, "tokenizer_v3.json"), "utf8"));

function write(name, t) {
  fs.writeFileSync(path.join(dir, name + ".json"), JSON.stringify(t));
  const plain = Object.assign({}, t, { added_tokens: [] });
  fs.writeFileSync(path.join(dir, name + "_plain.json"), JSON.stringify(plain));
}
function token(id, content, special) {
  return { id, content, single_word: false, lstrip: false, rstrip: false, normalized: !special, special };
}

// V3.1 / V3.2: four entries change content; special false, normalized true.
const v32 = JSON.parse(JSON.stringify(base));
const v32_new = { 128796: "<｜search▁begin｜>", 128797: "<｜search▁end｜>", 128798: "<think>", 128799: "</think>" };
for (const a of v32.added_tokens)
  if (a.id in v32_new) Object.assign(a, { content: v32_new[a.id], special: false, normalized: true });
write("tokenizer_v32", v32);

// V4 / V4.1: placeholders 0..798 keep 128000-128798; <｜System｜> at 128799; 128800-128814 as V3;
// then the V4.1 list (multimodal placeholders from 128847 up are not listed: sources disagree).
const v41 = JSON.parse(JSON.stringify(base));
v41.added_tokens = v41.added_tokens.filter(a => a.id !== 128799);
v41.added_tokens.push(token(128799, "<｜System｜>", true));
const v41_tail = ["<｜begin▁of▁repo▁name｜>", "<｜end▁of▁repo▁name｜>", "<｜begin▁of▁file▁name｜>",
  "<｜end▁of▁file▁name｜>", "<｜begin▁of▁file｜>", "<｜end▁of▁file｜>", "<think>", "</think>",
  "<｜place▁holder▁for▁copy｜>", "<｜place▁holder▁for▁pointer▁replace｜>", "｜DSML｜", "<｜begin▁sys｜>",
  "<｜end▁sys｜>", "<｜latest_reminder｜>", "<｜action｜>", "<｜query｜>", "<｜authority｜>", "<｜domain｜>",
  "<｜task｜>", "<｜political｜>", "<｜entity｜>", "<｜title｜>", "<｜safety｜>", "<｜answer｜>", "<｜search｜>",
  "<dsml:", "</dsml:", "<｜search▁begin｜>", "<｜search▁end｜>", "<｜extracted_url｜>", "<｜read_url｜>",
  "<｜end_of_query｜>"];
v41_tail.forEach((c, i) => v41.added_tokens.push(token(128815 + i, c, false)));
v41.added_tokens.sort((a, b) => a.id - b.id);
write("tokenizer_v41", v41);
console.log(`patch_tokenizer: wrote V3.2 and V4.1 variants in ${dir}`);
