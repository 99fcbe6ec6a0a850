// Attention, step by step: a dependency-free WordPiece tokenizer for all-MiniLM-L6-v2 (MIT licence).
//
// It reproduces the model's tokenizer.json (the `tokenizers` library) step by step:
// 1. special tokens typed in the text ([CLS], [MASK], ...) are kept whole, matched before anything else;
// 2. BertNormalizer: drop NUL, U+FFFD and control characters, turn whitespace into spaces, put spaces
//    around CJK ideographs, strip accents (NFD, then drop non-spacing marks), lower-case;
// 3. BertPreTokenizer: split on whitespace, and every punctuation character is a word of its own;
// 4. WordPiece: greedy longest match first, "##" marks a continuation; a word longer than 100
//    characters, or one with a piece outside the vocabulary, becomes [UNK];
// 5. [CLS] first, [SEP] last.
// Tested against `tokenizers` on tricky strings: tests/js/minilm.test.mjs (run by tests/test_minilm_web.py).

const SPECIAL_DEFAULT = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"];
const ASCII_PUNCT = new Set("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~");
const CONTROL = /^\p{C}$/u;
const WHITE = /^\p{White_Space}$/u;
const PUNCT = /^\p{P}$/u;
const NONSPACING = /\p{Mn}/gu;

function isWhitespace(ch) {
  return ch === "\t" || ch === "\n" || ch === "\r" || WHITE.test(ch);
}

function isControl(ch) {
  if (ch === "\t" || ch === "\n" || ch === "\r") return false;
  return CONTROL.test(ch);
}

function isPunctuation(ch) {
  return ASCII_PUNCT.has(ch) || PUNCT.test(ch);
}

function isChinese(cp) {
  return (
    (cp >= 0x4e00 && cp <= 0x9fff) || (cp >= 0x3400 && cp <= 0x4dbf) ||
    (cp >= 0x20000 && cp <= 0x2a6df) || (cp >= 0x2a700 && cp <= 0x2b73f) ||
    (cp >= 0x2b740 && cp <= 0x2b81f) || (cp >= 0x2b920 && cp <= 0x2ceaf) ||
    (cp >= 0xf900 && cp <= 0xfaff) || (cp >= 0x2f800 && cp <= 0x2fa1f)
  );
}

/** BertNormalizer (clean text, CJK spacing, strip accents, lower-case). */
export function normalize(text) {
  let out = "";
  for (const ch of text) {
    const cp = ch.codePointAt(0);
    if (cp === 0 || cp === 0xfffd || isControl(ch)) continue;
    if (isWhitespace(ch)) out += " ";
    else if (isChinese(cp)) out += ` ${ch} `;
    else out += ch;
  }
  out = out.normalize("NFD").replace(NONSPACING, "");
  let lower = "";
  for (const ch of out) lower += ch.toLowerCase(); // one character at a time, as Rust's char::to_lowercase
  return lower;
}

/** BertPreTokenizer: words split on whitespace; each punctuation character is a word. */
export function preTokenize(text) {
  const words = [];
  let word = "";
  for (const ch of text) {
    if (isWhitespace(ch)) {
      if (word) words.push(word);
      word = "";
    } else if (isPunctuation(ch)) {
      if (word) words.push(word);
      words.push(ch);
      word = "";
    } else {
      word += ch;
    }
  }
  if (word) words.push(word);
  return words;
}

/**
 * A tokenizer over `vocab` (a list of tokens indexed by id).
 * Returns {tokenize(text) -> {tokens, ids}}; tokens start with [CLS] and end with [SEP].
 */
export function createTokenizer(vocab, { special = SPECIAL_DEFAULT, unk = "[UNK]", maxChars = 100 } = {}) {
  const ids = new Map();
  vocab.forEach((token, i) => ids.set(token, i));
  const escaped = [...special].sort((a, b) => b.length - a.length).map((s) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
  const splitter = new RegExp(`(${escaped.join("|")})`, "u");

  function wordPiece(word) {
    const chars = Array.from(word);
    if (chars.length > maxChars) return [unk];
    const pieces = [];
    let start = 0;
    while (start < chars.length) {
      let end = chars.length;
      let found = null;
      while (start < end) {
        let sub = chars.slice(start, end).join("");
        if (start > 0) sub = `##${sub}`;
        if (ids.has(sub)) {
          found = sub;
          break;
        }
        end -= 1;
      }
      if (found === null) return [unk];
      pieces.push(found);
      start = end;
    }
    return pieces;
  }

  function tokenize(text) {
    if (typeof text !== "string") throw new TypeError(`text must be a string; got ${typeof text}`);
    const tokens = ["[CLS]"];
    text.split(splitter).forEach((part, k) => {
      if (k % 2 === 1) tokens.push(part); // a special token typed in the text
      else if (part) for (const word of preTokenize(normalize(part))) tokens.push(...wordPiece(word));
    });
    tokens.push("[SEP]");
    return { tokens, ids: tokens.map((t) => ids.get(t)) };
  }

  return { tokenize };
}
