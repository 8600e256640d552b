/**
 * Content types for outputs (stored as S3 `Content-Type`). The manifest's
 * `media_type` wins; otherwise the extension decides. Text types carry
 * `charset=utf-8` so browsers do not guess the encoding of served files.
 */

/** Media type of generated HTML documents. */
export const HTML_MEDIA_TYPE = "text/html; charset=utf-8";
const FALLBACK_MEDIA_TYPE = "application/octet-stream";

const BY_EXTENSION: Readonly<Record<string, string>> = {
  html: HTML_MEDIA_TYPE,
  htm: HTML_MEDIA_TYPE,
  css: "text/css; charset=utf-8",
  js: "text/javascript; charset=utf-8",
  mjs: "text/javascript; charset=utf-8",
  json: "application/json",
  map: "application/json",
  txt: "text/plain; charset=utf-8",
  csv: "text/csv; charset=utf-8",
  tsv: "text/tab-separated-values; charset=utf-8",
  md: "text/markdown; charset=utf-8",
  markdown: "text/markdown; charset=utf-8",
  xml: "application/xml",
  rss: "application/rss+xml",
  atom: "application/atom+xml",
  svg: "image/svg+xml",
  png: "image/png",
  jpg: "image/jpeg",
  jpeg: "image/jpeg",
  gif: "image/gif",
  webp: "image/webp",
  avif: "image/avif",
  ico: "image/vnd.microsoft.icon",
  pdf: "application/pdf",
  zip: "application/zip",
  gz: "application/gzip",
  wasm: "application/wasm",
  woff: "font/woff",
  woff2: "font/woff2",
  ttf: "font/ttf",
  otf: "font/otf",
  mp4: "video/mp4",
  webm: "video/webm",
  mp3: "audio/mpeg",
  wav: "audio/wav",
};

/**
 * The media type to store for an output at `path`: `declared` (the manifest's
 * `media_type`) when given, else by the final extension (case-insensitive), else
 * `application/octet-stream`.
 */
export function mediaTypeFor(path: string, declared?: string): string {
  if (declared !== undefined && declared !== "") return declared;
  const name = path.slice(path.lastIndexOf("/") + 1);
  const dot = name.lastIndexOf(".");
  if (dot < 0) return FALLBACK_MEDIA_TYPE;
  return BY_EXTENSION[name.slice(dot + 1).toLowerCase()] ?? FALLBACK_MEDIA_TYPE;
}
