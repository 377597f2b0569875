import { html } from "hono/html";
import type { Html } from "../layout.js";

export type InvokeOutcome =
  | { taskId: string; pending: true }
  | { taskId: string; pending: false; status: number; headers: [string, string][]; bytes: Uint8Array; log: string[] };

const TEXTUAL = /^(text\/|application\/(json|xml|javascript|x-www-form-urlencoded)|[^;]*\+(json|xml))/i;
const MAX_SHOWN = 64 * 1024;

/** The function's response as a person reads it: status, headers, the body (an image as an image) and the log. */
export function resultPanel(o: InvokeOutcome): Html {
  if (o.pending)
    return html`<div class="notice" role="status" id="invoke-result">Task <a href="/console/tasks/${o.taskId}">${o.taskId}</a> is still running after 30 s; its page shows the result when it is there.</div>`;
  const type = o.headers.find(([k]) => k === "content-type")?.[1] ?? "";
  let shown: Html;
  if (/^image\//i.test(type)) shown = html`<img src="/console/tasks/${o.taskId}/result" alt="The function's image response" style="max-width:100%">`;
  else if (TEXTUAL.test(type) || type === "")
    shown = html`<pre aria-label="Response body">${new TextDecoder().decode(o.bytes.subarray(0, MAX_SHOWN))}${o.bytes.length > MAX_SHOWN ? "\n…" : ""}</pre>`;
  else shown = html`<p>${o.bytes.length} bytes of <code>${type}</code> — <a href="/console/tasks/${o.taskId}/result" download>download</a></p>`;
  return html`<div id="invoke-result" role="status">
<h3 style="font-size:1rem">Response: <span class="status ${o.status < 400 ? "ok" : "bad"}">${o.status}</span> · task <a href="/console/tasks/${o.taskId}">${o.taskId}</a></h3>
<table><tbody>${o.headers.map(([k, v]) => html`<tr><th scope="row">${k}</th><td>${v}</td></tr>`)}</tbody></table>
${shown}
<h3 style="font-size:1rem">Log</h3><pre aria-label="Task log">${o.log.join("\n") || "(no log lines)"}</pre>
</div>`;
}
