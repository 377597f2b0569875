import { html, raw } from "hono/html";
import type { HtmlEscapedString } from "hono/utils/html";
import { consoleMessage } from "./hints.js";

export type Html = HtmlEscapedString | Promise<HtmlEscapedString>;

export interface PageContext {
  csrf: string;
  /** The nav entry to mark as current. */
  section?: "functions" | "builds" | "tasks" | "endpoints" | "triggers" | "schedules" | "usage" | "tags";
}

const NAV: [NonNullable<PageContext["section"]>, string, string][] = [
  ["functions", "/console", "Functions"],
  ["builds", "/console/builds", "Builds"],
  ["tasks", "/console/tasks", "Tasks"],
  ["endpoints", "/console/endpoints", "Endpoints"],
  ["triggers", "/console/triggers", "Triggers"],
  ["schedules", "/console/schedules", "Schedules"],
  ["usage", "/console/usage", "Usage"],
  ["tags", "/console/tags", "Tags"],
];

/** Inline: one request brings the page; the stylesheet is about 2 KB. */
const STYLE = `
*{box-sizing:border-box}body{margin:0;font:15px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif;color:#17202a;background:#f6f7f9}
a{color:#0b57d0}a:focus-visible,button:focus-visible,input:focus-visible,select:focus-visible,textarea:focus-visible,summary:focus-visible{outline:3px solid #f59e0b;outline-offset:2px}
.skip{position:absolute;left:-999px}.skip:focus{left:1rem;top:1rem;background:#fff;padding:.5rem;z-index:9}
header{background:#17202a;color:#fff;padding:.5rem 1rem;display:flex;flex-wrap:wrap;gap:.25rem 1rem;align-items:center}
header strong{margin-right:.5rem}header nav{display:flex;flex-wrap:wrap;gap:.25rem .75rem;flex:1}
header a{color:#e6edf5;text-decoration:none;padding:.25rem 0}header a[aria-current=page]{color:#fff;border-bottom:2px solid #f59e0b}
header form{margin:0}main{max-width:72rem;margin:0 auto;padding:1rem}
h1{font-size:1.5rem;margin:.5rem 0 1rem}h2{font-size:1.15rem;margin:1.5rem 0 .5rem}
.card{background:#fff;border:1px solid #d5dbe3;border-radius:8px;padding:1rem;margin:0 0 1rem}
.scroll{overflow-x:auto}table{border-collapse:collapse;width:100%;background:#fff}
th,td{text-align:left;padding:.4rem .6rem;border-bottom:1px solid #e3e7ed;vertical-align:top}th{font-weight:600;background:#eef1f5}
label{display:block;font-weight:600;margin:.5rem 0 .2rem}.hint{font-weight:400;color:#4a5563;font-size:.9em}
input,select,textarea{font:inherit;padding:.4rem;border:1px solid #8a96a3;border-radius:4px;max-width:100%}
input[type=text],input[type=number],textarea,select.wide{width:28rem}textarea{min-height:5rem}
button,.button{font:inherit;padding:.4rem .9rem;border-radius:4px;border:1px solid #0b57d0;background:#0b57d0;color:#fff;cursor:pointer;text-decoration:none;display:inline-block}
button.secondary{background:#fff;color:#0b57d0}button.danger{background:#b3261e;border-color:#b3261e}
.row{display:flex;flex-wrap:wrap;gap:.5rem;align-items:center}.row form{margin:0}
.tag{display:inline-block;padding:0 .5rem;border-radius:999px;font-size:.85em;color:#fff;margin:0 .25rem .25rem 0}
.status{font-weight:600}.ok{color:#146c2e}.bad{color:#b3261e}.wait{color:#8a5a00}
.error{border:2px solid #b3261e;background:#fdecea;padding:.75rem;border-radius:6px;margin:0 0 1rem}
.notice{border:2px solid #146c2e;background:#e8f5ec;padding:.75rem;border-radius:6px;margin:0 0 1rem}
pre{background:#0f1720;color:#e6edf5;padding:.75rem;border-radius:6px;overflow:auto;max-height:24rem;white-space:pre-wrap;word-break:break-word}
.drop{border:2px dashed #8a96a3;border-radius:8px;padding:1rem;text-align:center;background:#fbfcfd}.drop.over{border-color:#0b57d0;background:#eef4ff}
progress{width:100%}dl{display:grid;grid-template-columns:max-content 1fr;gap:.25rem 1rem}dt{font-weight:600}dd{margin:0}
svg text{font:12px system-ui,sans-serif}@media (max-width:40rem){input[type=text],input[type=number],textarea,select.wide{width:100%}}
`;

export function layout(title: string, ctx: PageContext, body: Html, script = false): Html {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="csrf-token" content="${ctx.csrf}">
<title>${title} · gcfaas console</title>
<style>${raw(STYLE)}</style>
${script ? html`<script src="/console/assets/console.js" defer></script>` : ""}
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header>
<strong>gcfaas</strong>
<nav aria-label="Console">
${NAV.map(([key, href, label]) => html`<a href="${href}"${key === ctx.section ? raw(' aria-current="page"') : ""}>${label}</a>`)}
<a href="/docs/">API reference</a>
</nav>
<form method="post" action="/console/signout"><input type="hidden" name="_csrf" value="${ctx.csrf}"><button class="secondary" type="submit">Sign out</button></form>
</header>
<main id="main">
${body}
</main>
</body>
</html>`;
}

/** A form's hidden CSRF field. */
export const csrfField = (ctx: PageContext) => html`<input type="hidden" name="_csrf" value="${ctx.csrf}">`;

/** The API's refusal, with its per-field details, shown above the form that caused it. */
export function errorBox(error: { code: string; message: string; details?: { field: string; message: string }[] } | undefined): Html {
  if (!error) return html``;
  return html`<div class="error" role="alert"><strong>${consoleMessage(error)}</strong>${
    error.details?.length ? html`<ul>${error.details.map((d) => html`<li><code>${d.field}</code>: ${d.message}</li>`)}</ul>` : ""
  } <span class="hint">(${error.code})</span></div>`;
}

export function notice(text: string | undefined): Html {
  return text ? html`<div class="notice" role="status">${text}</div>` : html``;
}

export function tagChips(tags: { id: string; name: string; color: string }[]): Html {
  return html`${tags.map((t) => html`<span class="tag" style="background:${safeColor(t.color)}">${t.name}</span>`)}`;
}

/** Colours come from the API (#rrggbb, validated there); anything else renders grey. */
export const safeColor = (c: string) => (/^#[0-9a-f]{6}$/i.test(c) ? c : "#808080");

export function buildStatus(status: string | null | undefined): Html {
  if (!status) return html`<span class="hint">never built</span>`;
  const cls = status === "SUCCESS" ? "ok" : status === "FAILED" ? "bad" : "wait";
  return html`<span class="status ${cls}">${status}</span>`;
}

export function taskStatus(status: number, progress: number): Html {
  if (status === 0) return html`<span class="status wait">${progress > 0 ? "running" : "pending"}</span>`;
  return html`<span class="status ${status < 400 ? "ok" : "bad"}">${status}</span>`;
}

export const isoOf = (t: number | null | undefined) => (t ? new Date(t).toISOString().replace("T", " ").slice(0, 19) + " UTC" : "—");
