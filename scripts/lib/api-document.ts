import { openApiDocument } from "../../worker/openapi/document.js";

/**
 * The module that declares the Worker's routes, each with its documentation (describeRoute). It is
 * imported by a computed name: its types are the Workers runtime's (tsconfig.json), which this
 * Node project does not load; at run time it needs nothing Node lacks.
 */
const APP_MODULE = "../../worker/app.js";

type App = Parameters<typeof openApiDocument>[0];

/** The document /v1/openapi.json serves, made by the same code from the same routes, without a Worker. */
export async function apiDocument(serverUrl?: string): Promise<ReturnType<typeof openApiDocument>> {
  const { createApp } = (await import(APP_MODULE)) as { createApp: () => App };
  return openApiDocument(createApp(), serverUrl);
}
