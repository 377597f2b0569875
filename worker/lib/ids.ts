export const ID_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"; // Crockford base32, lowercase
const ALPHABET = ID_ALPHABET;
const TIME_CHARS = 10;
const SEQ_CHARS = 2;
const SEQ_LIMIT = 32 ** SEQ_CHARS;
/** 90 bits: a task id drawn to hash to one of up to 256 shards still keeps more than 80. */
export const RANDOM_CHARS = 18;
const CLOCK_SLACK_MS = 1000;

/**
 * Ids are 10 characters of millisecond time, 2 of a sequence number within that millisecond,
 * then 18 random ones: they sort by creation time (lists page with `id < before` and order newest
 * first), and within one isolate two ids of the same millisecond (or of a clock that stepped back
 * a little) keep their creation order through the sequence number. The random part is drawn
 * afresh for every id, never derived from the previous one: an id is a capability (a public
 * result link is its task id), so knowing one id must not tell another, even a neighbour minted
 * by the same isolate in the same millisecond. A time given explicitly and more than a second
 * back is taken as meant (backdated records), not clamped.
 *
 * `accept` lets a caller draw until the id has a property it needs (newTaskId: its shard); the
 * time and sequence are taken once, only the random part is drawn again.
 */
let last: { time: number; seq: number } | undefined;

export function newId(now = Date.now(), accept?: (id: string) => boolean): string {
  let seq = 0;
  if (last && now <= last.time && last.time - now < CLOCK_SLACK_MS) {
    now = last.time;
    seq = last.seq + 1;
    // More ids in one millisecond than the sequence holds borrow the next millisecond.
    if (seq === SEQ_LIMIT) [now, seq] = [now + 1, 0];
  }
  last = { time: now, seq };
  const prefix = base32(now, TIME_CHARS) + base32(seq, SEQ_CHARS);
  for (;;) {
    const id = prefix + randomChars(RANDOM_CHARS);
    if (!accept || accept(id)) return id;
  }
}

/** The time part of the ids made at `ms`: every id of that millisecond starts with it. */
export const idTimePrefix = (ms: number): string => base32(ms, TIME_CHARS);

function base32(n: number, width: number): string {
  let out = "";
  for (let i = 0; i < width; i++) {
    out = ALPHABET[n % 32] + out;
    n = Math.floor(n / 32);
  }
  return out;
}

/** Uniform: 256 is a multiple of 32, so `byte % 32` favours no character. */
function randomChars(n: number): string {
  return [...crypto.getRandomValues(new Uint8Array(n))].map((b) => ALPHABET[b % 32]).join("");
}

/** An opaque bearer token: 32 random bytes, hex, with a prefix that tells its kind at a glance. */
export function newToken(kind: "user" | "agent"): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  return `${kind === "user" ? "gc" : "gca"}_${[...bytes].map((b) => b.toString(16).padStart(2, "0")).join("")}`;
}

export async function sha256Hex(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** Constant-time comparison of two secrets (through their hashes, so lengths never leak). */
export async function secretEquals(a: string, b: string): Promise<boolean> {
  const [ha, hb] = await Promise.all([sha256Hex(a), sha256Hex(b)]);
  let diff = 0;
  for (let i = 0; i < ha.length; i++) diff |= ha.charCodeAt(i) ^ hb.charCodeAt(i);
  return diff === 0;
}

/**
 * The least id (as text) that newId() can give at `time` or later: ids begin with their time, so a
 * range of ids from here is a range of creation times, readable through any index that ends in `id`.
 */
export function idFloor(time: number): string {
  return base32(Math.max(0, Math.floor(time)), TIME_CHARS);
}

/** The creation time an id carries (ms), or undefined for text that is not one of our ids. */
export function idTime(id: string): number | undefined {
  if (!/^[0-9a-hjkmnp-tv-z]{30}$/.test(id)) return undefined;
  let t = 0;
  for (const ch of id.slice(0, TIME_CHARS)) t = t * 32 + ALPHABET.indexOf(ch);
  return t;
}
