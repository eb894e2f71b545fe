// attnkit's page on a static host that cannot send headers: this service worker answers the
// page's same-origin requests with the headers that make it cross-origin isolated
// (Cross-Origin-Opener-Policy: same-origin, Cross-Origin-Embedder-Policy: require-corp), so
// that the browser gives it SharedArrayBuffer and the training workers their threads.
// Registered by coi-register.js; the build holds both only with ATTNKIT_WEB_SW=1.
self.addEventListener("install", () => self.skipWaiting());
self.addEventListener("activate", (e) => e.waitUntil(self.clients.claim()));

self.addEventListener("fetch", (e) => {
  const request = e.request;
  // Other origins' answers pass untouched (COEP lets through those sent with CORS).
  if (new URL(request.url).origin !== self.location.origin) return;
  // A request the browser may only answer from its cache cannot be fetched again here.
  if (request.cache === "only-if-cached" && request.mode !== "same-origin") return;
  e.respondWith(
    fetch(request).then((response) => {
      if (response.status === 0) return response;
      const headers = new Headers(response.headers);
      headers.set("Cross-Origin-Opener-Policy", "same-origin");
      headers.set("Cross-Origin-Embedder-Policy", "require-corp");
      return new Response(response.body, {
        status: response.status,
        statusText: response.statusText,
        headers,
      });
    }),
  );
});
