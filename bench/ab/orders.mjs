// B's speed over A's from the two load orders of a wasm A/B question (bench/ab/ab.sh):
// per row that both runs print ("NAME ... B/A speed X [Q1, Q3]"), the geometric mean of
// the two runs' B/A, which cancels the speed that the module loaded second loses
// (bench/lib/paired.mjs), and the lowest of those means.
// Usage: node bench/ab/orders.mjs A_FIRST.txt B_FIRST.txt
import { readFileSync } from "node:fs";

const speeds = (file) =>
  new Map(
    readFileSync(file, "utf8")
      .split("\n")
      .map((line) => line.match(/^(\S+(?: \S+)*?)\s+A\s.*B\/A speed ([\d.]+)/))
      .filter(Boolean)
      .map((m) => [m[1], Number(m[2])]),
  );

const [aFirst, bFirst] = process.argv.slice(2).map(speeds);
let lowest = Infinity;
for (const [name, x] of aFirst) {
  const y = bFirst.get(name);
  if (y === undefined) continue;
  const mean = Math.sqrt(x * y);
  lowest = Math.min(lowest, mean);
  console.log(
    `${name.padEnd(40)} B/A speed ${mean.toFixed(3)} (A loaded first ${x.toFixed(3)}, B first ${y.toFixed(3)})`,
  );
}
console.log(`lowest of both orders: ${lowest.toFixed(3)}`);
