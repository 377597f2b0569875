import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { generateSync } from "json-schema-faker";

/**
 * Reads an OpenAPI 3.1 document as a contract: the operations it lists, inputs derived from their
 * schemas, and whether an answer (status, Content-Type, headers, body) is one the document allows.
 */

import { type Document, type DocumentedOperation, type Parameter, type Schema } from "./openapi-paths.js";

export * from "./openapi-paths.js";

export interface Answer {
  status: number;
  headers: Headers;
  body: Buffer;
}

export class Contract {
  private readonly ajv = new Ajv2020({ strict: false, allErrors: true });
  private readonly validators = new Map<Schema, ValidateFunction>();

  constructor(readonly doc: Document) {
    addFormats.default(this.ajv);
  }

  /** `#/components/<kind>/<name>` references made whole, for the validator and the generator alike. */
  deref<T extends object>(object: T): T {
    const ref = (object as { $ref?: unknown }).$ref;
    if (typeof ref !== "string") return object;
    const [, kind, name] = /^#\/components\/(\w+)\/(.+)$/.exec(ref) ?? [];
    const target = kind && name && (this.doc.components as unknown as Record<string, Record<string, T>>)[kind]?.[name];
    if (!target) throw new Error(`unresolvable $ref ${ref}`);
    return target;
  }

  private validator(schema: Schema): ValidateFunction {
    const whole = this.deref(schema);
    let v = this.validators.get(whole);
    if (!v) this.validators.set(whole, (v = this.ajv.compile(whole)));
    return v;
  }

  /** What is wrong with an answer to `op`, by the document; empty when nothing is. */
  problems(op: DocumentedOperation, answer: Answer): string[] {
    const { responses } = op.op;
    const documented = responses[String(answer.status)] ?? responses[`${String(answer.status)[0]}XX`] ?? responses.default;
    if (!documented) return [`status ${answer.status} is not documented (documented: ${Object.keys(responses).join(", ")}); body: ${answer.body.toString("utf8", 0, 300)}`];
    const found: string[] = [];
    for (const [name, ref] of Object.entries(documented.headers ?? {})) {
      const h = this.deref(ref);
      const value = answer.headers.get(name);
      if (value === null) {
        if (h.required) found.push(`header ${name} is missing`);
      } else if (h.schema && !this.validator(h.schema)(value)) found.push(`header ${name}: ${this.ajv.errorsText(this.validator(h.schema).errors)}`);
    }
    const type = answer.headers.get("content-type")?.split(";")[0]!.trim().toLowerCase();
    const content = documented.content;
    if (!content) {
      if (answer.body.length > 0) found.push(`${answer.status} has a body (${type}) where the document describes none`);
      return found;
    }
    const media = Object.entries(content).find(([range]) => mediaMatches(range, type));
    if (!media) return [...found, `${answer.status} has Content-Type ${type}; documented: ${Object.keys(content).join(", ")}`];
    const schema = media[1].schema;
    if (schema && isJson(type)) {
      let value: unknown;
      try {
        value = JSON.parse(answer.body.toString("utf8"));
      } catch {
        return [...found, `${answer.status} says ${type} but its body is not JSON: ${answer.body.toString("utf8", 0, 200)}`];
      }
      const validate = this.validator(schema);
      if (!validate(value)) found.push(`${answer.status} body does not match its schema: ${this.ajv.errorsText(validate.errors)}; body: ${JSON.stringify(value).slice(0, 300)}`);
    }
    return found;
  }

  /**
   * A value of the schema as a request would carry it, the same for the same seed: no readOnly
   * property (OpenAPI: never sent in a request), a documented example where the schema has one
   * (the checks JSON Schema cannot say, a cron expression or a time zone, come with examples),
   * arrays of at most one item (items that must be unique stay so).
   */
  sample(schema: Schema, seed: number): unknown {
    return generateSync(withoutReadOnly(this.deref(schema)) as never, { seed, optionalsProbability: 0.5, useExamplesValue: true, maxItems: 1 });
  }

  /** Query parameters drawn from their schemas: every required one, and some optional ones. */
  sampleQuery(params: Parameter[], seed: number): URLSearchParams {
    const query = params.filter((p) => p.in === "query");
    const object = { type: "object", properties: Object.fromEntries(query.map((p) => [p.name, p.schema])), required: query.filter((p) => p.required).map((p) => p.name) };
    const value = (query.length ? this.sample(object, seed) : {}) as Record<string, unknown>;
    return new URLSearchParams(Object.entries(value).map(([k, v]): [string, string] => [k, typeof v === "string" ? v : JSON.stringify(v)]));
  }
}

/**
 * A query value its schema refuses, or undefined when the schema refuses no string (a free text).
 * Query values are strings on the wire; the schemas describe what they must parse as.
 */
export function violatingQueryValue(schema: Schema): string | undefined {
  if (Array.isArray(schema.enum)) return "not-one-of-the-values";
  const type = schema.type;
  if (type === "integer" || type === "number") {
    if (typeof schema.minimum === "number") return String(schema.minimum - 1);
    if (typeof schema.maximum === "number") return String(schema.maximum + 1);
    return "not-a-number";
  }
  if (type === "boolean") return "not-a-boolean";
  if (typeof schema.pattern === "string") return "\u0001";
  for (const k of ["anyOf", "oneOf"] as const) {
    const options = schema[k];
    if (Array.isArray(options) && options.length) {
      const refused = options.map((o) => violatingQueryValue(o as Schema));
      if (refused.every((v) => v !== undefined && v === refused[0])) return refused[0];
    }
  }
  return undefined;
}

function withoutReadOnly(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(withoutReadOnly);
  if (!schema || typeof schema !== "object") return schema;
  const s = schema as Schema;
  const props = s.properties as Record<string, Schema> | undefined;
  const kept = props && Object.entries(props).filter(([, p]) => p.readOnly !== true);
  return Object.fromEntries(
    Object.entries(s).map(([k, v]) => {
      if (k === "properties" && kept) return [k, Object.fromEntries(kept.map(([n, p]) => [n, withoutReadOnly(p)]))];
      if (k === "required" && Array.isArray(v) && props) return [k, v.filter((n) => props[n]?.readOnly !== true)];
      return [k, withoutReadOnly(v)];
    }),
  );
}

const isJson = (type: string | undefined) => !!type && (type === "application/json" || type.endsWith("+json"));

function mediaMatches(range: string, type: string | undefined): boolean {
  if (range === "*/*") return true;
  if (!type) return false;
  const [r1, r2] = range.toLowerCase().split("/");
  const [t1, t2] = type.split("/");
  return r1 === t1 && (r2 === "*" || r2 === t2);
}
