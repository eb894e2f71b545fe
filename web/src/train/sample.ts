// The Train view's sample sequence as a table: each position's input token, its target
// (the token the model should predict there) and the model's prediction. Only some
// positions are scored (in the loss and the accuracy): their columns are shaded, their
// targets bold and their predictions marked right or wrong; the others have no target.
import { retained, setAttr } from "../draw/retain";
import type { SvgGroup } from "../draw/types";
import { tokenLabel } from "../trained";
import type { InspectionView } from "./protocol";

const HEAD = 66;
const ROW = 15;
const ROWS = ["position", "input", "target", "predicted"];
const RIGHT = "#15803d";
const WRONG = "#b91c1c";
const SCORED_FILL = "#fdf3d7";

/** Draws the table at (x, y) within `width`, wrapped onto as many lines as it needs. */
export function drawSample(
  g: SvgGroup,
  x: number,
  y: number,
  width: number,
  ins: InspectionView,
): { width: number; height: number } {
  const T = ins.tokens.length;
  const longest = Math.max(
    2,
    ...ins.tokens.map((t) => tokenLabel(t).length),
    ...ins.targets.map((t) => (t >= 0 ? tokenLabel(t).length : 1)),
  );
  const colW = Math.max(22, longest * 8 + 10);
  const perLine = Math.max(4, Math.min(T, Math.floor((width - HEAD) / colW)));
  const lines = Math.ceil(T / perLine);
  const lineH = ROWS.length * ROW + 10;
  const legendH = 16;
  const height = lines * lineH + legendH;
  const tableW = HEAD + Math.min(T, perLine) * colW;
  const sig = [width, JSON.stringify([ins.tokens, ins.targets, ins.predictions])].join("|");
  const { entry } = retained(g.node()!, "train-sample-table", sig, () => {
    const gg = g.append("g").attr("data-testid", "train-sample-table").attr("class", "sample");
    for (let line = 0; line < lines; line++) {
      const ly = line * lineH;
      ROWS.forEach((name, r) =>
        gg
          .append("text")
          .attr("class", "note")
          .attr("x", 0)
          .attr("y", ly + (r + 1) * ROW - 3)
          .text(name),
      );
      for (let k = 0; k < perLine; k++) {
        const i = line * perLine + k;
        if (i >= T) break;
        const cx = HEAD + k * colW;
        const target = ins.targets[i];
        const isScored = target >= 0;
        const col = gg
          .append("g")
          .attr("transform", `translate(${cx},${ly})`)
          .attr("data-testid", `sample-${i}`)
          .attr("data-scored", isScored ? "1" : "0");
        if (isScored)
          col
            .append("rect")
            .attr("x", 1)
            .attr("y", ROW + 1)
            .attr("width", colW - 2)
            .attr("height", 3 * ROW)
            .attr("rx", 3)
            .attr("fill", SCORED_FILL);
        const cell = (r: number, text: string, cls: string) =>
          col
            .append("text")
            .attr("class", cls)
            .attr("x", colW / 2)
            .attr("y", (r + 1) * ROW - 3)
            .attr("text-anchor", "middle")
            .text(text);
        cell(0, String(i), "note sample-pos").style("font-size", "10px");
        cell(1, tokenLabel(ins.tokens[i]), "sample-token").attr("data-role", "input");
        if (isScored) {
          cell(2, tokenLabel(target), "sample-token")
            .attr("data-role", "target")
            .attr("font-weight", 700);
          const p = ins.predictions[i];
          cell(3, tokenLabel(p), "sample-token")
            .attr("data-role", "predicted")
            .style("fill", p === target ? RIGHT : WRONG)
            .attr("font-weight", 700)
            .append("title")
            .text(p === target ? "right" : `wrong: the target is ${tokenLabel(target)}`);
        } else {
          cell(2, "·", "note").attr("data-role", "target");
          cell(3, "·", "note").attr("data-role", "predicted");
        }
      }
    }
    const legend = gg.append("g").attr("transform", `translate(0,${lines * lineH + 2})`);
    legend
      .append("rect")
      .attr("width", 12)
      .attr("height", 10)
      .attr("y", -1)
      .attr("rx", 2)
      .attr("fill", SCORED_FILL)
      .attr("stroke", "#e5c877");
    const t = legend.append("text").attr("class", "note").attr("x", 17).attr("y", 8);
    t.append("tspan").text("scored: predicted ");
    t.append("tspan").attr("fill", RIGHT).attr("font-weight", 700).text("right");
    t.append("tspan").text(" or ");
    t.append("tspan").attr("fill", WRONG).attr("font-weight", 700).text("wrong");
    t.append("tspan").text("; · not scored");
    return { node: gg.node()!, state: null };
  });
  setAttr(entry.node, "transform", `translate(${x},${y})`);
  return { width: Math.max(tableW, Math.min(width, 420)), height };
}
