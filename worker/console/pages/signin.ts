import { html } from "hono/html";
import { lookupToken } from "../../middleware/auth.js";
import type { AppEnv } from "../../env.js";
import type { ConsoleApp, ConsoleContext } from "../context.js";
import { endSession, sameOriginChange, sessionToken, startSession } from "../session.js";
import { errorBox, type Html } from "../layout.js";

const STYLE = "body{font:16px/1.5 system-ui,sans-serif;max-width:26rem;margin:4rem auto;padding:0 1rem;color:#17202a}label{display:block;font-weight:600;margin:.5rem 0 .25rem}input{font:inherit;width:100%;padding:.5rem;border:1px solid #8a96a3;border-radius:4px}button{font:inherit;margin-top:1rem;padding:.5rem 1rem;border:0;border-radius:4px;background:#0b57d0;color:#fff}.error{border:2px solid #b3261e;background:#fdecea;padding:.75rem;border-radius:6px}input:focus-visible,button:focus-visible{outline:3px solid #f59e0b;outline-offset:2px}";

function page(next: string, error?: { code: string; message: string }): Html {
  return html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Sign in · gcfaas console</title><style>${STYLE}</style></head>
<body><main>
<h1>gcfaas console</h1>
${errorBox(error)}
<form method="post" action="/console/signin">
<input type="hidden" name="next" value="${next}">
<label for="token">Access token</label>
<input id="token" name="token" type="password" autocomplete="current-password" required autofocus>
<p><small>The token your operator gave you (the one you use with curl or the CLI). It is kept in an HttpOnly cookie of this console only.</small></p>
<button type="submit">Sign in</button>
</form>
</main></body></html>`;
}

/** Only paths of the console itself: a sign-in link must not send anyone elsewhere. */
const safeNext = (next: string | undefined) => (next && /^\/console(\/[A-Za-z0-9/_.-]*)?$/.test(next) ? next : "/console");

export function registerSignIn(app: ConsoleApp) {
  app.get("/signin", (c) => c.html(page(safeNext(c.req.query("next")))));

  app.post("/signin", async (c) => {
    const form = await c.req.parseBody();
    const token = typeof form.token === "string" ? form.token.trim() : "";
    const next = safeNext(typeof form.next === "string" ? form.next : undefined);
    // Signing in changes no record, but a foreign page must not sign a person into its account.
    const origin = c.req.header("origin");
    if ((origin && origin !== new URL(c.req.url).origin) || c.req.header("sec-fetch-site") === "cross-site")
      return c.html(page(next, { code: "forbidden", message: "sign in from the console's own page" }), 403);
    const row = token ? await lookupToken(c as unknown as { var: AppEnv["Variables"] }, token, "user") : undefined;
    if (!row?.accountId) return c.html(page(next, { code: "unauthorized", message: "this token is not a valid access token" }), 401);
    startSession(c as never, token);
    return c.redirect(next, 303);
  });

  app.post("/signout", async (c: ConsoleContext) => {
    const token = sessionToken(c as never);
    const form = await c.req.parseBody();
    if (token && !(await sameOriginChange(c as never, token, typeof form._csrf === "string" ? form._csrf : undefined)))
      return c.text("refused: this change did not come from the console's own pages", 403);
    endSession(c as never);
    return c.redirect("/console/signin", 303);
  });
}

