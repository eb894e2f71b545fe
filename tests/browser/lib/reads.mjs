// What the browser tests read in the page: functions run in the page (through
// Playwright, WebDriver BiDi or classic WebDriver alike, so each takes one
// JSON argument and returns JSON), and the page's presets, views, the
// pages a phone test visits and the query of its largest layer.
export const PRESETS = ["seed001", "train", "bank", "flies", "fox"];
export const VIEWS = ["headview", "grid", "saturation", "decoding"];

/**
 * The page's query for its largest layer: T = 64 tokens, d_model = 128, d_k = d_v = 16,
 * 8 heads, random embeddings and weights (its matrices drawn on canvases). The tests
 * read it; bench/wasm/page.mjs times its controls.
 */
export const BIG_LAYER = (() => {
  const words = Array.from(
    { length: 64 },
    (_, i) => ["the", "train", "left", "station", "on", "time", "bank", "check"][i % 8],
  );
  return new URLSearchParams({
    t: words.join(" "),
    p: "custom",
    e: "random",
    dm: "128",
    w: "random",
    dk: "16",
    dv: "16",
    h: "8",
    kvh: "8",
  });
})();

/** Every step, then every other view: what a phone test visits. */
export const PHONE_PAGES = [
  ...Array.from({ length: 8 }, (_, i) => `st=${i + 1}`),
  ...VIEWS.map((v) => `v=${v}`),
];

/**
 * Run in the page: the elements of the active scene (stage and caption) that reach
 * outside the viewport horizontally, the page's own sideways scroll, and the height
 * of the header and step bar.
 */
export function phoneFit() {
  const vw = document.documentElement.clientWidth;
  const out = [];
  for (const el of document.querySelectorAll(
    "#stage, #stage svg, #stage svg *, #caption, #caption *",
  )) {
    const r = el.getBoundingClientRect();
    if (r.width === 0 && r.height === 0) continue;
    if (r.left < -0.5 || r.right > vw + 0.5)
      out.push(
        `<${el.tagName.toLowerCase()} ${el.getAttribute("data-testid") ?? el.getAttribute("class") ?? ""}> ${Math.round(r.left)}..${Math.round(r.right)}`,
      );
  }
  // Row labels of a matrix (tokens, features) that overlap their neighbours.
  const overlaps = [];
  for (const axis of document.querySelectorAll("#stage .m-rows")) {
    const r = [...axis.querySelectorAll(".tick text")]
      .map((t) => t.getBoundingClientRect())
      .filter((b) => b.height > 0)
      .sort((a, b) => a.top - b.top);
    // A text's box includes its line's leading (about a third of it): boxes overlapping by more means the letters do.
    for (let k = 1; k < r.length; k++)
      if (r[k].top < r[k - 1].bottom - 0.35 * r[k - 1].height)
        overlaps.push(
          `${axis.closest("[data-testid]")?.getAttribute("data-testid")} row labels ${k - 1} and ${k}`,
        );
  }
  const top =
    document.querySelector("header.top").getBoundingClientRect().height +
    document.querySelector("#stepbar").getBoundingClientRect().height;
  return { vw, out, overlaps, docW: document.documentElement.scrollWidth, top: Math.round(top) };
}

/**
 * The centres of 7 x 7 cells spread over every canvas-drawn matrix on screen,
 * with the colour the canvas holds there (opaque pixels only): what a
 * screenshot must show at those points. Cell centres, since a browser may
 * resample a canvas placed at a fractional position, blending cell borders.
 */
export function canvasSamples() {
  const out = [];
  for (const g of document.querySelectorAll('[data-render="canvas"]')) {
    const c = g.querySelector("canvas");
    const rows = Number(g.getAttribute("data-rows")),
      cols = Number(g.getAttribute("data-cols"));
    const r = c?.getBoundingClientRect();
    if (!c || !c.width || !c.height || r.width < 8 || r.height < 8) continue;
    const img = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
    const pts = [];
    const pick = (n) => [
      ...new Set(Array.from({ length: 7 }, (_, i) => Math.floor(((i + 0.5) * n) / 7))),
    ];
    for (const row of pick(rows)) {
      for (const col of pick(cols)) {
        const x = Math.floor(r.left + ((col + 0.5) * r.width) / cols),
          y = Math.floor(r.top + ((row + 0.5) * r.height) / rows);
        if (x < 0 || y < 0 || x >= innerWidth || y >= innerHeight) continue;
        const k =
          (Math.floor(((row + 0.5) * c.height) / rows) * c.width +
            Math.floor(((col + 0.5) * c.width) / cols)) *
          4;
        if (img[k + 3] === 255) pts.push([x, y, img[k], img[k + 1], img[k + 2]]);
      }
    }
    out.push({
      id: g.getAttribute("data-testid"),
      x: Math.round(r.left),
      y: Math.round(r.top),
      pts,
    });
  }
  return { scale: devicePixelRatio, canvases: out };
}

/** The settings drawer (narrow screens) is open and has arrived: no transition running. */
export function drawerOpen() {
  const el = document.getElementById("controls");
  return (
    document.body.classList.contains("controls-open") &&
    el.getAnimations().length === 0 &&
    getComputedStyle(el).transform === "none"
  );
}

/** A matrix on screen: SVG cells, or for canvas ones the arrays the page drew (window.__attnkit.matrix). */
export function readMatrix(id) {
  const el = document.querySelector(`[data-testid="matrix-${id}"]`);
  if (!el) return null;
  const m = {
    render: el.getAttribute("data-render"),
    rows: Number(el.getAttribute("data-rows")),
    cols: Number(el.getAttribute("data-cols")),
    values: [...el.querySelectorAll("rect.cell")].map((r) => Number(r.getAttribute("data-value"))),
    texts: [...el.querySelectorAll("text.cell-text")].map((t) => t.textContent),
  };
  if (m.render === "canvas") m.values = Array.from(window.__attnkit.matrix(id).values);
  // Classic WebDriver carries JSON, which has no -Infinity: send non-finite values as strings.
  m.values = m.values.map((v) => (Number.isFinite(v) ? v : String(v)));
  return m;
}

export const readText = (sel) => document.querySelector(sel)?.textContent ?? null;
export const countAll = (sel) => document.querySelectorAll(sel).length;
export const exists = (sel) => document.querySelector(sel) !== null;
export function setValue({ sel, value }) {
  const el = document.querySelector(sel);
  el.value = value;
  el.dispatchEvent(new Event("input", { bubbles: true }));
  el.dispatchEvent(new Event("change", { bubbles: true }));
}
/** Resources the page loaded from anywhere but its own server. */
export const outsideRequests = (origin) =>
  performance
    .getEntriesByType("resource")
    .map((e) => e.name)
    .filter((u) => !u.startsWith(origin) && !u.startsWith("data:") && !u.startsWith("blob:"));
