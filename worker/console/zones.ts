/** IANA zones for the picker (workerd has the ICU list); a short list where the runtime has none. */
export function zones(): string[] {
  const intl = Intl as unknown as { supportedValuesOf?: (k: string) => string[] };
  try {
    const all = intl.supportedValuesOf?.("timeZone");
    if (all?.length) return all.includes("UTC") ? all : ["UTC", ...all];
  } catch {
    /* fall through */
  }
  return ["UTC", "Europe/London", "Europe/Paris", "America/New_York", "America/Los_Angeles", "Asia/Tokyo", "Australia/Sydney"];
}

