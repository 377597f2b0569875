import type { Db } from "../db/client.js";
import type { builds } from "../db/schema.js";
import { buildLogKey } from "../lib/storage-keys.js";
import { BUILD_LOG_TEXT_BYTES, endsAsLog, failureLine, textCutNote } from "../../shared/build-log.js";
import { legacyText, readEnds } from "./ends.js";

type Build = Pick<typeof builds.$inferSelect, "id" | "accountId" | "functionId" | "status">;

/** The text is whatever the build printed: never to be sniffed into anything but text. */
export const BUILD_LOG_HEADERS = { "content-type": "text/plain; charset=utf-8", "x-content-type-options": "nosniff" };

const asText = (lines: string[]) => (lines.length ? lines.join("\n") + "\n" : "");

/**
 * A build's whole log as text. The agent uploads it as the build ends (at most the text cap of
 * lines, then its cut note and failure reason); until then, and for builds whose agent uploaded
 * none (the dispatcher failed it, an agent from before uploads), it is what the record holds. A
 * failure the dispatcher recorded after the upload (the agent went quiet) is added at the end.
 */
export async function buildLogText(db: Db, bucket: R2Bucket, b: Build): Promise<string> {
  const ends = await readEnds(db, b.id);
  const uploaded = b.status === "SUCCESS" || b.status === "FAILED" ? await bucket.get(buildLogKey(b.accountId, b.functionId, b.id)) : null;
  if (!uploaded) {
    if (ends.lines > ends.head.length + ends.tail.length) {
      const legacy = await legacyText(db, b.id, BUILD_LOG_TEXT_BYTES);
      if (legacy) return asText(legacy.cut ? [...legacy.lines, textCutNote(legacy.cut)] : legacy.lines);
    }
    return asText(endsAsLog(ends));
  }
  const text = await uploaded.text();
  const last = ends.tail.at(-1) ?? ends.head.at(-1);
  if (b.status === "FAILED" && last?.startsWith(failureLine("")) && !text.endsWith(`${last}\n`)) return `${text}${last}\n`;
  return text;
}
