// The state-consistency walk: seeded random control changes, each page equal
// to the page loaded fresh from its own URL. Written against `evaluate` (a
// function run in the page), so every browser's suite runs the same walk.

/** A seeded PRNG (mulberry32): the same seed replays the same walk. */
export function prng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Run in the page: one control change, made with the events a person's input
 * fires (a select's change, a field's input + change on commit, a checkbox's or
 * button's click, a slider's input, a click on a matrix cell and a value typed
 * into its editor). `a.pick` in [0, 1) chooses among what the control offers.
 * Returns what it did (for the replay log), or null if the control is not there.
 */
function pageAction(a) {
  const q = (sel) => document.querySelector(sel);
  const at = (list) => list[Math.floor(a.pick * list.length) % list.length];
  const fire = (el, ...types) => {
    for (const t of types) el.dispatchEvent(new Event(t, { bubbles: true }));
  };
  const usable = (el) => el && !el.disabled && el.getClientRects().length > 0;
  if (a.kind === "select") {
    const el = q(`[data-testid="${a.id}"]`);
    if (!usable(el) || !el.options.length) return null;
    const v = at([...el.options].map((o) => o.value));
    el.value = v;
    fire(el, "input", "change");
    return `select ${a.id} = ${v}`;
  }
  if (a.kind === "check" || a.kind === "click") {
    const el = q(`[data-testid="${a.id}"]`);
    if (!usable(el)) return null;
    el.click();
    return `click ${a.id}`;
  }
  if (a.kind === "slider") {
    const el = q(`[data-testid="${a.id}"]`);
    if (!usable(el)) return null;
    const lo = Number(el.min),
      hi = Number(el.max),
      st = Number(el.step);
    el.value = String(lo + Math.round((a.pick * (hi - lo)) / st) * st);
    fire(el, "input", "change");
    return `slider ${a.id} = ${el.value}`;
  }
  if (a.kind === "number") {
    const el = q(`[data-testid="${a.id}"]`);
    if (!usable(el)) return null;
    el.focus();
    el.value = a.text;
    fire(el, "input", "change");
    el.blur();
    return `type ${a.id} = ${a.text}`;
  }
  if (a.kind === "text") {
    const el = q(`[data-testid="${a.id}"]`);
    if (!usable(el)) return null;
    el.value = a.text;
    fire(el, "input");
    return `type ${a.id} = "${a.text}"`;
  }
  if (a.kind === "cell") {
    const cells = [
      ...document.querySelectorAll(
        '[data-testid="scene-svg"] g[data-testid^="matrix-X"] rect.cell, [data-testid="scene-svg"] g[data-testid^="matrix-W"] rect.cell',
      ),
    ];
    if (!cells.length) return null;
    const cell = at(cells);
    const b = cell.getBoundingClientRect();
    const x = b.left + b.width / 2,
      y = b.top + b.height / 2;
    const target = document.elementFromPoint(x, y);
    if (!target) return null;
    target.dispatchEvent(new MouseEvent("click", { bubbles: true, clientX: x, clientY: y }));
    const form = q('[data-testid="cell-editor"]');
    if (!form) return null;
    const input = form.querySelector("input");
    input.value = a.text;
    fire(input, "input");
    form.requestSubmit();
    const refused = q('[data-testid="cell-editor"]');
    if (refused)
      input.dispatchEvent(new KeyboardEvent("keydown", { key: "Escape", bubbles: true }));
    const g = cell.closest("g[data-testid^='matrix-']").getAttribute("data-testid");
    return `edit ${g}[${cell.getAttribute("data-row")}, ${cell.getAttribute("data-col")}] = "${a.text}"${refused ? " (refused)" : ""}`;
  }
  return null;
}

/**
 * Run in the page: checks (b) and (c) of the walk. (b) the stage is drawn and the
 * caption's title is the active view's; (c) the page loaded fresh from this page's
 * URL (in a same-size iframe) shows the same. Resolves to a list of problems.
 */
