// Playback: the steps in turn, each shown for its entry animation and a pause (scaled
// by the speed), stopping after the last step.
import { dur } from "./motion";
import { page } from "./page";
import { onDrawn, render, set, syncNav } from "./render";
import { STEP_COUNT } from "./state";

let playTimer: number | undefined;

export function goto(step: number, animate = true): void {
  set({ view: "steps", step: Math.min(STEP_COUNT, Math.max(1, step)) }, { animate });
}

function schedule(duration: number): void {
  window.clearTimeout(playTimer);
  playTimer = window.setTimeout(
    () => {
      if (!page.playing) return;
      const state = page.state;
      if (state.view === "steps" && state.step < STEP_COUNT) goto(state.step + 1);
      else stop();
    },
    duration + Math.max(dur(1600), 1600 / page.state.speed),
  );
}

function stop(): void {
  page.playing = false;
  window.clearTimeout(playTimer);
  syncNav();
}

export function togglePlay(): void {
  if (page.playing) return stop();
  page.playing = true;
  const state = page.state;
  if (state.view !== "steps" || state.step === STEP_COUNT)
    goto(state.view !== "steps" ? state.step : 1);
  else render(true);
}

/** While playing, each render schedules the next step once its animation is done. */
export function bindPlayback(): void {
  onDrawn((duration) => {
    if (page.playing) schedule(duration);
  });
}
