// The README's performance table (a fit run only): attnkit against the fastest
// peer of the same rounds, natively and in wasm, then the rows of the
// backward, training and language sections, with the host it ran on.
import { ratioText, roundRatio } from "../../fitness.mjs";
import { ATTNKIT_WASM, NATIVE_IN_NODE, OPENBLAS_IN_NODE } from "./forward.mjs";

/** The forward's rows of the README's table (one head, the layer, decoding). */
export function forwardReadmeRows(f) {
  const { rows, fitness, Ts } = f;
  const readmeRows = [];
  const fastest = (list) => [...list].sort((a, b) => b.gflops - a.gflops)[0];
  const cell = (ours, peers) => {
    if (!ours) return ["–", "–"];
    const best = fastest(peers);
    if (!best) return [`**${ours.gflops.toFixed(1)}**`, "–"];
    const rr = roundRatio(ours, peers, fitness.kept(ours));
    const ratio = rr ? ratioText(rr) : `${(ours.gflops / best.gflops).toFixed(2)}×`;
    return [
      `**${ours.gflops.toFixed(1)}** (${ratio})`,
      `${best.gflops.toFixed(1)} ${best.engine.replace(/ \(in Node's rounds\)$/, "")}`,
    ];
  };
  const nativePeer = (r) =>
    r.platform === "native" &&
    (r.engine.startsWith("onnxruntime") || r.engine === OPENBLAS_IN_NODE);
  const wasmPeer = (r) => r.platform === "wasm" && !r.engine.startsWith("attnkit");
  const bigT = Ts.includes(2048) ? 2048 : Ts.at(-1);
  const shapes = [
    ...[false, true].map((causal) => ({
      label: `T = ${bigT}${causal ? ", causal" : ""}`,
      at: (r) => r.T === bigT && r.causal === causal,
    })),
    { label: "layer: T = 512, d_model = 512, 8 heads", at: (r) => r.shape === "layer T=512" },
    {
      label: "decode: 1 query, 8 heads, 4096 cached tokens",
      at: (r) => r.shape === "decode, cache 4096",
    },
  ];
  for (const { label, at } of shapes) {
    const here = rows.filter((r) => at(r));
    const [n, np] = cell(
      here.find((r) => r.engine === NATIVE_IN_NODE),
      here.filter(nativePeer),
    );
    const [w, wp] = cell(
      here.find((r) => r.engine === ATTNKIT_WASM),
      here.filter(wasmPeer),
    );
    if (n !== "–" || w !== "–") readmeRows.push(`| ${label} | ${n} | ${np} | ${w} | ${wp} |`);
  }
  return readmeRows;
}

/** Writes the README's table (publish: bench/lib/report/format.mjs's publisher). */
export function publishReadme(f, readmeRows, readmeUrl, publish) {
  const { rows, engineInfo } = f;
  if (!readmeRows.length) return;
  const cpu = engineInfo.node?.cpu;
  const target = rows.find((r) => r.engine === NATIVE_IN_NODE && r.target);
  const host =
    `Measured on ${cpu ? `${cpu.model} (/proc/cpuinfo: ${cpu.simd.join(", ")})` : "an unknown CPU"}` +
    (target
      ? `, attnkit native on Highway target ${target.target} (${target.bits}-bit vectors)`
      : "") +
    ".";
  publish(
    readmeUrl,
    "<!-- perf:start -->",
    "<!-- perf:end -->",
    `${host}\n\n| shape | attnkit native | fastest native peer | attnkit wasm | fastest wasm peer |\n` +
      `|---|---:|---:|---:|---:|\n${readmeRows.join("\n")}\n`,
  );
}
