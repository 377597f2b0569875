/** Language codes as the API returns them (lowercase); input uppercase codes are mapped by the caller. */
export const LANGS = ["py", "js", "go", "rb", "rs", "cs"] as const;
export type Lang = (typeof LANGS)[number];

/** Folder names under agent/runtimes/ and examples/, and the image names' language part. */
export const RUNTIME_DIR: Record<Lang, string> = {
  py: "python",
  js: "node",
  go: "go",
  rb: "ruby",
  rs: "rust",
  cs: "csharp",
};

export function isLang(value: string): value is Lang {
  return (LANGS as readonly string[]).includes(value);
}

export function parseLang(value: string): Lang {
  const lower = value.toLowerCase();
  if (!isLang(lower)) throw new Error(`unknown language "${value}"; expected one of ${LANGS.join(", ")}`);
  return lower;
}

export interface RuntimeImage {
  /** Image whose /opt/gcfaas/build.sh turns /src into /out. */
  build: string;
  /** Image whose default command is the shim, serving /function. */
  run: string;
}

export type RuntimeImages = Record<Lang, RuntimeImage>;

/**
 * The tag of a language's offline image. GCFAAS_IMAGE_TAG (default "offline") lets a checkout that
 * changes a shim build and test its own images beside the ones other checkouts on the same Docker
 * Engine use; scripts/images/build-offline.sh reads the same variable.
 */
export function offlineImageTag(lang: Lang): string {
  return `gcfaas/${RUNTIME_DIR[lang]}:${process.env.GCFAAS_IMAGE_TAG || "offline"}`;
}

/**
 * The offline images built by scripts/images/build-offline.sh carry the toolchain and the shim in one
 * image; production may split them (see docs/runtimes.md) by passing its own table.
 */
export function offlineImages(): RuntimeImages {
  const table = {} as RuntimeImages;
  for (const lang of LANGS) {
    const tag = offlineImageTag(lang);
    table[lang] = { build: tag, run: tag };
  }
  return table;
}

/** The uid the shim and the build step run as: unprivileged, with no entry in the image's passwd. */
export const FUNCTION_UID = 10001;