async function pageConsistency() {
  // What the stage and caption show: every matrix's size and numbers, the caption's text.
  function snapshot(win = window) {
    const doc = win.document;
    const svg = doc.querySelector('svg[data-testid="scene-svg"]');
    const matrices = {};
    for (const id of win.__attnkit.matrixIds()) {
      const m = win.__attnkit.matrix(id);
      matrices[id] = {
        rows: m.rows,
        cols: m.cols,
        values: Array.from(m.values, (v) =>
          Number.isFinite(v) ? Number(v.toPrecision(6)) : String(v),
        ).join(" "),
      };
    }
    return {
      view: svg?.getAttribute("data-view"),
      step: svg?.getAttribute("data-step"),
      title: doc.querySelector('[data-testid="scene-title"]')?.textContent,
      caption: doc
        .querySelector('[data-testid="caption"]')
        ?.textContent.replace(/\s+/g, " ")
        .trim(),
      matrices,
    };
  }
  const out = [];
  // The URL follows the state within 120 ms.
  for (let i = 0; i < 40 && location.search.slice(1) !== window.__attnkit.query(); i++)
    await new Promise((r) => setTimeout(r, 20));
  if (location.search.slice(1) !== window.__attnkit.query())
    out.push(`the URL ${location.search} is not the state ${window.__attnkit.query()}`);
  const s = window.__attnkit.state();
  const here = snapshot(window);
  const drawn = document.querySelectorAll(
    '[data-testid="scene-svg"] rect.cell, [data-testid="scene-svg"] canvas, [data-testid="scene-svg"] rect, [data-testid="scene-svg"] path',
  ).length;
  if (!drawn) out.push("the stage is blank");
  if (here.view !== s.view) out.push(`the stage shows view ${here.view}, the state says ${s.view}`);
  const nav = document.querySelector(`[data-testid="view-${s.view}"]`);
  if (!nav?.classList.contains("on")) out.push(`the ${s.view} tab is not the one lit`);
  if (document.querySelectorAll("#views button.on").length !== 1)
    out.push("not exactly one view tab lit");
  if (s.view === "steps") {
    if (!here.title?.startsWith(`${s.step}. `))
      out.push(`caption title "${here.title}" for step ${s.step}`);
  } else if (!here.title?.toLowerCase().includes(nav.textContent.trim().toLowerCase())) {
    out.push(`caption title "${here.title}" for view ${s.view}`);
  }
  if (document.querySelector('[data-testid="error"]'))
    out.push(`error shown: ${document.querySelector('[data-testid="error"]').textContent}`);
  // The page loaded fresh from this URL, in a same-size iframe. Loading a page is a
  // function of its URL, so a URL the walk has loaded before is not loaded again.
  const loaded = (window.__walkFreshLoads ??= new Map());
  if (!loaded.has(location.href)) {
    const frame = document.createElement("iframe");
    frame.style.cssText = `position:fixed;left:0;top:0;width:${innerWidth}px;height:${innerHeight}px;opacity:0;pointer-events:none;z-index:-1;border:0`;
    frame.src = location.href;
    document.body.append(frame);
    try {
      const t0 = performance.now();
      for (;;) {
        const w = frame.contentWindow;
        if (w?.document?.body?.dataset.ready === "1") break;
        if (w?.document?.querySelector('[data-testid="error"]')) break;
        if (performance.now() - t0 > 10000) {
          out.push("the fresh page did not get ready in 10 s");
          return out;
        }
        await new Promise((r) => setTimeout(r, 15));
      }
      loaded.set(location.href, {
        snapshot: snapshot(frame.contentWindow),
        state: JSON.stringify(frame.contentWindow.__attnkit.state()),
      });
    } finally {
      frame.remove();
    }
  }
  const { snapshot: fresh, state: freshState } = loaded.get(location.href);
  for (const k of ["view", "step", "title", "caption"])
    if (fresh[k] !== here[k]) out.push(`${k}: page "${here[k]}", fresh load "${fresh[k]}"`);
  const ids = new Set([...Object.keys(here.matrices), ...Object.keys(fresh.matrices)]);
  for (const id of ids) {
    const a = here.matrices[id],
      b = fresh.matrices[id];
    if (!a || !b)
      out.push(`matrix ${id}: ${a ? "not on the fresh page" : "only on the fresh page"}`);
    else if (a.rows !== b.rows || a.cols !== b.cols)
      out.push(`matrix ${id}: page ${a.rows} x ${a.cols}, fresh load ${b.rows} x ${b.cols}`);
    else if (a.values !== b.values) out.push(`matrix ${id}: numbers differ from the fresh load`);
  }
  if (freshState !== JSON.stringify(s))
    out.push(`state: page ${JSON.stringify(s)}, fresh load ${freshState}`);
  return out;
}

