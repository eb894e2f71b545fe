// attnkit: GPT-2's tokenizer (byte-level BPE, 50,257 tokens) over js-tiktoken's
// "gpt2" ranks, loaded only when a GPT-2 model is opened (the ranks are half a
// megabyte: web-checkpoint.js fetches them from a file beside the reader, so
// that no bundle holds them; node-checkpoint.js requires js-tiktoken's). The
// encoding is tiktoken's byte-pair merge by rank (the tests hold it equal to
// js-tiktoken's Tiktoken), over the ranks kept in three typed arrays rather than
// a map entry and an array per token: the tokenizer is made as a checkpoint
// loads, and what it holds adds to the load's memory. The vocabulary and
// decoding come from the same bytes.
import { AttnkitError, rangeError } from "./errors.js";
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

const encoder = new TextEncoder();
const lenient = new TextDecoder("utf-8");

// UTF-16 code units of the piece being read (utf8Text), grown as needed.
let units = new Uint16Array(64);

/**
 * The text of `bytes` where they are whole UTF-8 characters, else null: a
 * TextDecoder's fatal decoding (a leading byte order mark dropped), without
 * a call into the engine or a thrown error per token.
 */
function utf8Text(bytes) {
  if (units.length < bytes.length) units = new Uint16Array(2 * bytes.length);
  let n = 0;
  for (let i = 0; i < bytes.length;) {
    const b = bytes[i];
    if (b < 0x80) {
      units[n++] = b;
      ++i;
      continue;
    }
    // A lead byte's count of continuation bytes, its bits, and the range of the first one.
    let more = 3,
      point = b & 0x07,
      low = 0x80,
      high = 0xbf;
    if (b >= 0xc2 && b <= 0xdf) {
      more = 1;
      point = b & 0x1f;
    } else if (b >= 0xe0 && b <= 0xef) {
      more = 2;
      point = b & 0x0f;
      if (b === 0xe0) low = 0xa0;
      if (b === 0xed) high = 0x9f; // no surrogates
    } else if (b < 0xf0 || b > 0xf4) {
      return null;
    } else if (b === 0xf0) {
      low = 0x90;
    } else if (b === 0xf4) {
      high = 0x8f; // up to U+10FFFF
    }
    if (i + more >= bytes.length) return null;
    for (let k = 1; k <= more; ++k) {
      const c = bytes[i + k];
      if (c < low || c > high) return null;
      low = 0x80;
      high = 0xbf;
      point = (point << 6) | (c & 0x3f);
    }
    if (point > 0xffff) {
      units[n++] = 0xd800 + ((point - 0x10000) >> 10);
      units[n++] = 0xdc00 + ((point - 0x10000) & 0x3ff);
    } else units[n++] = point;
    i += more + 1;
  }
  const first = n > 0 && units[0] === 0xfeff ? 1 : 0;
  return String.fromCharCode.apply(null, units.subarray(first, n));
}

/**
 * A token's piece as the vocabulary shows it: its text (a leading space
 * kept as " ") when its bytes are whole UTF-8 characters, else the bytes'
 * byte-level stand-ins (a piece of a character, e.g. "âĢ").
 */
function pieceOf(bytes) {
  return utf8Text(bytes) ?? Array.from(bytes, (b) => BYTE_PIECES[b]).join("");
}

const badRanks = (what) =>
  new AttnkitError(`source: expected GPT-2's tokenizer ranks (js-tiktoken's "gpt2"), got ${what}`, {
    code: "load_failed",
    parameter: "source",
  });

// Base64's alphabet, each character's six bits ("=" pads: 0).
const BASE64 = (() => {
  const sixBits = new Int8Array(128).fill(-1);
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  for (let i = 0; i < 64; ++i) sixBits[alphabet.charCodeAt(i)] = i;
  sixBits[61] = 0;
  return sixBits;
})();
const PAD = 61; // "="

/** Decodes text[begin, end) (base64, a multiple of 4 characters) into bytes from `at` on. */
function decodeBase64(text, begin, end, bytes, at) {
  const six = (i) => {
    const c = text.charCodeAt(i);
    const v = c < 128 ? BASE64[c] : -1;
    if (v < 0) throw badRanks(`a character that is not base64 at ${i}`);
    return v;
  };
  for (let i = begin; i < end; i += 4) {
    const n = (six(i) << 18) | (six(i + 1) << 12) | (six(i + 2) << 6) | six(i + 3);
    bytes[at++] = n >> 16;
    if (text.charCodeAt(i + 2) !== PAD) bytes[at++] = (n >> 8) & 255;
    if (text.charCodeAt(i + 3) !== PAD) bytes[at++] = n & 255;
  }
}

/**
 * Calls `token(id, begin, end)` for each token of js-tiktoken's rank text
 * (lines "! offset base64 base64 ...": the tokens' ids count on from the
 * offset), `text.slice(begin, end)` being the token's base64.
 */
