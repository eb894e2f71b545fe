// The web page (web/dist) in WebKit, Safari's engine: Debian's WebKitGTK
// MiniBrowser, driven by WebKitWebDriver (package webkit2gtk-driver) over
// classic WebDriver with selenium-webdriver. MiniBrowser has no headless mode,
// so it runs on a private Xvfb display. Classic WebDriver reports no console
// events: the page is served with helpers.mjs's CONSOLE_HOOK first in <head>,
// which records console errors and warnings, uncaught errors and failed loads.
// The suite itself is in helpers.mjs.
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import os from "node:os";
import path from "node:path";
import { Builder, By } from "selenium-webdriver";
import { CONSOLE_HOOK, poll, serveWithScript, smokeTests } from "./helpers.mjs";

const DRIVER = process.env.WEBKIT_WEBDRIVER ?? "/usr/bin/WebKitWebDriver";
const MINIBROWSER = process.env.WEBKIT_MINIBROWSER ?? "/usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/MiniBrowser";
const XVFB = process.env.XVFB ?? "/usr/bin/Xvfb";

/** Starts Xvfb on a free display; resolves to { display, proc }. */
function startXvfb() {
  const proc = spawn(XVFB, ["-displayfd", "3", "-screen", "0", "1600x1200x24", "-nolisten", "tcp"], { stdio: ["ignore", "ignore", "pipe", "pipe"] });
  let err = "";
  proc.stderr.on("data", (b) => (err += b));
  return new Promise((resolve, reject) => {
    let out = "";
    proc.stdio[3].on("data", (b) => {
      out += b;
      if (out.includes("\n")) resolve({ display: `:${out.trim()}`, proc });
    });
    proc.on("error", reject);
    proc.on("exit", (code) => reject(new Error(`Xvfb exited (${code}): ${err}`)));
  });
}

function freePort() {
  return new Promise((resolve) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

function stop(proc) {
  if (proc && proc.exitCode === null && proc.signalCode === null) {
    const exited = new Promise((r) => proc.once("exit", r));
    proc.kill();
    return exited;
  }
}

smokeTests("webkit", async () => {
  for (const [file, pkg] of [[DRIVER, "webkit2gtk-driver"], [MINIBROWSER, "libwebkit2gtk-4.1-0"], [XVFB, "xvfb"]]) {
    if (!existsSync(file)) throw new Error(`${file} is missing: run scripts/setup.sh (apt-get install ${pkg})`);
  }
  const xvfb = await startXvfb();
  // WebKitGTK answers prefers-reduced-motion from GTK's gtk-enable-animations.
  const config = mkdtempSync(path.join(os.tmpdir(), "attnkit-webkit-"));
  mkdirSync(path.join(config, "gtk-3.0"));
  writeFileSync(path.join(config, "gtk-3.0", "settings.ini"), "[Settings]\ngtk-enable-animations=false\n");
  const port = await freePort();
  const env = { ...process.env, DISPLAY: xvfb.display, XDG_CONFIG_HOME: config, NO_AT_BRIDGE: "1" };
  const driver = spawn(DRIVER, [`--port=${port}`], { env, stdio: ["ignore", "ignore", "pipe"] });
  let log = "";
  driver.stderr.on("data", (b) => (log += b));
  const server = `http://127.0.0.1:${port}`;
  let d;
  try {
    await poll(async () => (await fetch(`${server}/status`)).ok, `WebKitWebDriver on port ${port}`, 10000, 100);
    d = await new Builder().usingServer(server).withCapabilities({
      browserName: "MiniBrowser",
      "webkitgtk:browserOptions": { binary: MINIBROWSER, args: ["--automation"] },
    }).build();
  } catch (e) {
    await stop(driver);
    await stop(xvfb.proc);
    throw new Error(`${e.message}\nWebKitWebDriver said: ${log}`);
  }
  const caps = await d.getCapabilities();
  // The window includes MiniBrowser's toolbar: size it so the page's viewport is width x height.
  async function viewport(width, height) {
    await d.manage().window().setRect({ width, height });
    const [w, h] = await d.executeScript("return [innerWidth, innerHeight]");
    if (w !== width || h !== height) await d.manage().window().setRect({ width: 2 * width - w, height: 2 * height - h });
  }
  await viewport(1280, 800);
  return {
    label: `WebKitGTK ${caps.get("browserVersion")} (MiniBrowser, WebKitWebDriver)`,
    goto: (url) => d.get(url),
    evaluate: (fn, arg) => d.executeScript(fn, arg),
    click: async (sel) => (await d.findElement(By.css(sel))).click(),
    select: async (sel, value) => (await d.findElement(By.css(`${sel} option[value="${value}"]`))).click(),
    viewport,
    screenshot: async (file) => writeFileSync(file, Buffer.from(await d.takeScreenshot(), "base64")),
    problems: () => d.executeScript("return window.__problems || ['the console hook is missing']"),
    close: async () => {
      await d.quit().catch(() => {});
      await stop(driver);
      await stop(xvfb.proc);
      rmSync(config, { recursive: true, force: true });
    },
  };
}, {
  serveDist: (dir) => serveWithScript(dir, CONSOLE_HOOK),
});
