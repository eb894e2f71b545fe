// Model.parameters() and Model.inspect() as the helpers' contract gives them, for the
// worker until the package's own types declare them.
import type { Matrix, Model, Tensor } from "attnkit";

export interface ModelParameters {
  tokenEmbedding: Matrix;
  positionEmbedding: Matrix;
  layers: {
    W_Q: Matrix;
    W_K: Matrix;
    W_V: Matrix;
    W_O: Matrix;
    lnGain?: Matrix;
    lnBias?: Matrix;
  }[];
  finalGain?: Matrix;
  finalBias?: Matrix;
  unembedding: Matrix;
}

export interface LayerInspection {
  input: Matrix;
  Q: Tensor;
  K: Tensor;
  V: Tensor;
  weights: Tensor;
  dScores?: Tensor;
}

export interface Inspection {
  tokens: Int32Array;
  logits: Matrix;
  predictions: Int32Array;
  loss?: number;
  accuracy?: number;
  layers: LayerInspection[];
}

export type InspectedModel = Model & {
  parameters(): ModelParameters;
  inspect(
    tokens: Int32Array | readonly number[],
    targets?: Int32Array | readonly number[],
  ): Inspection;
};
