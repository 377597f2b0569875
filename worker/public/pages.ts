import type { Context } from "hono";
import { accepts } from "hono/accepts";
import { html } from "hono/html";
import type { HtmlEscapedString } from "hono/utils/html";

/**
 * The pages a person sees when opening a public link in a browser (the decisions' "Browsers on
 * /gc"). No script at all: the pending result page refreshes itself with a meta refresh, so the
 * pages work under the strictest Content-Security-Policy.
 */

/** True when the caller's Accept prefers HTML (a browser navigating), not JSON or anything. */
export function prefersHtml(c: Context): boolean {
  return accepts(c, { header: "Accept", supports: ["application/json", "text/html"], default: "application/json" }) === "text/html";
}

/** Pages may style themselves and show nothing else: no scripts, frames, forms or plugins. */
export const PAGE_HEADERS = {
  "Content-Type": "text/html; charset=utf-8",
  "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  "X-Content-Type-Options": "nosniff",
  "Referrer-Policy": "no-referrer",
  "Cache-Control": "no-store",
} as const;

const STYLE = `body{font:16px/1.5 system-ui,sans-serif;max-width:40rem;margin:3rem auto;padding:0 1rem;color:#1b1b1b}
h1{font-size:1.4rem}code,a{word-break:break-all}.muted{color:#555}`;

function page(title: string, body: HtmlEscapedString | Promise<HtmlEscapedString>, refreshSeconds?: number) {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
${refreshSeconds ? html`<meta http-equiv="refresh" content="${refreshSeconds}">` : ""}
<title>${title}</title>
<style>${STYLE}</style>
</head>
<body>
${body}
</body>
</html>`;
}

/** 201 to a browser's call: the function is queued; the result link, public for 5 minutes. */
export function callPage(taskId: string, publicMinutes: number) {
  const link = `/gc/${taskId}/result`;
  return page(
    "Function called",
    html`<main>
<h1>The function is queued</h1>
<p>Task <code>${taskId}</code> will run shortly. Its result will be at:</p>
<p><a id="result-link" href="${link}">${link}</a></p>
<p class="muted">Anyone with this link can read the result for ${publicMinutes} minutes after the call; after that only its owner, with a token. Reloading this page calls the function again.</p>
</main>`,
  );
}

/** 404 to a browser while the task is pending or running: refreshes itself until the result is there. */
export function pendingPage(taskId: string, status: "pending" | "running", refreshSeconds: number) {
  return page(
    "Result not ready",
    html`<main>
<h1>Not ready yet</h1>
<p>Task <code>${taskId}</code> is <strong id="task-status">${status}</strong>. This page refreshes itself every ${refreshSeconds} second${refreshSeconds === 1 ? "" : "s"} until the function's response is here.</p>
</main>`,
    refreshSeconds,
  );
}
