// What a command of the CLI is: the words typed after `bolivar`, its help, its flags and what it runs.
// Each file of commands/ is one group of them; commands/index.ts lists them in the order of the help.

export interface Flag {
  type: 'string' | 'boolean';
  /** Placeholder shown in the usage line, for a string flag. */
  value?: string;
  required?: boolean;
  description: string;
}

export type Values = Record<string, string | boolean | undefined>;

export interface Command {
  name: string;
  summary: string;
  /** Extra lines of help after the summary. */
  details?: string;
  flags: Record<string, Flag>;
  run(values: Values): Promise<unknown>;
  /** The exit code of a result printed (default 0). */
  exitCode?(result: unknown): number;
}

/** A mistake in how the CLI was called: exit 2, with a pointer to the help. */
export class UsageError extends Error {}

/** Anything else that stops a command (the service, the key, the database): exit 1. */
export class CliError extends Error {}
