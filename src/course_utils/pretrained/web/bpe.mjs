// Attention, step by step: SmolLM2's byte-level BPE tokenizer in JavaScript (MIT licence).
//
// The same steps as the `tokenizers` library with the GGUF file's vocabulary and merges
// (course_utils.pretrained.smollm2._tokenizer): control tokens such as <|im_start|> are cut out
// whole; the rest is split by GPT-2's pattern (words with their leading space, numbers,
// punctuation runs, whitespace); each piece's UTF-8 bytes are spelled with GPT-2's printable
// byte alphabet and merged pair by pair, the pair with the lowest merge rank first.
//
//   const tok = createTokenizer({tokens, merges, control, eos_id});
//   tok.encode("Hello") -> [19556];  tok.decode([19556]) -> "Hello";  tok.labels(ids) -> ["Hello"]

// GPT-2's pattern ('tokenizers' ByteLevel pre-tokenizer, use_regex=true).
const PATTERN = /'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+/gu;

// GPT-2's byte alphabet: printable bytes stand for themselves, the others for 256 + n.
function byteAlphabet() {
  const toChar = new Array(256);
  let n = 0;
  for (let b = 0; b < 256; b++) {
    const printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
    toChar[b] = String.fromCodePoint(printable ? b : 256 + n++);
  }
  const toByte = new Map(toChar.map((c, b) => [c, b]));
  return { toChar, toByte };
}

export function createTokenizer({ tokens, merges, control = [], eos_id: eosId }) {
  const { toChar, toByte } = byteAlphabet();
  const ids = new Map(tokens.map((t, i) => [t, i]));
  const ranks = new Map(merges.map((m, i) => [m, i])); // "a b" -> rank
  const controlTokens = control.map((i) => tokens[i]).sort((a, b) => b.length - a.length);
  const cache = new Map();
  const encoder = new TextEncoder();

  // One pre-tokenized piece -> token ids (BPE over its byte characters).
  function bpe(piece) {
    const hit = cache.get(piece);
    if (hit) return hit;
    let parts = Array.from(encoder.encode(piece), (b) => toChar[b]);
    while (parts.length > 1) {
      let best = -1;
      let bestRank = Infinity;
      for (let i = 0; i < parts.length - 1; i++) {
        const r = ranks.get(parts[i] + " " + parts[i + 1]);
        if (r !== undefined && r < bestRank) {
          bestRank = r;
          best = i;
        }
      }
      if (best < 0) break;
      // merge every occurrence of that pair, left to right (as `tokenizers` does)
      const a = parts[best];
      const b = parts[best + 1];
      const merged = [];
      for (let i = 0; i < parts.length; i++) {
        if (i < parts.length - 1 && parts[i] === a && parts[i + 1] === b) {
          merged.push(a + b);
          i++;
        } else merged.push(parts[i]);
      }
      parts = merged;
    }
    const out = parts.map((p) => {
      const id = ids.get(p);
      if (id === undefined) throw new Error(`no token for ${JSON.stringify(p)}`);
      return id;
    });
    if (cache.size < 50000) cache.set(piece, out);
    return out;
  }

  function encodePlain(text, out) {
    for (const m of text.matchAll(PATTERN)) out.push(...bpe(m[0]));
  }

  function encode(text) {
    const out = [];
    let rest = String(text);
    while (rest.length) {
      // the earliest control token in the rest (the longest at one place)
      let at = -1;
      let found = null;
      for (const c of controlTokens) {
        const i = rest.indexOf(c);
        if (i >= 0 && (at < 0 || i < at)) {
          at = i;
          found = c;
        }
      }
      if (at < 0) {
        encodePlain(rest, out);
        break;
      }
      encodePlain(rest.slice(0, at), out);
      out.push(ids.get(found));
      rest = rest.slice(at + found.length);
    }
    return out;
  }

  function bytesOf(idList) {
    const bytes = [];
    for (const id of idList) {
      for (const ch of tokens[id]) {
        const b = toByte.get(ch);
        if (b === undefined) bytes.push(...encoder.encode(ch)); // control tokens: their text
        else bytes.push(b);
      }
    }
    return new Uint8Array(bytes);
  }

  const decoder = new TextDecoder("utf-8"); // invalid sequences -> U+FFFD, as Python's decode
  function decode(idList) {
    return decoder.decode(bytesOf(idList));
  }

  // One readable label per token: the characters it completes ("·" for a token that only starts
  // a character: byte-level BPE may split one Chinese character over several tokens).
  function labels(idList) {
    const out = [];
    let done = "";
    for (let k = 0; k < idList.length; k++) {
      const now = decode(idList.slice(0, k + 1)).replace(/\uFFFD+$/u, "");
      out.push(now.slice(done.length) || "·");
      done = now;
    }
    return out;
  }

  return { encode, decode, labels, eosId, vocabSize: tokens.length };
}
