import { ok, type ApiClient } from "./api-client.js";

/** Uploads a function's zip (POST /v1/build/{id}, amd64) and answers the new build's id. */
export async function uploadBuild(api: ApiClient, functionId: string, zip: Uint8Array): Promise<string> {
  const { id } = await ok(
    api.POST("/v1/build/{id}", {
      params: { path: { id: functionId }, query: { arch: "amd64" } },
      // The document types the zip as any bytes; sent as they are, not as JSON.
      body: zip,
      bodySerializer: (b) => b,
      headers: { "content-type": "application/octet-stream" },
    }),
  );
  return id;
}
