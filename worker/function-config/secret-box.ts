import { ApiError } from "../errors.js";

/**
 * Secrets at rest: AES-256-GCM (WebCrypto) under a key derived with HKDF-SHA-256 from the
 * SECRETS_KEY Worker secret, a fresh 96-bit IV per value. The function's id and the secret's name
 * are the additional data, so a ciphertext copied to another row (another function, another name)
 * does not decrypt. Stored as `v1.<base64 of IV ‖ ciphertext and tag>`.
 */
const VERSION = "v1.";
const IV_BYTES = 12;
const encoder = new TextEncoder();
const keys = new Map<string, Promise<CryptoKey>>();

export class SecretsKeyMissing extends ApiError {
  constructor() {
    super("internal_error", "secrets are not available: the operator has not set SECRETS_KEY");
  }
}

function keyFor(secret: string | undefined): Promise<CryptoKey> {
  if (!secret) throw new SecretsKeyMissing();
  let key = keys.get(secret);
  if (!key) {
    key = crypto.subtle
      .importKey("raw", encoder.encode(secret), "HKDF", false, ["deriveKey"])
      .then((base) =>
        crypto.subtle.deriveKey(
          { name: "HKDF", hash: "SHA-256", salt: encoder.encode("gcfaas function secrets"), info: encoder.encode("aes-256-gcm v1") },
          base,
          { name: "AES-GCM", length: 256 },
          false,
          ["encrypt", "decrypt"],
        ),
      );
    keys.set(secret, key);
  }
  return key;
}

const boundTo = (functionId: string, name: string) => encoder.encode(`${functionId}/${name}`);

export async function sealSecret(secret: string | undefined, functionId: string, name: string, value: string): Promise<string> {
  const key = await keyFor(secret);
  const iv = crypto.getRandomValues(new Uint8Array(IV_BYTES));
  const sealed = new Uint8Array(await crypto.subtle.encrypt({ name: "AES-GCM", iv, additionalData: boundTo(functionId, name) }, key, encoder.encode(value)));
  const out = new Uint8Array(IV_BYTES + sealed.byteLength);
  out.set(iv);
  out.set(sealed, IV_BYTES);
  return VERSION + toBase64(out);
}

/** Throws when the value was sealed under another key or for another function or name. */
export async function openSecret(secret: string | undefined, functionId: string, name: string, stored: string): Promise<string> {
  if (!stored.startsWith(VERSION)) throw new Error("unknown secret format");
  const key = await keyFor(secret);
  const bytes = fromBase64(stored.slice(VERSION.length));
  const plain = await crypto.subtle.decrypt({ name: "AES-GCM", iv: bytes.subarray(0, IV_BYTES), additionalData: boundTo(functionId, name) }, key, bytes.subarray(IV_BYTES));
  return new TextDecoder().decode(plain);
}

function toBase64(bytes: Uint8Array): string {
  let s = "";
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(s);
}

function fromBase64(text: string): Uint8Array {
  const s = atob(text);
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
  return out;
}
