// The web page (web/dist) in Debian's Firefox ESR, headless, driven over
// WebDriver BiDi by puppeteer-core (no browser download: it launches
// /usr/bin/firefox-esr), a browser for each of the five suites. The smoke steps are in
// lib/smoke.mjs, the Train view's in lib/smoke-train.mjs, the Language view's in
// lib/smoke-language.mjs, the GPT-2 view's in lib/smoke-gpt2.mjs, threads on an isolated
// page in lib/smoke-threads.mjs.
import { existsSync } from "node:fs";
import puppeteer from "puppeteer-core";
import { smokeTests, useDriver } from "./lib/smoke.mjs";
import { languageSmoke } from "./lib/smoke-language.mjs";
import { gpt2Smoke } from "./lib/smoke-gpt2.mjs";
import { threadsSmoke } from "./lib/smoke-threads.mjs";
import { trainSmoke } from "./lib/smoke-train.mjs";

const FIREFOX = process.env.FIREFOX ?? "/usr/bin/firefox-esr";

async function openFirefox(origin) {
  if (!existsSync(FIREFOX))
    throw new Error(
      `${FIREFOX} is missing: run scripts/setup.sh (apt-get install firefox-esr) or set FIREFOX`,
    );
  const browser = await puppeteer.launch({
    browser: "firefox",
    executablePath: FIREFOX,
    headless: true,
    // The page animates unless the user prefers reduced motion (as Playwright's reducedMotion: "reduce").
    extraPrefsFirefox: { "ui.prefersReducedMotion": 1 },
  });
  const page = (await browser.pages())[0] ?? (await browser.newPage());
  const problems = [];
  page.on("console", (m) => {
    if (["error", "warn", "warning", "assert"].includes(m.type()))
      problems.push(`console ${m.type()}: ${m.text()}`);
  });
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  page.on("requestfailed", (r) => problems.push(`request failed: ${r.url()}`));
  page.on("response", (r) => {
    if (r.status() >= 400) problems.push(`HTTP ${r.status()}: ${r.url()}`);
  });
  page.on("request", (r) => {
    const u = r.url();
    if (!u.startsWith(origin) && !u.startsWith("data:") && !u.startsWith("blob:"))
      problems.push(`network request outside the page: ${u}`);
  });
  await page.setViewport({ width: 1280, height: 800 });
  return {
    label: `Firefox ${(await browser.version()).replace(/^firefox\//, "")}`,
    goto: (url) => page.goto(url),
    evaluate: (fn, arg) => page.evaluate(fn, arg),
    // A click where a person clicks: on a loaded machine the page may still be laying out
    // when the click comes (Firefox then gives the element no clickable point), so it is
    // tried again for up to 5 s; any other error, or a button never clickable, fails.
    click: async (sel) => {
      for (let attempt = 1; ; attempt++) {
        try {
          return await page.click(sel);
        } catch (e) {
          if (attempt >= 20 || !/not clickable/.test(String(e?.message))) throw e;
          await new Promise((resolve) => setTimeout(resolve, 250));
        }
      }
    },
    select: (sel, value) => page.select(sel, value),
    viewport: (width, height) => page.setViewport({ width, height }),
    screenshot: (file) => page.screenshot({ path: file }),
    problems: async () => problems,
    close: () => browser.close(),
  };
}

smokeTests(useDriver("firefox", openFirefox));
trainSmoke("firefox", openFirefox);
languageSmoke("firefox", openFirefox);
gpt2Smoke("firefox", openFirefox);
threadsSmoke("firefox", openFirefox);
