// Node tests of the browser path (no browser): tokenizer vs `tokenizers`, maps vs the Python reference.
// Run by tests/test_minilm_web.py, which writes the expected values (computed in Python) and the weight
// exports, and passes their paths in MINILM_CASES, MINILM_F16 and MINILM_F32; MINILM_REPORT receives the
// measured differences. Run alone, without those variables, the tests are skipped.
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { inflateSync } from "node:zlib";

import { createModel, decodeArray, erf, itemsize, joinPlanes, readWeights } from "../../src/course_utils/pretrained/web/bert.mjs";
import { createTokenizer } from "../../src/course_utils/pretrained/web/wordpiece.mjs";

const env = process.env;
const skip = !env.MINILM_CASES && "run by tests/test_minilm_web.py (needs MINILM_CASES, MINILM_F16, MINILM_F32)";
const cases = skip ? null : JSON.parse(readFileSync(env.MINILM_CASES, "utf8"));
const report = {};

function loadModel(dir) {
  const manifest = JSON.parse(readFileSync(join(dir, "manifest.json"), "utf8"));
  // A packed file (byte planes under deflate), unpacked as the worker does: Node's zlib stands in for the
  // browser's DecompressionStream; the planes are joined by the worker's own joinPlanes.
  const unpacked = (name) => joinPlanes(new Uint8Array(inflateSync(readFileSync(join(dir, name)))), itemsize(manifest.dtype));
  const vocab = JSON.parse(readFileSync(join(dir, "vocab.json"), "utf8"));
  const weights = readWeights(manifest, unpacked("weights.bin"));
  const w = manifest.words;
  const getChunk = async (i) => {
    const name = w.pattern.replace("{index}", String(i).padStart(w.digits, "0"));
    return decodeArray(unpacked(name), manifest.dtype);
  };
  const tokenizer = createTokenizer(vocab, { special: manifest.special_tokens });
  return { manifest, model: createModel(manifest, weights, tokenizer, getChunk), tokenizer };
}

function maxDiff(a, b) {
  assert.equal(a.length, b.length, "same number of values");
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}

async function compareMaps(dir, tolerance, key) {
  const { model, manifest } = loadModel(dir);
  let worst = 0;
  let worstRollout = 0;
  for (const c of cases.maps) {
    const out = await model.run(c.text, 512);
    assert.deepEqual(out.tokens, c.tokens, `tokens of ${JSON.stringify(c.text)}`);
    const T = out.tokens.length;
    assert.equal(out.maps.length, manifest.n_layers * manifest.n_heads * T * T);
    for (let r = 0; r < out.maps.length / T; r++) {
      let s = 0;
      for (let j = 0; j < T; j++) s += out.maps[r * T + j];
      assert.ok(Math.abs(s - 1) < 1e-6, `row ${r} sums to ${s}`);
    }
    worst = Math.max(worst, maxDiff(out.maps, c.maps));
    worstRollout = Math.max(worstRollout, maxDiff(out.rollout, c.rollout));
  }
  report[key] = { max_abs_diff_maps: worst, max_abs_diff_rollout: worstRollout, sentences: cases.maps.length };
  writeFileSync(env.MINILM_REPORT, JSON.stringify(report, null, 1));
  assert.ok(worst <= tolerance, `${key}: max |JS - Python| over all maps = ${worst}; tolerance ${tolerance}`);
  assert.ok(worstRollout <= tolerance, `${key}: rollout differs by ${worstRollout}; tolerance ${tolerance}`);
}

test("joinPlanes undoes the export's byte planes (web_export.split_planes' worked example)", () => {
  // float16 [1.0, -2.5, 65504.0]: low bytes 00 00 ff, then high bytes 3c c1 7b
  const planes = new Uint8Array([0x00, 0x00, 0xff, 0x3c, 0xc1, 0x7b]);
  assert.deepEqual(Array.from(decodeArray(joinPlanes(planes, 2), "float16")), [1, -2.5, 65504]);
  const four = new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8]); // two 4-byte numbers: bytes 1 3 5 7 and 2 4 6 8
  assert.deepEqual(Array.from(new Uint8Array(joinPlanes(four, 4))), [1, 3, 5, 7, 2, 4, 6, 8]);
  assert.throws(() => joinPlanes(new Uint8Array(3), 2), /not whole 2-byte numbers/);
  assert.throws(() => itemsize("int8"), /dtype must be float16 or float32; got int8/);
});

test("erf matches reference values", { skip }, () => {
  for (const [x, want] of cases.erf) assert.ok(Math.abs(erf(x) - want) < 1e-14, `erf(${x}) = ${erf(x)}, want ${want}`);
});

test("the tokenizer equals `tokenizers` on the tricky strings", { skip }, () => {
  const { tokenizer } = loadModel(env.MINILM_F16);
  for (const c of cases.tokenizer) {
    const got = tokenizer.tokenize(c.text);
    assert.deepEqual(got.ids, c.ids, `ids of ${JSON.stringify(c.text)}: ${got.tokens.join(" ")}`);
    assert.deepEqual(got.tokens, c.tokens);
  }
});

test("float32 weights: every map within 1e-5 of the Python reference", { skip }, async () => {
  await compareMaps(env.MINILM_F32, cases.tolerance_float32, "float32");
});

test("float16 weights: every map within 2e-3 of the Python reference", { skip }, async () => {
  await compareMaps(env.MINILM_F16, cases.tolerance_float16, "float16");
});

test("a sentence over the cap is refused, not run", { skip }, async () => {
  const { model } = loadModel(env.MINILM_F16);
  const out = await model.run("word ".repeat(80));
  assert.equal(out.tooLong, true);
  assert.equal(out.maps, undefined);
});
