// Debian's Chromium, headless, with nothing that reaches the network: the one
// launch of every Chromium test (tests/js and tests/browser). CHROMIUM may
// point at another binary.
export const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";
export const ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];
