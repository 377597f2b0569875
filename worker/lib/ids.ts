const ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"; // Crockford base32, lowercase

/**
 * ULID-like ids: 10 characters of millisecond time then 16 random ones, so ids sort by
 * creation time (lists page with `id < before` and order newest first) and never collide in
 * practice. Within one isolate ids are monotonic, as ULID's monotonic factory: two ids minted in
 * the same millisecond (or with a clock that stepped back a little) keep their creation order,
 * because the second one is the first one's random part plus one. A time given explicitly and
 * more than a second back is taken as meant (backdated records), not clamped.
 */
let last: { time: number; rand: number[] } | undefined;
const CLOCK_SLACK_MS = 1000;

export function newId(now = Date.now()): string {
  let rand: number[];
  if (last && now <= last.time && last.time - now < CLOCK_SLACK_MS) {
    now = last.time;
    rand = increment(last.rand);
  } else {
    rand = [...crypto.getRandomValues(new Uint8Array(16))].map((b) => b % 32);
  }
  last = { time: now, rand };
  let time = "";
  let t = now;
  for (let i = 0; i < 10; i++) {
    time = ALPHABET[t % 32] + time;
    t = Math.floor(t / 32);
  }
  return time + rand.map((d) => ALPHABET[d]).join("");
}

/** Base-32 digits plus one (overflow would take 2^80 ids in one millisecond). */
function increment(digits: number[]): number[] {
  const out = [...digits];
  for (let i = out.length - 1; i >= 0; i--) {
    if (out[i]! < 31) {
      out[i]!++;
      return out;
    }
    out[i] = 0;
  }
  return out;
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
