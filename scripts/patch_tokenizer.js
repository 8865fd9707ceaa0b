// node patch_tokenizer.js DIR : writes the V3.2 and V4.1 variants of DIR/tokenizer_v3.json
// (spec: ../shared/spec/tokenizer-reference.md §4) plus "_plain" copies with no added tokens.
// node patch_tokenizer.js DIR --verify HFTOK_DIR : checks the written files against the spec's
// vectors with the reference HF tokenizers (tokenizer-reference.md §4, deepseek-format.md §1/§7).
const fs = require("fs");
const path = require("path");
const dir = process.argv[2];
const verify_only = process.argv[3] === "--verify";
const base = verify_only ? null : JSON.parse(fs.readFileSync(path.join(dir, "tokenizer_v3.json"), "utf8"));

function write(name, t) {
  fs.writeFileSync(path.join(dir, name + ".json"), JSON.stringify(t));
  const plain = Object.assign({}, t, { added_tokens: [] });
  fs.writeFileSync(path.join(dir, name + "_plain.json"), JSON.stringify(plain));
}
function token(id, content, special) {
  return { id, content, single_word: false, lstrip: false, rstrip: false, normalized: !special, special };
}

function patch() {
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
}

function verify() {
  const { Tokenizer } = require(path.join(process.argv[4], "node_modules", "@anush008/tokenizers"));
  const checks = [
    ["tokenizer_v32.json", "<｜begin▁of▁sentence｜><｜User｜>hello<｜Assistant｜></think>Hello! I am DeepSeek.<｜end▁of▁sentence｜><｜User｜>1+1=?<｜Assistant｜><think>",
      [0, 128803, 33310, 128804, 128799, 19923, 3, 342, 1030, 22651, 4374, 1465, 16, 1, 128803, 19, 13, 19, 127252, 128804, 128798]],
    ["tokenizer_v32_plain.json", "say <｜User｜> and </think> please", [53072, 818, 28217, 6756, 28217, 32, 305, 2728, 37947, 32, 8033]],
    ["tokenizer_v41.json", "Hello! 毕老师！1 + 1 = 2 ĠÑĤÐ²ÑĬÑĢ",
      [19923, 3, 223, 5464, 5008, 1175, 19, 940, 223, 19, 438, 223, 20, 6113, 257, 76589, 131, 100, 76032, 1628, 76589, 131, 108, 76589, 131, 98]],
    ["tokenizer_v41.json", "<｜User｜>你好<｜Assistant｜><think>推理</think>答案<｜end▁of▁sentence｜>", [128803, 30594, 128804, 128821, 36101, 128822, 7624, 1]],
    ["tokenizer_v41.json", "<｜System｜>｜DSML｜<｜latest_reminder｜><｜read_url｜>", [128799, 128825, 128828, 128845]],
  ];
  (async () => {
    for (const [file, text, want] of checks) {
      const tok = Tokenizer.fromFile(path.join(dir, file));
      const got = (await tok.encode(text, null, { addSpecialTokens: false })).getIds();
      if (JSON.stringify(got) !== JSON.stringify(want)) {
        console.error(`patch_tokenizer: ${file}: ${JSON.stringify(text)} -> ${JSON.stringify(got)}, expected ${JSON.stringify(want)}`);
        process.exit(1);
      }
    }
    console.log(`patch_tokenizer: ${checks.length} spec vectors verified with HF tokenizers`);
  })();
}

if (verify_only) verify();
else patch();
