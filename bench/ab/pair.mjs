// Paired A/B rounds of two native programs that print "name value" lines
// (lower is better; bench/native/*_ab.cc): runs A and B alternately, the order
// reversed every other round, then prints per name the medians of A and B and
// the median of the per-round ratios A / B (B's speed: above 1, B is faster)
// with its quartiles, and the lowest of those medians. A program may carry
// its arguments, separated by spaces ("node bench/wasm/layer_ab.mjs --side DIR").
// Usage: node bench/ab/pair.mjs ROUNDS A_PROGRAM B_PROGRAM
import { execFileSync } from "node:child_process";
import { median, quartile } from "../lib/stats.mjs";

/** One run of a program: name -> value. */
function run(program) {
  const values = new Map();
  const [file, ...args] = program.split(" ");
  for (const line of execFileSync(file, args, { encoding: "utf8" }).split("\n")) {
    const at = line.lastIndexOf(" ");
    if (at > 0) values.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return values;
}

const [roundsArg, programA, programB] = process.argv.slice(2);
if (!programB) {
  console.error("usage: node bench/ab/pair.mjs ROUNDS A_PROGRAM B_PROGRAM");
  process.exit(2);
}
const runsA = [],
  runsB = [];
for (let r = 0; r < Number(roundsArg); ++r) {
  if (r % 2 === 0) (runsA.push(run(programA)), runsB.push(run(programB)));
  else (runsB.push(run(programB)), runsA.push(run(programA)));
}
let lowest = Infinity;
for (const name of runsA[0].keys()) {
  const a = runsA.map((x) => x.get(name)),
    b = runsB.map((x) => x.get(name));
  const ratios = a.map((x, i) => x / b[i]);
  lowest = Math.min(lowest, median(ratios));
  console.log(
    `${name.padEnd(45)} A ${median(a).toFixed(3).padStart(11)}  B ${median(b).toFixed(3).padStart(11)}` +
      `  B/A speed ${median(ratios).toFixed(3)} [${quartile(ratios, 0.25).toFixed(3)}, ${quartile(ratios, 0.75).toFixed(3)}]`,
  );
}
console.log(`lowest paired median: ${lowest.toFixed(3)}`);