function forEachRank(text, token) {
  let at = 0;
  while (at < text.length) {
    let lineEnd = text.indexOf("\n", at);
    if (lineEnd < 0) lineEnd = text.length;
    let field = 0,
      id = 0;
    while (at < lineEnd) {
      let end = text.indexOf(" ", at);
      if (end < 0 || end > lineEnd) end = lineEnd;
      if (field === 1) id = Number(text.slice(at, end));
      else if (field > 1 && end > at) token(id++, at, end);
      field += end > at ? 1 : 0;
      at = end + 1;
    }
    at = lineEnd + 1;
  }
}

/** FNV-1a of bytes[begin, end). */
function hashOf(bytes, begin, end) {
  let h = 0x811c9dc5;
  for (let i = begin; i < end; ++i) h = Math.imul(h ^ bytes[i], 0x01000193);
  return h >>> 0;
}

/**
 * GPT-2's byte-pair ranks in typed arrays: token `id`'s bytes are
 * bytes[start[id], start[id + 1]), and `rankOf` finds the token of a run of
 * bytes through an open-addressing table of ids (-1 empty). The special
 * tokens ("<|endoftext|>") have bytes (for decoding) but no rank: no byte
 * pair merges into them.
 */
class ByteRanks {
  constructor(ranks) {
    const text = ranks?.bpe_ranks,
      specials = ranks?.special_tokens;
    if (
      typeof text !== "string" ||
      typeof ranks?.pat_str !== "string" ||
      specials === null ||
      typeof specials !== "object"
    ) {
      throw badRanks("an object without pat_str, bpe_ranks and special_tokens");
    }
    const special = Object.entries(specials).map(([s, id]) => [encoder.encode(s), id]);
    // The ids first (the count and the ranked tokens), then each token's
    // byte count, the offsets, and the bytes.
    let count = 0,
      ranked = 0;
    forEachRank(text, (id, begin, end) => {
      if ((end - begin) % 4 !== 0 || !Number.isSafeInteger(id) || id < 0)
        throw badRanks(`a malformed rank line near character ${begin}`);
      count = Math.max(count, id + 1);
      ++ranked;
    });
    for (const [, id] of special) {
      if (!Number.isSafeInteger(id) || id < 0) throw badRanks(`special token id ${id}`);
      count = Math.max(count, id + 1);
    }
    const start = new Uint32Array(count + 1);
    forEachRank(text, (id, begin, end) => {
      const pad =
        (text.charCodeAt(end - 1) === PAD ? 1 : 0) + (text.charCodeAt(end - 2) === PAD ? 1 : 0);
      start[id + 1] = ((end - begin) / 4) * 3 - pad;
    });
    for (const [b, id] of special) start[id + 1] = b.length;
    for (let id = 0; id < count; ++id) start[id + 1] += start[id];
    const bytes = new Uint8Array(start[count]);
    forEachRank(text, (id, begin, end) => decodeBase64(text, begin, end, bytes, start[id]));
    for (const [b, id] of special) bytes.set(b, start[id]);
    this.bytes = bytes;
    this.start = start;
    this.size = count;
    // The table: a power of two at least twice the ranked tokens. A later
    // token of the same bytes takes the place of the earlier (as a Map's set).
    let slots = 1;
    while (slots < 2 * ranked) slots *= 2;
    this.mask = slots - 1;
    this.table = new Int32Array(slots).fill(-1);
    forEachRank(text, (id) => {
      const slot = this.#find(bytes, start[id], start[id + 1]);
      this.table[slot] = id;
    });
    this.specials = new Map(Object.entries(specials));
  }
  /** The table's slot of bytes[begin, end): the one holding their token, or the empty one where it would go. */
  #find(bytes, begin, end) {
    const { table, mask, start } = this;
    const own = this.bytes,
      length = end - begin;
    for (let slot = hashOf(bytes, begin, end) & mask; ; slot = (slot + 1) & mask) {
      const id = table[slot];
      if (id < 0) return slot;
      if (start[id + 1] - start[id] !== length) continue;
      let k = 0;
      while (k < length && own[start[id] + k] === bytes[begin + k]) ++k;
      if (k === length) return slot;
    }
  }
  /** The token of bytes[begin, end), or -1 where no token has them. */
  rankOf(bytes, begin, end) {
    return this.table[this.#find(bytes, begin, end)];
  }
  /** Token `id`'s bytes (a view). */
  tokenBytes(id) {
    return this.bytes.subarray(this.start[id], this.start[id + 1]);
  }
}

/**
 * The tokens of one pre-token's bytes (tiktoken's bytePairMerge): while two
 * neighbouring parts join into a token, the pair of the lowest rank (the
 * first of equals) joins; each part is then a token.
 */
