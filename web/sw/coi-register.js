// Makes the page cross-origin isolated where its host sends no COOP/COEP headers: registers
// coi-sw.js (beside this file), which adds them, and reloads the page once so that the
// service worker serves it. Nothing happens where the page is isolated already, where the
// browser has no service workers (e.g. plain http on a host other than localhost), or after
// one reload that did not isolate it (the page then trains on one thread and says why).
(() => {
  const KEY = "attnkit-coi-reloaded";
  if (window.crossOriginIsolated) sessionStorage.removeItem(KEY);
  if (window.crossOriginIsolated || !window.isSecureContext || !navigator.serviceWorker) return;
  const reloaded = sessionStorage.getItem(KEY) === "1";
  const reload = () => {
    if (reloaded) return;
    sessionStorage.setItem(KEY, "1");
    location.reload();
  };
  const url = new URL("coi-sw.js", document.currentScript.src);
  navigator.serviceWorker.register(url).then(
    (registration) => {
      if (registration.active && navigator.serviceWorker.controller) {
        // Served by the worker, yet not isolated: a reload gets its headers (once).
        reload();
        return;
      }
      const worker = registration.installing ?? registration.waiting ?? registration.active;
      if (worker?.state === "activated") return reload();
      worker?.addEventListener("statechange", () => {
        if (worker.state === "activated") reload();
      });
    },
    (err) => console.info(`attnkit: no service worker, so one thread (${err})`),
  );
})();
