// The browser tests' assertions on what the page shows: numbers against the
// package's within a tolerance, seed 001's printed tables walked step by step,
// the causal zeros, a phone's fit, and the pixels of a screenshot (a PNG decoder).
import assert from "node:assert/strict";
import { inflateSync } from "node:zlib";

// Seed 001's printed tables.
export const SEED001 = {
  X: [
    [0.1, -0.2, 0.1, 0.2],
    [0.8, 0.8, -0.9, 0.5],
    [-0.6, 0.4, 0.5, -0.9],
    [0.9, -0.7, 0.8, 0.7],
    [0.4, 0.3, 0.4, 0.4],
    [0.8, 0.2, 0.9, -0.2],
  ],
  WQ: [
    [3.4, -2.1, 0.8, 1.9],
    [-1.2, 0.5, 3.7, -0.8],
    [2.9, 1.1, -3.4, 0.6],
    [0.7, 2.8, 1.3, -2.5],
  ],
  KT: [
    [0.15, 1.94, -0.98, 2.53, 1.24, 2.18],
    [0.16, 1.44, 0.64, -2.33, 0.81, 0.44],
    [0.25, 0.35, 1.25, 2.24, 1.14, 3.25],
    [0.28, 1.15, -0.81, 1.93, -0.81, -0.28],
  ],
  V: [
    [0.43, 0.29, 0.64, 0.83],
    [1.15, 1.19, -0.28, 0.67],
    [-0.21, 0.64, 0.59, -0.82],
    [1.19, -0.45, 0.86, 0.99],
    [0.51, 0.41, 0.51, 0.51],
    [1.19, 0.28, 0.95, -0.15],
  ],
  Q0_PRINTED: [1.01, 0.36, -0.74, -0.09],
};

export function assertClose(actual, expected, tol, what) {
  assert.equal(actual.length, expected.length, `${what}: length`);
  for (let i = 0; i < expected.length; i++) {
    const a = actual[i],
      e = expected[i];
    if (e === -Infinity) assert.equal(a, -Infinity, `${what}[${i}]`);
    else assert.ok(Math.abs(a - e) <= tol, `${what}[${i}]: page ${a}, core ${e}`);
  }
}

/**
 * Asserts every upper-triangle weight of a square matrix read from the page is 0 and
 * shown as "0.00"; returns how many there are.
 */
export function assertUpperTriangleZero(w) {
  let upper = 0;
  for (let i = 0; i < w.rows; i++) {
    for (let j = i + 1; j < w.cols; j++) {
      assert.equal(w.values[i * w.cols + j], 0, `weight (${i}, ${j})`);
      assert.equal(w.texts[i * w.cols + j], "0.00", `weight (${i}, ${j}) as shown`);
      upper++;
    }
  }
  assert.equal(upper, (w.rows * (w.rows - 1)) / 2);
  return upper;
}

/**
 * On the seed 001 preset: walks steps 1-7 and checks every matrix on screen against
 * the core's trace (and q_0 against the seed's printed row, within its rounding).
 * `matrix(id)` reads a matrix's values and texts, `text(selector)` an element's text;
 * `atStep6` runs at step 6 (a screenshot). Returns the trace.
 */
