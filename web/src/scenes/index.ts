import type { Scene } from "./common";
import { tokensScene } from "./tokens";
import { projectionsScene } from "./projections";
import { scoresScene } from "./scores";
import { scaleScene } from "./scale";
import { maskScene } from "./mask";
import { softmaxScene } from "./softmax";
import { weightedSumScene } from "./weighted-sum";
import { multiHeadScene } from "./multi-head";

/** The eight steps, in order (index 0 = step 1). */
export const SCENES: Scene[] = [
  tokensScene,
  projectionsScene,
  scoresScene,
  scaleScene,
  maskScene,
  softmaxScene,
  weightedSumScene,
  multiHeadScene,
];
