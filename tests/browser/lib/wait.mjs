// Waiting on a condition, for every driver (Playwright, WebDriver BiDi, classic WebDriver).

/** Calls `fn` until it returns something truthy; throws after `timeout` ms. */
export async function poll(fn, what, timeout = 15000, interval = 50) {
  const t0 = Date.now();
  for (;;) {
    const v = await fn().catch(() => undefined);
    if (v) return v;
    if (Date.now() - t0 > timeout)
      throw new Error(`timed out after ${timeout} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, interval));
  }
}