function bytePairEncode(ranks, bytes, out) {
  const bounds = Array.from({ length: bytes.length + 1 }, (_, i) => i);
  while (bounds.length > 2) {
    let best = -1,
      bestRank = Infinity;
    for (let i = 0; i + 2 < bounds.length; ++i) {
      const rank = ranks.rankOf(bytes, bounds[i], bounds[i + 2]);
      if (rank >= 0 && rank < bestRank) {
        bestRank = rank;
        best = i;
      }
    }
    if (best < 0) break;
    bounds.splice(best + 1, 1);
  }
  for (let i = 0; i + 1 < bounds.length; ++i) {
    const rank = ranks.rankOf(bytes, bounds[i], bounds[i + 1]);
    if (rank >= 0) out.push(rank);
  }
}

const escapeRegex = (s) => s.replace(/[\\^$*+?.()|[\]{}]/g, "\\$&");

/**
 * GPT-2's tokenizer: the members of the character Tokenizer (language.js),
 * so that a model, its sampler and the page use either alike. A plain object
 * (nothing to dispose).
 */
export class Gpt2Tokenizer {
  #ranks;
  #source;
  #pattern = null;
  #special = null;
  /** Over js-tiktoken's "gpt2" ranks object ({pat_str, special_tokens, bpe_ranks}). */
  constructor(ranks) {
    const r = new ByteRanks(ranks);
    const vocabulary = Array.from({ length: r.size }, (_, id) => pieceOf(r.tokenBytes(id)));
    Object.defineProperties(this, {
      // Token id -> its piece (" world", "\n", or byte-level stand-ins).
      vocabulary: { value: Object.freeze(vocabulary), enumerable: true },
      vocabSize: { value: r.size, enumerable: true },
      // None: every text has tokens (bytes are tokens of their own).
      unknownToken: { value: -1, enumerable: true },
    });
    this.#ranks = r;
    this.#source = ranks.pat_str;
    brand(this, "Tokenizer");
  }
  /**
   * GPT-2's pre-tokens (words, numbers, punctuation, spaces) and the special
   * tokens as regular expressions, made on the first encode (their Unicode
   * classes load the engine's tables: not while a checkpoint loads).
   */
  #patterns() {
    if (!this.#pattern) {
      this.#pattern = new RegExp(this.#source, "gu");
      const names = [...this.#ranks.specials.keys()];
      this.#special = names.length ? new RegExp(names.map(escapeRegex).join("|"), "g") : null;
    }
  }
  /** The tokens of `text`; "<|endoftext|>" is token 50256, as Hugging Face's tokenizer reads it. */
  encode(text) {
    textBytes("text", text);
    this.#patterns();
    const out = [];
    let at = 0;
    if (this.#special) {
      for (const m of text.matchAll(this.#special)) {
        this.#encodeOrdinary(text.slice(at, m.index), out);
        out.push(this.#ranks.specials.get(m[0]));
        at = m.index + m[0].length;
      }
    }
    this.#encodeOrdinary(at ? text.slice(at) : text, out);
    return Int32Array.from(out);
  }
  /** The tokens of text without special tokens onto `out`, pre-token by pre-token. */
  #encodeOrdinary(text, out) {
    const ranks = this.#ranks;
    for (const [piece] of text.matchAll(this.#pattern)) {
      const bytes = encoder.encode(piece);
      const whole = ranks.rankOf(bytes, 0, bytes.length);
      if (whole >= 0) out.push(whole);
      else bytePairEncode(ranks, bytes, out);
    }
  }
  /** The text of `tokens` (ids 0 .. vocabSize - 1); bytes that end mid-character read as U+FFFD. */
  decode(tokens) {
    const t = intArray("tokens", tokens);
    const { start, bytes } = this.#ranks;
    let length = 0;
    for (let i = 0; i < t.length; ++i) {
      if (t[i] < 0 || t[i] >= this.vocabSize) {
        throw rangeError("tokens", `ids 0 .. ${this.vocabSize - 1}`, `${t[i]} at entry ${i}`);
      }
      length += start[t[i] + 1] - start[t[i]];
    }
    const out = new Uint8Array(length);
    let at = 0;
    for (const id of t) {
      out.set(bytes.subarray(start[id], start[id + 1]), at);
      at += start[id + 1] - start[id];
    }
    return lenient.decode(out);
  }
}

let loading = null,
  made = null;

/**
 * GPT-2's tokenizer, made once per JS realm over `loadRanks()` (a promise of
 * js-tiktoken's "gpt2" ranks object, called the first time): resolves, once
 * the ranks have loaded, to a function that returns the tokenizer, making it
 * on its first call. A checkpoint's load asks for the ranks before its data
 * (a missing file fails first) and makes the tokenizer after them, so that
 * making it adds nothing to the load's peak memory.
 */
export async function gpt2Tokenizer(loadRanks) {
  if (!made) {
    loading ??= loadRanks().catch((e) => {
      loading = null;
      throw e;
    });
    const ranks = await loading;
    return () => {
      made ??= new Gpt2Tokenizer(ranks);
      loading = null;
      return made;
    };
  }
  return () => made;
}
