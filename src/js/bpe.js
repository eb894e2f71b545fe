// attnkit: GPT-2's tokenizer (byte-level BPE, 50,257 tokens) over js-tiktoken's
// "gpt2" ranks, loaded only when a GPT-2 model is opened (the ranks are half a
// megabyte: web-checkpoint.js fetches them from a file beside the reader, so
// that no bundle holds them; node-checkpoint.js requires js-tiktoken's). Encoding
// is js-tiktoken's; the vocabulary and decoding come from the same ranks' bytes.
import { rangeError } from "./errors.js";
import { brand } from "./handles.js";
import { intArray, textBytes } from "./language.js";

// GPT-2's printable stand-ins for bytes (bytes_to_unicode in OpenAI's
// encoder.py): the printable Latin-1 bytes are themselves, every other byte
// is 256 + its rank among them, so that "\n" reads "Ċ" and " " reads "Ġ".
const BYTE_PIECES = (() => {
  const printable = (b) => (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174;
  const pieces = [];
  let next = 256;
  for (let b = 0; b < 256; ++b) pieces.push(String.fromCodePoint(printable(b) ? b : next++));
  return pieces;
})();

const strict = new TextDecoder("utf-8", { fatal: true });
const lenient = new TextDecoder("utf-8");

/**
 * A token's piece as the vocabulary shows it: its text (a leading space
 * kept as " ") when its bytes are whole UTF-8 characters, else the bytes'
 * byte-level stand-ins (a piece of a character, e.g. "âĢ").
 */
function pieceOf(bytes) {
  try {
    return strict.decode(bytes);
  } catch {
    return Array.from(bytes, (b) => BYTE_PIECES[b]).join("");
  }
}

/** Every token's bytes, by id, from js-tiktoken's rank file (lines "! offset base64 base64 ..."). */
function tokenBytes(ranks) {
  const bytes = [];
  for (const line of ranks.bpe_ranks.split("\n")) {
    if (!line) continue;
    const [, offset, ...tokens] = line.split(" ");
    tokens.forEach((token, i) => {
      const raw = atob(token);
      const b = new Uint8Array(raw.length);
      for (let k = 0; k < raw.length; ++k) b[k] = raw.charCodeAt(k);
      bytes[Number(offset) + i] = b;
    });
  }
  const encoder = new TextEncoder();
  for (const [text, id] of Object.entries(ranks.special_tokens)) bytes[id] = encoder.encode(text);
  return bytes;
}

/**
 * GPT-2's tokenizer: the members of the character Tokenizer (language.js),
 * so that a model, its sampler and the page use either alike. A plain object
 * (nothing to dispose).
 */
export class Gpt2Tokenizer {
  #encoding;
  #bytes;
  constructor(encoding, bytes) {
    const vocabulary = Object.freeze(bytes.map(pieceOf));
    Object.defineProperties(this, {
      // Token id -> its piece (" world", "\n", or byte-level stand-ins).
      vocabulary: { value: vocabulary, enumerable: true },
      vocabSize: { value: bytes.length, enumerable: true },
      // None: every text has tokens (bytes are tokens of their own).
      unknownToken: { value: -1, enumerable: true },
    });
    this.#encoding = encoding;
    this.#bytes = bytes;
    brand(this, "Tokenizer");
  }
  /** The tokens of `text`; "<|endoftext|>" is token 50256, as Hugging Face's tokenizer reads it. */
  encode(text) {
    textBytes("text", text);
    return Int32Array.from(this.#encoding.encode(text, "all"));
  }
  /** The text of `tokens` (ids 0 .. vocabSize - 1); bytes that end mid-character read as U+FFFD. */
  decode(tokens) {
    const t = intArray("tokens", tokens);
    let length = 0;
    for (let i = 0; i < t.length; ++i) {
      const piece = this.#bytes[t[i]];
      if (piece === undefined) {
        throw rangeError("tokens", `ids 0 .. ${this.vocabSize - 1}`, `${t[i]} at entry ${i}`);
      }
      length += piece.length;
    }
    const out = new Uint8Array(length);
    let at = 0;
    for (const id of t) {
      out.set(this.#bytes[id], at);
      at += this.#bytes[id].length;
    }
    return lenient.decode(out);
  }
}

let loading = null;

/**
 * GPT-2's tokenizer, made once per JS realm over `loadRanks()` (a promise of
 * js-tiktoken's "gpt2" ranks object), called on the first call.
 */
export function gpt2Tokenizer(loadRanks) {
  loading ??= Promise.all([import("js-tiktoken/lite"), loadRanks()]).then(
    ([lite, ranks]) => new Gpt2Tokenizer(new lite.Tiktoken(ranks), tokenBytes(ranks)),
    (e) => {
      loading = null;
      throw e;
    },
  );
  return loading;
}