const WALK_SENTENCES = [
  "the train left the station on time",
  "I cashed the check at the bank",
  "time flies like an arrow",
  "the quick brown fox jumps over the lazy dog",
  "a",
  "",
  "bank bank bank bank bank bank bank bank bank bank",
];
const WALK_NUMBERS = ["1", "2", "3", "4", "8", "16", "0", "-3", "2.5", "100000", ""]; // a number field takes no letters
const WALK_CELLS = ["0.5", "-2", "3", "1e5", "1e30", "NaN", "abc", "", "1e400", "-0.25"];

/** The next random control change of the walk. */
function walkAction(rnd) {
  const pick = rnd();
  const r = rnd();
  const one = (list) => list[Math.floor(rnd() * list.length)];
  if (r < 0.08) return { kind: "select", id: "preset", pick };
  if (r < 0.18)
    return {
      kind: "select",
      id: one(["mask", "mask", "weights", "emb", "query", "head", "speed"]),
      pick,
    };
  if (r < 0.26) return { kind: "check", id: one(["batch", "pe", "scaling"]) };
  if (r < 0.32) return { kind: "slider", id: one(["temperature", "softcap"]), pick };
  if (r < 0.44)
    return {
      kind: "number",
      id: one(["dModel", "seed", "dK", "dV", "heads", "kvHeads"]),
      text: one(WALK_NUMBERS),
    };
  if (r < 0.48) return { kind: "text", id: one(["text", "text2"]), text: one(WALK_SENTENCES) };
  if (r < 0.58) return { kind: "cell", pick, text: one(WALK_CELLS) };
  if (r < 0.72)
    return {
      kind: "click",
      id: `view-${one(["steps", "headview", "grid", "saturation", "decoding"])}`,
    };
  if (r < 0.92) return { kind: "click", id: `step-${1 + Math.floor(rnd() * 8)}` };
  return {
    kind: "click",
    id: one(["decode-step", "decode-end", "decode-reset", "reroll", "reset-edits", "next", "prev"]),
  };
}

/**
 * Changes per walk: Chromium's walk is the long one; Firefox's and WebKit's check
 * the same page in their engines with fewer. Each run draws a new seed, so runs
 * add up to more than one walk covers. WALK_STEPS=N sets both, for a longer walk.
 */
export const WALK_STEPS = Number(process.env.WALK_STEPS ?? 120);
export const CROSS_BROWSER_WALK_STEPS = Number(process.env.WALK_STEPS ?? 50);

/**
 * The state-consistency walk: from the page as loaded, `steps` seeded random
 * control changes; after each, (a) no new problem (uncaught error, console error),
 * (b) the stage is drawn with the active view's caption, (c) the page equals the
 * page loaded fresh from its URL. `evaluate(fn, arg)` runs fn in the page;
 * `problems()` resolves to the problems seen so far. Throws with the seed and the
 * steps so far on the first failure. Tries at most 3 * `steps` actions (an action
 * on a control not on screen changes nothing). The walk has no time budget: a busy
 * machine makes it slower, not shorter.
 */
export async function stateWalk({ evaluate, problems, seed, steps = WALK_STEPS, label = "" }) {
  const rnd = prng(seed);
  const log = [];
  const t0 = Date.now();
  const seen = (await problems()).length;
  let done = 0;
  for (let i = 0; i < steps * 3 && done < steps; i++) {
    const did = await evaluate(pageAction, walkAction(rnd));
    if (!did) continue;
    done++;
    log.push(did);
    const found = [...(await problems()).slice(seen), ...(await evaluate(pageConsistency))];
    if (found.length) {
      const url = await evaluate(() => location.href);
      throw new Error(
        `${label} state walk, seed ${seed} (replay: WALK_SEED=${seed}), after ${done} changes:\n  ${log.slice(-12).join("\n  ")}\nat ${url}\n${found.join("\n")}`,
      );
    }
  }
  // Fresh loads made: one per distinct URL the walk reached.
  const loads = await evaluate(() => window.__walkFreshLoads?.size ?? 0);
  return { done, ms: Date.now() - t0, log, loads };
}
