import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { CliError } from "./errors.js";

/** What `gcfaas login` stores. */
export interface StoredConfig {
  url?: string;
  token?: string;
}

export type Env = Record<string, string | undefined>;

/** `$GCFAAS_CONFIG`, else `$XDG_CONFIG_HOME/gcfaas/config.json`, else `~/.config/gcfaas/config.json`. */
export function configPath(env: Env): string {
  if (env.GCFAAS_CONFIG) return path.resolve(env.GCFAAS_CONFIG);
  const base = env.XDG_CONFIG_HOME || path.join(env.HOME || os.homedir(), ".config");
  return path.join(base, "gcfaas", "config.json");
}

export async function loadConfig(env: Env): Promise<StoredConfig> {
  const file = configPath(env);
  let text: string;
  try {
    text = await fs.readFile(file, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return {};
    throw err;
  }
  try {
    const value = JSON.parse(text) as unknown;
    if (!value || typeof value !== "object" || Array.isArray(value)) throw new Error("not an object");
    const { url, token } = value as Record<string, unknown>;
    return { ...(typeof url === "string" ? { url } : {}), ...(typeof token === "string" ? { token } : {}) };
  } catch (err) {
    throw new CliError("bad_config", `${file} is not a valid configuration file (${(err as Error).message})`, [], 1, "run `gcfaas login` again to rewrite it");
  }
}

/** Writes the file readable by its owner only: it holds an access token. */
export async function saveConfig(env: Env, config: StoredConfig): Promise<string> {
  const file = configPath(env);
  await fs.mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
  const tmp = `${file}.${process.pid}.tmp`;
  await fs.writeFile(tmp, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600 });
  await fs.chmod(tmp, 0o600);
  await fs.rename(tmp, file);
  return file;
}

export async function removeConfig(env: Env): Promise<boolean> {
  try {
    await fs.unlink(configPath(env));
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return false;
    throw err;
  }
}

/** `http://host:port/` → `http://host:port`; anything but an http(s) URL is refused. */
export function normalizeUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new CliError("usage", `"${raw}" is not a URL (expected e.g. http://127.0.0.1:8787)`, [], 2);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") throw new CliError("usage", `"${raw}" must start with http:// or https://`, [], 2);
  return url.toString().replace(/\/+$/, "");
}

export interface Connection {
  url: string;
  token: string;
  /** Where each value came from, for `gcfaas config`. */
  sources: { url: string; token: string };
}

/** Flags win over the environment (GCFAAS_URL, GCFAAS_TOKEN), which wins over the stored file. */
export interface PartialConnection {
  url?: string;
  token?: string;
  sources: { url?: string; token?: string };
}

export async function resolveConnection(env: Env, flags: { url?: string | undefined; token?: string | undefined }): Promise<PartialConnection> {
  const stored = await loadConfig(env);
  const pick = (flag: string | undefined, envName: string, storedValue: string | undefined): [string | undefined, string | undefined] => {
    if (flag) return [flag, "command line"];
    if (env[envName]) return [env[envName], `$${envName}`];
    if (storedValue) return [storedValue, configPath(env)];
    return [undefined, undefined];
  };
  const [url, urlSource] = pick(flags.url, "GCFAAS_URL", stored.url);
  const [token, tokenSource] = pick(flags.token, "GCFAAS_TOKEN", stored.token);
  return {
    ...(url ? { url: normalizeUrl(url) } : {}),
    ...(token ? { token } : {}),
    sources: { ...(urlSource ? { url: urlSource } : {}), ...(tokenSource ? { token: tokenSource } : {}) },
  };
}

export async function requireConnection(env: Env, flags: { url?: string | undefined; token?: string | undefined }): Promise<Connection> {
  const c = await resolveConnection(env, flags);
  if (!c.url || !c.token) {
    const missing = [!c.url && "URL", !c.token && "token"].filter(Boolean).join(" and ");
    throw new CliError("not_logged_in", `no service ${missing} configured`, [], 2, "run `gcfaas login --url URL --token TOKEN`, or set GCFAAS_URL and GCFAAS_TOKEN");
  }
  return { url: c.url, token: c.token, sources: { url: c.sources.url ?? "", token: c.sources.token ?? "" } };
}
