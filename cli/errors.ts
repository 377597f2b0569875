/** One field-level problem, as the API reports it in `error.details`. */
export interface ErrorDetail {
  field: string;
  message: string;
}

/**
 * An error the CLI reports as `error: <code>: <message>` (plus detail lines) and turns into an exit
 * code: API errors and runtime failures exit 1, usage errors exit 2.
 */
export class CliError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly details: ErrorDetail[] = [],
    readonly exitCode = 1,
    /** A hint printed after the error, e.g. which command fixes it. */
    readonly hint?: string,
  ) {
    super(message);
  }
}

/** An error answer of the service: `{"error": {"code", "message", "details?"}}`. */
export class ApiError extends CliError {
  constructor(
    readonly status: number,
    code: string,
    message: string,
    details: ErrorDetail[] = [],
    hint?: string,
  ) {
    super(code, message, details, 1, hint);
  }
}

/** Wrong command line: unknown option, missing argument, malformed value. Exits 2. */
export class UsageError extends CliError {
  constructor(message: string, readonly command?: string) {
    super("usage", message, [], 2);
  }
}
