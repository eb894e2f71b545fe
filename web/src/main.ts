// The page: loads the attnkit package, then wires the state (page.ts, mirrored in the
// URL) to the controls, the buttons, the keyboard and the renderer (render.ts).
import "./style.css";
import createAttnkit from "attnkit";
// d3 declares itself side-effect free, so a bundler drops the registration of
// selection.transition/interrupt unless d3-transition is imported for its side effect.
import "d3-transition";
import { bindControls } from "./controls";
import { onStageResize } from "./dom";
import { bindKeys } from "./keyboard";
import { setSpeed } from "./motion";
import { bindNav } from "./nav";
import { page, saveUrl } from "./page";
import { bindPlayback } from "./playback";
import { render, set, showError } from "./render";
import { toQuery } from "./state";
import { installTestHooks } from "./test-hooks";
import { bindTrained, showTrainedFallback } from "./trained";
import { dropFailingEdits, showUrlNote } from "./url-edits";

async function main(): Promise<void> {
  const t0 = performance.now();
  try {
    page.attn = await createAttnkit();
  } catch (err) {
    showError(err);
    return;
  }
  page.timing.loadMs = performance.now() - t0;
  setSpeed(page.state.speed);
  installTestHooks();
  bindControls(() => page.state, set);
  bindNav();
  bindKeys();
  bindPlayback();
  dropFailingEdits();
  showUrlNote();
  bindTrained(
    () => page.state,
    (s) => {
      page.state = s;
      saveUrl();
      render(true);
    },
  );
  if (page.trainedFallback) showTrainedFallback();
  render(true);
  history.replaceState(null, "", `?${toQuery(page.state)}`);
  onStageResize(() => render(false));
}

void main();
