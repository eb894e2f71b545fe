// attnkit: the errors the package throws. Every message names the parameter,
// what was expected and what was given.

const BRAND = Symbol.for("attnkit.error");
const TYPE_BRAND = Symbol.for("attnkit.typeError");

/** Bad values: shapes, sizes, non-finite numbers, capacity, use after dispose. */
export class AttnkitError extends RangeError {
  constructor(message, { code = "invalid_argument", parameter = "" } = {}) {
    super(message);
    this.name = "AttnkitError";
    this.code = code;
    this.parameter = parameter;
  }
  // `e instanceof AttnkitError` is true for AttnkitTypeError too.
  static [Symbol.hasInstance](value) {
    return value != null && value[BRAND] === true;
  }
}
Object.defineProperty(AttnkitError.prototype, BRAND, { value: true });

/** Wrong types: a string where a matrix was expected, a missing argument. */
export class AttnkitTypeError extends TypeError {
  constructor(message, { parameter = "" } = {}) {
    super(message);
    this.name = "AttnkitTypeError";
    this.code = "type";
    this.parameter = parameter;
  }
  // Every entry point (attnkit, attnkit/simd, attnkit/worker ...) bundles its
  // own copy of the classes: `e instanceof AttnkitTypeError` holds across them.
  static [Symbol.hasInstance](value) {
    return value != null && value[TYPE_BRAND] === true;
  }
}
Object.defineProperty(AttnkitTypeError.prototype, BRAND, { value: true });
Object.defineProperty(AttnkitTypeError.prototype, TYPE_BRAND, { value: true });

// The kind of every object the package gives out ("Model", "Trainer" ...), in
// every module and every entry point's bundle (a registered symbol, not
// enumerable: copies lack it). handles.js gives it.
export const KIND = Symbol.for("attnkit.kind");

/** The kind of one of the package's objects ("Trainer" ...), else undefined. */
export function kindOf(value) {
  return value != null && typeof value === "object" ? value[KIND] : undefined;
}

/** "a Trainer", "an AsyncModel": `kind` with its article. */
export const withArticle = (kind) => `${/^[AEIOU]/.test(kind) ? "an" : "a"} ${kind}`;

/** A short description of a value for messages: "string \"abc\"", "array of 3", "null", "a Trainer". */
export function describe(value) {
  if (value === null) return "null";
  if (value === undefined) return "undefined";
  if (typeof value === "number") return Number.isNaN(value) ? "NaN" : String(value);
  if (typeof value === "string")
    return `string ${JSON.stringify(value.length > 20 ? value.slice(0, 20) + "…" : value)}`;
  if (typeof value === "boolean" || typeof value === "bigint") return `${typeof value} ${value}`;
  if (Array.isArray(value)) return `an array of ${value.length}`;
  if (value instanceof DataView) return `a DataView of ${value.byteLength} bytes`;
  if (ArrayBuffer.isView(value)) return `a ${value.constructor.name} of ${value.length}`;
  if (typeof value === "function") return "a function";
  if (kindOf(value)) return withArticle(kindOf(value));
  return `an object with keys {${Object.keys(value).slice(0, 6).join(", ")}}`;
}

export function typeError(parameter, expected, value) {
  return new AttnkitTypeError(`${parameter}: expected ${expected}, got ${describe(value)}`, {
    parameter,
  });
}

export function rangeError(parameter, expected, given, code = "invalid_argument") {
  return new AttnkitError(`${parameter}: expected ${expected}, got ${given}`, { code, parameter });
}
