// The web page (web/dist) in WebKit, Safari's engine: Debian's WebKitGTK
// MiniBrowser, driven by WebKitWebDriver (package webkit2gtk-driver) over
// classic WebDriver with selenium-webdriver. MiniBrowser has no headless mode,
// so it runs on a private Xvfb display. Classic WebDriver reports no console
// events: the page is served with lib/server.mjs's CONSOLE_HOOK first in <head>,
// which records console errors and warnings, uncaught errors and failed loads.
// If MiniBrowser dies mid-suite, the test it died in is reported with what
// MiniBrowser and the driver printed, and runs once more in a new browser.
// A browser for each of the five suites. The smoke steps are in lib/smoke.mjs, the Train view's in
// lib/smoke-train.mjs, the Language view's in lib/smoke-language.mjs, the GPT-2 view's in
// lib/smoke-gpt2.mjs, threads on an isolated page in lib/smoke-threads.mjs.
import { execFileSync, spawn } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { createServer } from "node:net";
import path from "node:path";
import { Builder, By } from "selenium-webdriver";
import { root } from "./lib/paths.mjs";
import { CONSOLE_HOOK, serve } from "./lib/server.mjs";
import { smokeTests, useDriver } from "./lib/smoke.mjs";
import { languageSmoke } from "./lib/smoke-language.mjs";
import { gpt2Smoke } from "./lib/smoke-gpt2.mjs";
import { threadsSmoke } from "./lib/smoke-threads.mjs";
import { trainSmoke } from "./lib/smoke-train.mjs";
import { poll } from "./lib/wait.mjs";

const DRIVER = process.env.WEBKIT_WEBDRIVER ?? "/usr/bin/WebKitWebDriver";
const MINIBROWSER =
  process.env.WEBKIT_MINIBROWSER ?? "/usr/lib/x86_64-linux-gnu/webkit2gtk-4.1/MiniBrowser";
const XVFB = process.env.XVFB ?? "/usr/bin/Xvfb";

/**
 * Starts Xvfb on a free display; resolves to { display, proc }. Without the
 * MIT-SHM extension: clients then send images over the socket instead of
 * attaching SysV shared memory, which containers may restrict (and GTK treats
 * a failed X request as fatal).
 */
