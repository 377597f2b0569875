/**
 * The API's error messages speak to API callers (some name a route to call next); a person in the
 * console needs the console action instead. Codes not listed keep the API's message.
 */
const CONSOLE_HINTS: Record<string, string> = {
  no_successful_build: "the function has no successful build yet: deploy a build first (drop a zip of its files on Deploy on the function's page)",
};

export function consoleMessage(error: { code: string; message: string }): string {
  return CONSOLE_HINTS[error.code] ?? error.message;
}
