// Copies Swagger UI from an installed swagger-ui-dist into the folder the
// server embeds (http/docs), so that the documentation page needs nothing
// from outside the server:
//
//   - the bundle and the style sheet, without their source-map comments
//     (a browser's developer tools would ask the server for the maps);
//   - the images the style sheet inlines as data: URLs, written as files
//     and referred to by name, so that the page's Content-Security-Policy
//     can allow images from 'self' only;
//   - the OAuth redirect page and its script, and the licences.
//
// Usage: node build.mjs <swagger-ui-dist folder> <output folder>
import { readFileSync, writeFileSync, readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { createHash } from "node:crypto";

const [src, out] = process.argv.slice(2);
if (!src || !out) {
  console.error("usage: node build.mjs <swagger-ui-dist folder> <output folder>");
  process.exit(2);
}
const version = JSON.parse(readFileSync(join(src, "package.json"), "utf8")).version;

// Files of an earlier build go; the page's own files (index.html, init.js,
// page.css) stay.
for (const f of readdirSync(out)) {
  if (f.startsWith("swagger-ui") || f.startsWith("ui-") || f.startsWith("oauth2-redirect") ||
      ["LICENSE", "NOTICE", "favicon.png"].includes(f)) {
    rmSync(join(out, f));
  }
}

const stripMap = (s) => s.replace(/\n?\/[/*]# sourceMappingURL=[^\n]*\n?$/, "\n");

const ext = { "image/svg+xml": "svg", "image/png": "png", "image/jpeg": "jpg", "image/gif": "gif" };
let n = 0;
const css = stripMap(readFileSync(join(src, "swagger-ui.css"), "utf8")).replace(
  /url\((["']?)data:([a-z+/]+)((?:;[a-z0-9=-]+)*),(.*?)\1\)/g,
  (all, quote, type, params, data) => {
    if (!ext[type]) throw new Error("unknown inlined type " + type);
    let bytes;
    if (params.includes(";base64")) {
      bytes = Buffer.from(data, "base64");
    } else {
      // The CSS string escapes quotes; the data is percent-encoded.
      bytes = Buffer.from(decodeURIComponent(data.replace(/\\(["'\\])/g, "$1")), "utf8");
    }
    // Named by content: the same image inlined twice is one file.
    const name = `ui-${createHash("sha256").update(bytes).digest("hex").slice(0, 12)}.${ext[type]}`;
    n++;
    writeFileSync(join(out, name), bytes);
    return `url(${name})`;
  });
if (css.includes("data:")) throw new Error("swagger-ui.css still has data: URLs");
writeFileSync(join(out, "swagger-ui.css"), css);

writeFileSync(join(out, "swagger-ui-bundle.js"), stripMap(readFileSync(join(src, "swagger-ui-bundle.js"), "utf8")));
for (const [from, to] of [
  ["swagger-ui-bundle.js.LICENSE.txt", "swagger-ui-bundle.js.LICENSE.txt"],
  ["oauth2-redirect.html", "oauth2-redirect.html"],
  ["oauth2-redirect.js", "oauth2-redirect.js"],
  ["favicon-32x32.png", "favicon.png"],
  ["LICENSE", "LICENSE"],
  ["NOTICE", "NOTICE"],
]) {
  writeFileSync(join(out, to), readFileSync(join(src, from)));
}
console.log(`swagger-ui-dist ${version}: ${n} inlined images written as files`);
