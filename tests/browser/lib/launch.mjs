// Starting Chromium (Playwright) on the built page: one launch configuration
// (tests/chromium.mjs), a desktop context without motion, a phone's page, and
// the page's console errors and uncaught errors collected.
import { chromium } from "playwright-core";
import { ARGS, CHROMIUM } from "../../chromium.mjs";
import { dist, requireBuiltPage } from "./paths.mjs";
import { serve } from "./server.mjs";

export { ARGS, CHROMIUM };

/**
 * The built page served on loopback and Debian's Chromium with a context without
 * motion (1440 x 900 unless `contextOptions` say otherwise, as Playwright's
 * newContext takes them), for the Chromium suites. Close browser and server after.
 */
export async function openChromium(contextOptions = {}) {
  requireBuiltPage();
  const server = await serve(dist);
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ARGS });
  const context = await browser.newContext({
    viewport: { width: 1440, height: 900 },
    reducedMotion: "reduce",
    ...contextOptions,
  });
  return { server, browser, context };
}

/**
 * Collects page p's console errors and warnings (with where they came from), its
 * uncaught errors and a crash of its renderer into `into`.
 */
export function watch(p, into) {
  p.on("console", (m) => {
    if (m.type() !== "error" && m.type() !== "warning") return;
    const { url, lineNumber } = m.location();
    into.push(`console ${m.type()}: ${m.text()}${url ? ` (${url}:${lineNumber})` : ""}`);
  });
  p.on("pageerror", (e) => into.push(`page error: ${e.message}`));
  p.on("crash", () => into.push("the page's renderer crashed"));
}

/**
 * A phone's page in `browser`: 390 x 844, touch, mobile, no motion; its errors
 * go into `problems`. Close the context after.
 */
export async function phonePage(browser, problems) {
  const context = await browser.newContext({
    viewport: { width: 390, height: 844 },
    hasTouch: true,
    isMobile: true,
    reducedMotion: "reduce",
  });
  const page = await context.newPage();
  watch(page, problems);
  return { context, page };
}
