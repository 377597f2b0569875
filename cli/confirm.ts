import readline from "node:readline";
import type { Context } from "./command.js";
import { UsageError } from "./errors.js";

/**
 * Asks `question` on the terminal and resolves true on y/yes. Without a terminal on stdin (a script,
 * a pipe) nobody can answer, so the command refuses rather than guess: the caller passes --yes.
 */
export async function confirm(ctx: Context, question: string, command: string): Promise<boolean> {
  if (!(ctx.stdin as { isTTY?: boolean }).isTTY)
    throw new UsageError(`${command} needs a confirmation and stdin is not a terminal; add --yes to ${command} without asking`, command);
  const rl = readline.createInterface({ input: ctx.stdin, output: ctx.out.stderr });
  try {
    const answer = await new Promise<string>((resolve) => {
      rl.question(`${question} [y/N] `, resolve);
      rl.once("close", () => resolve(""));
    });
    return /^y(es)?$/i.test(answer.trim());
  } finally {
    rl.close();
  }
}
