/** Secrets shorter than this are not masked: "1" or "yes" would blank half a log and hide nothing. */
const MIN_MASKED_CHARS = 4;
export const MASK = "***";

/**
 * The log with every occurrence of a secret's value replaced by `***`, as CI systems mask theirs:
 * a function that prints its secret (or a stack trace that quotes it) does not publish it in the
 * task log its owner, and anyone the owner shares it with, reads.
 */
export function maskSecrets(lines: string[], secrets: string[]): string[] {
  const values = [...new Set(secrets.flatMap((s) => s.split("\n")))].filter((s) => s.length >= MIN_MASKED_CHARS).sort((a, b) => b.length - a.length);
  if (values.length === 0) return lines;
  return lines.map((line) => values.reduce((l, v) => (l.includes(v) ? l.split(v).join(MASK) : l), line));
}