function startXvfb() {
  const proc = spawn(
    XVFB,
    [
      "-displayfd",
      "3",
      "-screen",
      "0",
      "1600x1200x24",
      "-nolisten",
      "tcp",
      "-extension",
      "MIT-SHM",
    ],
    { stdio: ["ignore", "ignore", "pipe", "pipe"] },
  );
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

/** gdb's backtrace of a MiniBrowser core dump, or why there is none. */
function backtrace(core) {
  try {
    const out = execFileSync("gdb", ["-batch", "-ex", "bt 30", MINIBROWSER, core], {
      encoding: "utf8",
      timeout: 120000,
      stdio: ["ignore", "pipe", "pipe"],
    });
    return out
      .split("\n")
      .filter((l) => !/^\[New LWP|^\[Thread debugging|^Using host libthread_db/.test(l))
      .join("\n");
  } catch (e) {
    return `gdb: ${e.message}`;
  }
}

/** The last `n` lines of `text`, indented, or "(nothing)". */
function tail(text, n = 30) {
  const lines = text.trimEnd().split("\n").slice(-n);
  return lines[0] ? lines.map((l) => `    ${l}`).join("\n") : "    (nothing)";
}

async function openWebKit() {
  for (const [file, pkg] of [
    [DRIVER, "webkit2gtk-driver"],
    [MINIBROWSER, "libwebkit2gtk-4.1-0"],
    [XVFB, "xvfb"],
  ]) {
    if (!existsSync(file))
      throw new Error(`${file} is missing: run scripts/setup.sh (apt-get install ${pkg})`);
  }
  // WebKitGTK answers prefers-reduced-motion from GTK's gtk-enable-animations.
  // In build/, not the system's temporary folder, which may be mounted noexec
  // (the folder holds the script that starts MiniBrowser).
  mkdirSync(path.join(root, "build"), { recursive: true });
  const dir = mkdtempSync(path.join(root, "build", "webkit-"));
  mkdirSync(path.join(dir, "gtk-3.0"));
  writeFileSync(
    path.join(dir, "gtk-3.0", "settings.ini"),
    "[Settings]\ngtk-enable-animations=false\n",
  );
  // WebKitWebDriver starts MiniBrowser through this script, which keeps what
  // MiniBrowser prints, how it exited and its core dump (where the kernel
  // writes them to the working directory): the report if it dies mid-suite.
  const browserLog = path.join(dir, "minibrowser.log");
  const wrapper = path.join(dir, "minibrowser.sh");
  writeFileSync(
    wrapper,
    `#!/bin/sh
cd "$(dirname "$ATTNKIT_BROWSER_LOG")" && ulimit -c unlimited 2>/dev/null
"$ATTNKIT_MINIBROWSER" "$@" >>"$ATTNKIT_BROWSER_LOG" 2>&1 &
pid=$!
trap 'kill $pid' TERM INT
wait $pid
status=$?
echo "MiniBrowser (pid $pid) exited with status $status" >>"$ATTNKIT_BROWSER_LOG"
exit $status
`,
    { mode: 0o755 },
  );

  let xvfb, driver, driverLog, d;
  async function launch() {
    xvfb = await startXvfb();
    xvfb.exited = null;
    xvfb.proc.on("exit", (code, signal) => (xvfb.exited = signal ?? code));
    const port = await freePort();
    const env = {
      ...process.env,
      DISPLAY: xvfb.display,
      XDG_CONFIG_HOME: dir,
      NO_AT_BRIDGE: "1",
      ATTNKIT_MINIBROWSER: MINIBROWSER,
      ATTNKIT_BROWSER_LOG: browserLog,
    };
    driver = spawn(DRIVER, [`--port=${port}`], { env, stdio: ["ignore", "ignore", "pipe"] });
    driverLog = "";
    driver.stderr.on("data", (b) => (driverLog += b));
    const server = `http://127.0.0.1:${port}`;
    try {
      await poll(
        async () => (await fetch(`${server}/status`)).ok,
        `WebKitWebDriver on port ${port}`,
        10000,
        100,
      );
      d = await new Builder()
        .usingServer(server)
        .withCapabilities({
          browserName: "MiniBrowser",
          "webkitgtk:browserOptions": { binary: wrapper, args: ["--automation"] },
        })
        .build();
    } catch (e) {
      await shutdown();
      throw new Error(`${e.message}\nWebKitWebDriver said: ${driverLog}`);
    }
    await viewport(1280, 800);
  }
  async function shutdown() {
    await d?.quit().catch(() => {});
    d = undefined;
    await stop(driver);
    await stop(xvfb?.proc);
  }
  // The window includes MiniBrowser's toolbar: size it so the page's viewport is width x height.
  async function viewport(width, height) {
    await d.manage().window().setRect({ width, height });
    const [w, h] = await d.executeScript("return [innerWidth, innerHeight]");
    if (w !== width || h !== height)
      await d
        .manage()
        .window()
        .setRect({ width: 2 * width - w, height: 2 * height - h });
  }
  /** Whether MiniBrowser still answers WebDriver (a dead session throws NoSuchSessionError). */
  async function alive() {
    try {
      await d.executeScript("return 1");
      return true;
    } catch {
      return false;
    }
  }

  await launch();
  const caps = await d.getCapabilities();
  return {
    label: `WebKitGTK ${caps.get("browserVersion")} (MiniBrowser, WebKitWebDriver)`,
    goto: (url) => d.get(url),
    evaluate: (fn, arg) => d.executeScript(fn, arg),
    click: async (sel) => (await d.findElement(By.css(sel))).click(),
    // As a person scrolls the settings panel to a select before choosing: WebKitWebDriver
    // does not scroll a nested scroll container to bring an <option> into view.
    select: async (sel, value) => {
      await d.executeScript(
        (s) => document.querySelector(s)?.scrollIntoView({ block: "center" }),
        sel,
      );
      await (await d.findElement(By.css(`${sel} option[value="${value}"]`))).click();
    },
    viewport,
    screenshot: async (file) =>
      writeFileSync(file, Buffer.from(await d.takeScreenshot(), "base64")),
    problems: () => d.executeScript("return window.__problems || ['the console hook is missing']"),
    recover: async () => {
      if (await alive()) return null;
      const printed = () => (existsSync(browserLog) ? readFileSync(browserLog, "utf8") : "");
      await poll(
        async () => /exited with status/.test(printed()),
        "MiniBrowser's exit status",
        3000,
      ).catch(() => {});
      const cores = readdirSync(dir)
        .filter((f) => f.startsWith("core"))
        .map((f) => path.join(dir, f));
      const report = [
        `  Xvfb: ${xvfb.exited === null ? "running" : `exited (${xvfb.exited})`}`,
        `  MiniBrowser printed:\n${tail(printed())}`,
        `  WebKitWebDriver printed:\n${tail(driverLog)}`,
        ...cores.map(
          (core) => `  Backtrace from ${path.basename(core)}:\n${tail(backtrace(core), 40)}`,
        ),
      ].join("\n");
      for (const core of cores) rmSync(core, { force: true });
      await shutdown();
      rmSync(browserLog, { force: true });
      await launch();
      return report;
    },
    close: async () => {
      await shutdown();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

const options = { serveDist: (dir) => serve(dir, { script: CONSOLE_HOOK }) };
smokeTests(useDriver("webkit", openWebKit, options));
trainSmoke("webkit", openWebKit, options);
languageSmoke("webkit", openWebKit, options);
gpt2Smoke("webkit", openWebKit, options);
threadsSmoke("webkit", openWebKit, {
  serveDist: (dir) => serve(dir, { isolated: true, script: CONSOLE_HOOK }),
});
