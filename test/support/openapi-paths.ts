/** An OpenAPI 3.1 document's operations and paths, as the contract and document tests read them. */

export type Schema = Record<string, unknown>;
interface MediaType {
  schema?: Schema;
}
export interface HeaderObject {
  $ref?: string;
  required?: boolean;
  schema?: Schema;
}
interface ResponseObject {
  description: string;
  content?: Record<string, MediaType>;
  /** A header object, or a `$ref` to one in components.headers. */
  headers?: Record<string, HeaderObject>;
}
export interface Parameter {
  name: string;
  in: "path" | "query" | "header";
  required?: boolean;
  description?: string;
  schema: Schema;
}
export interface OperationObject {
  operationId: string;
  security?: Record<string, string[]>[];
  parameters?: Parameter[];
  requestBody?: { required?: boolean; content: Record<string, MediaType> };
  responses: Record<string, ResponseObject>;
}
export interface Document {
  paths: Record<string, Record<string, OperationObject>>;
  components: { schemas: Record<string, Schema>; headers?: Record<string, unknown>; securitySchemes: Record<string, unknown> };
}
export interface DocumentedOperation {
  method: string;
  path: string;
  op: OperationObject;
}

export const METHODS = ["get", "post", "put", "patch", "delete", "options"] as const;

export function operationsOf(doc: Pick<Document, "paths">): DocumentedOperation[] {
  return Object.entries(doc.paths).flatMap(([path, item]) => Object.entries(item).map(([method, op]) => ({ method, path, op })));
}

/**
 * The document's paths that serve `method` on a path like this one: an OpenAPI path, a Hono route
 * (`:id`) or a concrete one, where `{id}` and `:id` stand for any record.
 */
export function documentedFor(doc: Pick<Document, "paths">, path: string, method: string): string[] {
  const concrete = path.replace(/\{\w+\}|:\w+/g, "x");
  return Object.entries(doc.paths)
    .filter(([p, item]) => item[method] && new RegExp(`^${p.replace(/\{\w+\}/g, "[^/]+")}$`).test(concrete))
    .map(([p]) => p);
}

/** The security scheme an operation needs, or undefined when it may be called without one. */
export function schemeOf(op: OperationObject): string | undefined {
  const options = op.security ?? [];
  if (options.length === 0 || options.some((o) => Object.keys(o).length === 0)) return undefined;
  return Object.keys(options[0]!)[0];
}

