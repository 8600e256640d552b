/**
 * The inline stylesheet of rendered Markdown documents: one readable column on
 * desktop, full width on a phone, wide tables and code blocks scroll instead of
 * stretching the page, dark mode follows the reader's system. No external fonts
 * or requests. Changing it changes every generated output's bytes (and so
 * republishes them), so edit deliberately.
 */
export const DOCUMENT_STYLE = [
  ":root{color-scheme:light dark;--fg:#1f2328;--bg:#fff;--muted:#59636e;--line:#d1d9e0;--code:#f6f8fa;--link:#0969da}",
  "@media (prefers-color-scheme:dark){:root{--fg:#e6edf3;--bg:#0d1117;--muted:#9198a1;--line:#3d444d;--code:#161b22;--link:#4493f8}}",
  "*,*::before,*::after{box-sizing:border-box}",
  'body{margin:0;background:var(--bg);color:var(--fg);font:16px/1.6 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;-webkit-text-size-adjust:100%;text-size-adjust:100%}',
  "main{max-width:46rem;margin:0 auto;padding:1.5rem 1rem 3rem;overflow-wrap:break-word}",
  "h1,h2,h3,h4,h5,h6{line-height:1.25;margin:1.6em 0 .6em}",
  "h1{font-size:2em;margin-top:.5em}h2{font-size:1.5em;border-bottom:1px solid var(--line);padding-bottom:.3em}",
  "a{color:var(--link)}",
  "img,video{max-width:100%;height:auto}",
  'code,kbd,pre,samp{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,"Liberation Mono",monospace;font-size:.9em}',
  "code{background:var(--code);padding:.1em .3em;border-radius:4px}",
  "pre{background:var(--code);padding:1em;border-radius:6px;overflow-x:auto;line-height:1.45}",
  "pre code{background:none;padding:0}",
  "table{display:block;max-width:100%;overflow-x:auto;border-collapse:collapse;margin:1em 0}",
  "th,td{border:1px solid var(--line);padding:.4em .75em}",
  "th{background:var(--code)}",
  "blockquote{margin:1em 0;padding:0 1em;color:var(--muted);border-left:.25em solid var(--line)}",
  "hr{border:0;border-top:1px solid var(--line);margin:2em 0}",
  "@media print{main{max-width:none}a{color:inherit}}",
].join("\n");
