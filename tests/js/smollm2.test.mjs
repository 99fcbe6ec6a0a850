// Node tests of SmolLM2's browser path (no browser): tokenizer, greedy tokens, logits and attention
// weights against the Python model. Run by tests/test_smollm2_web.py, which writes the expected
// values (computed in Python with course_utils.pretrained.smollm2) and the export, and passes their
// paths in SMOLLM2_CASES and SMOLLM2_EXPORT; SMOLLM2_REPORT receives the measured differences.
// Run alone, without those variables, the tests are skipped.
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { inflateSync } from "node:zlib";

import { createTokenizer } from "../../src/course_utils/pretrained/web/bpe.mjs";
import { argmax, createModel, readStreams } from "../../src/course_utils/pretrained/web/llama.mjs";

const env = process.env;
const skip = !env.SMOLLM2_CASES && "run by tests/test_smollm2_web.py (needs SMOLLM2_CASES, SMOLLM2_EXPORT)";
const cases = skip ? null : JSON.parse(readFileSync(env.SMOLLM2_CASES, "utf8"));
const report = {};

function load(useWasm) {
  const dir = env.SMOLLM2_EXPORT;
  const manifest = JSON.parse(readFileSync(join(dir, "manifest.json"), "utf8"));
  const raw = {};
  for (const [name, f] of Object.entries(manifest.files)) raw[name] = new Uint8Array(inflateSync(readFileSync(join(dir, f.file))));
  const wasm = useWasm ? readFileSync(join(dir, "kernels.wasm")) : null;
  return {
    tokenizer: createTokenizer(JSON.parse(new TextDecoder().decode(raw.tokenizer))),
    model: createModel(manifest, readStreams(manifest, raw, wasm)),
  };
}

function maxDiff(a, b) {
  assert.equal(a.length, b.length, "same number of values");
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}

test("the tokenizer splits every text as the tokenizers library does", { skip }, () => {
  const { tokenizer } = load(false);
  for (const c of cases.tokenizer) {
    assert.deepEqual(tokenizer.encode(c.text), c.ids, `ids of ${JSON.stringify(c.text)}`);
    assert.equal(tokenizer.decode(c.ids), c.decoded, `decoding of ${JSON.stringify(c.text)}`);
    assert.deepEqual(tokenizer.labels(c.ids), c.labels, `labels of ${JSON.stringify(c.text)}`);
  }
});

for (const [key, useWasm] of [["wasm", true], ["javascript", false]]) {
  test(`greedy tokens, logits and attention weights equal Python's (${key})`, { skip, timeout: 1_200_000 }, () => {
    const { tokenizer, model } = load(useWasm);
    assert.equal(model.simd, useWasm);
    let worstLogits = 0;
    let worstWeights = 0;
    let tokens = 0;
    const ms = [];
    const runs = useWasm ? cases.runs : cases.runs.slice(0, 1); // plain JavaScript: slow, one run
    for (const c of runs) {
      const ids = tokenizer.encode(c.prompt);
      assert.deepEqual(ids, c.prompt_ids, `prompt ids of ${JSON.stringify(c.prompt)}`);
      const cache = model.newCache(ids.length + c.tokens.length);
      const knockout = new Set(c.knockout);
      let input = ids;
      const got = [];
      for (let i = 0; i < c.tokens.length; i++) {
        const t0 = performance.now();
        const { logits, maps } = model.forward(input, cache, { weightsOfLast: true, knockout });
        if (i > 0) ms.push(performance.now() - t0);
        const next = argmax(logits);
        got.push(next);
        if (i < c.steps.length) {
          worstLogits = Math.max(worstLogits, maxDiff(logits, c.steps[i].logits));
          worstWeights = Math.max(worstWeights, maxDiff(maps, c.steps[i].weights));
        }
        input = [next];
        tokens += 1;
      }
      assert.deepEqual(got, c.tokens, `greedy tokens of ${JSON.stringify(c.prompt)} (knockout ${c.knockout})`);
    }
    ms.sort((a, b) => a - b);
    report[key] = { runs: runs.length, tokens, max_abs_diff_logits: worstLogits, max_abs_diff_weights: worstWeights,
      median_ms_per_token: ms[Math.floor(ms.length / 2)] };
    writeFileSync(env.SMOLLM2_REPORT, JSON.stringify(report, null, 1));
  });
}
