// The test hook window.__attnkit: timing, the state, and the numbers of every matrix on
// screen (canvas ones included), read by the browser suites in tests/browser.
import { drawnIds, drawnMatrix } from "./draw/registry";
import { page } from "./page";
import { toQuery } from "./state";
import { trainHook, trainInspectionHook } from "./train/view";

export function installTestHooks(): void {
  (window as unknown as { __attnkit: unknown }).__attnkit = {
    timing: page.timing,
    target: page.attn.target,
    simd: page.attn.simd,
    state: () => page.state,
    animation: () => page.animation,
    playing: () => page.playing,
    matrix: (id: string, nth = 0) => drawnMatrix(id, nth),
    matrixIds: () => drawnIds(),
    query: () => toQuery(page.state),
    /** The Train view's run: metrics, snapshots and the inspection on screen. */
    train: () => trainHook(),
    trainInspection: () => trainInspectionHook(),
  };
}
