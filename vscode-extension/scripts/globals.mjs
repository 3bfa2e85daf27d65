// The Node.js globals for eslint (avoids a dependency on the `globals` package).
const names = ["process", "console", "Buffer", "setTimeout", "clearTimeout", "setInterval",
  "clearInterval", "URL", "TextEncoder", "TextDecoder", "fetch", "AbortController",
  "structuredClone", "queueMicrotask", "performance"];
export default { node: Object.fromEntries(names.map((n) => [n, "readonly"])) };