export async function checkSeed001({ attn, gotoStep, matrix, text, atStep6 = async () => {} }) {
  const { X, WQ, KT, V, Q0_PRINTED } = SEED001;
  const Q = attn.matmul(X, WQ);
  const K = KT[0].map((_, j) => KT.map((r) => r[j]));
  const tr = attn.traceQKV(Q, K, V, { causal: true });
  await gotoStep(1);
  assertClose((await matrix("X")).values, X.flat(), 1e-6, "X");
  await gotoStep(2);
  const q = await matrix("Q");
  assertClose(q.values, Array.from(Q.data), 1e-6, "Q");
  assertClose(q.values.slice(0, 4), Q0_PRINTED, 0.01, "q_0 vs the seed's printed row");
  assert.deepEqual(q.texts.slice(0, 4), ["1.01", "0.36", "−0.74", "−0.09"]);
  await gotoStep(3);
  assertClose((await matrix("scores")).values, Array.from(tr.rawScores.data), 1e-5, "Q K^T");
  await gotoStep(4);
  assertClose((await matrix("scaled")).values, Array.from(tr.scaledScores.data), 1e-5, "scaled");
  await gotoStep(5);
  assertClose((await matrix("masked")).values, Array.from(tr.maskedScores.data), 1e-5, "masked");
  await gotoStep(6);
  assertClose((await matrix("weights")).values, Array.from(tr.weights.data), 1e-6, "weights");
  assertClose((await matrix("rowsums")).values, [1, 1, 1, 1, 1, 1], 1e-5, "row sums");
  await atStep6();
  await gotoStep(7);
  assertClose((await matrix("output")).values, Array.from(tr.output.data), 1e-5, "output");
  assert.match(await text('[data-testid="caption"]'), /Check against the worked example/);
  assert.doesNotMatch(
    await text('[data-testid="caption"]'),
    /seed 00\d/i,
    "captions name the source, not its file number",
  );
  return tr;
}

/** Asserts one phoneFit() result for `what`. */
export function assertPhoneFit(r, what) {
  assert.deepEqual(
    r.out.slice(0, 6),
    [],
    `${what}: ${r.out.length} elements of the scene outside the ${r.vw} px viewport`,
  );
  assert.ok(r.docW <= r.vw, `${what}: the page scrolls sideways (${r.docW} > ${r.vw})`);
  assert.ok(r.top <= 160, `${what}: header and step bar take ${r.top} px`);
  assert.deepEqual(r.overlaps.slice(0, 4), [], `${what}: overlapping row labels`);
}

/** Decodes an 8-bit, non-interlaced RGB or RGBA PNG (what the browsers' screenshots are): { width, height, pixel(x, y) }. */
export function decodePng(buf) {
  assert.equal(buf.toString("latin1", 1, 4), "PNG", "a PNG file");
  let width = 0,
    height = 0,
    channels = 0;
  const idat = [];
  for (let o = 8; o < buf.length;) {
    const len = buf.readUInt32BE(o),
      type = buf.toString("latin1", o + 4, o + 8),
      body = buf.subarray(o + 8, o + 8 + len);
    if (type === "IHDR") {
      width = body.readUInt32BE(0);
      height = body.readUInt32BE(4);
      assert.ok(
        body[8] === 8 && body[12] === 0 && (body[9] === 2 || body[9] === 6),
        `PNG: 8-bit RGB(A), not interlaced (depth ${body[8]}, colour type ${body[9]}, interlace ${body[12]})`,
      );
      channels = body[9] === 6 ? 4 : 3;
    } else if (type === "IDAT") idat.push(body);
    o += 12 + len;
  }
  const raw = inflateSync(Buffer.concat(idat));
  const stride = width * channels,
    px = Buffer.alloc(stride * height);
  for (let y = 0; y < height; y++) {
    const f = raw[y * (stride + 1)],
      src = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    for (let i = 0; i < stride; i++) {
      const a = i >= channels ? px[y * stride + i - channels] : 0,
        b = y ? px[(y - 1) * stride + i] : 0;
      const c = i >= channels && y ? px[(y - 1) * stride + i - channels] : 0;
      const p = a + b - c,
        pa = Math.abs(p - a),
        pb = Math.abs(p - b),
        pc = Math.abs(p - c);
      const pred =
        f === 0
          ? 0
          : f === 1
            ? a
            : f === 2
              ? b
              : f === 3
                ? (a + b) >> 1
                : pa <= pb && pa <= pc
                  ? a
                  : pb <= pc
                    ? b
                    : c;
      px[y * stride + i] = (src[i] + pred) & 255;
    }
  }
  return {
    width,
    height,
    pixel: (x, y) => [...px.subarray(y * stride + x * channels, y * stride + x * channels + 3)],
  };
}
