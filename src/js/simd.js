// WebAssembly SIMD128 detection: validate a tiny module whose only function
// uses v128 instructions: (func (result v128) i32.const 0 i8x16.splat i8x16.popcnt).
// One line per section of the module, with its meaning.
// prettier-ignore
const PROBE = new Uint8Array([
  0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,  // magic, version 1
  0x01, 0x05, 0x01, 0x60, 0x00, 0x01, 0x7b,        // type: () -> v128
  0x03, 0x02, 0x01, 0x00,                          // function 0 has type 0
  0x0a, 0x0a, 0x01, 0x08, 0x00,                    // code: 1 body of 8 bytes, no locals
  0x41, 0x00,                                      // i32.const 0
  0xfd, 0x0f,                                      // i8x16.splat
  0xfd, 0x62,                                      // i8x16.popcnt
  0x0b,                                            // end
]);

/** True if this engine supports WebAssembly SIMD128. */
export function simdSupported() {
  try {
    return typeof WebAssembly === "object" && WebAssembly.validate(PROBE);
  } catch {
    return false;
  }
}
