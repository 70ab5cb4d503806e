// The operator CLI: the admin API from a terminal. It talks HTTP to a running service (BOLIVAR_URL,
// default http://localhost:$PORT) through the SDK's admin resources, with PLATFORM_API_KEY or the
// platform key the first start wrote to $DATA_DIR/bootstrap.json; `migrate` and `config` need no
// service. The commands are in commands/, one file per group.
//
// Every command has its own `--help`. Failures are one line on stderr, never a stack trace: a usage
// mistake exits 2, anything else (the service unreachable, an error answer, no platform key) exits 1.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigError } from '../config.ts';
import { UsageError, type Command } from './command.ts';
import { COMMANDS } from './commands/index.ts';
import { parseFlags } from './flags.ts';
import { commandHelp, overview, wantsHelp } from './help.ts';
import { warnTo } from './service.ts';

/** Finds the command named by the leading words of argv: its own flags follow it. */
function resolve(argv: readonly string[]): { command?: Command; rest: string[]; words: string[] } {
  const words: string[] = [];
  for (const arg of argv) {
    if (arg.startsWith('-')) break;
    words.push(arg);
  }
  for (const count of [3, 2, 1]) {
    const name = words.slice(0, count).join(' ');
    const command = words.length >= count ? COMMANDS.find((c) => c.name === name) : undefined;
    if (command) return { command, rest: argv.slice(count), words };
  }
  return { rest: [...argv], words };
}

/** No command named: the overview (`bolivar`, `bolivar --help`), a group's (`bolivar rails --help`), or the mistake. */
function withoutCommand(argv: readonly string[], words: string[], out: (text: string) => void): number {
  if (words.length === 0) {
    if (argv.length > 0 && !wantsHelp(argv))
      throw new UsageError(`give a command before ${argv[0]}; see "bolivar --help"`);
    out(`${overview(COMMANDS)}\n`);
    return 0;
  }
  const prefix = words.join(' ');
  const group = COMMANDS.filter((c) => c.name.startsWith(`${prefix} `));
  if (group.length > 0) {
    if (wantsHelp(argv)) {
      const next = [...new Set(group.map((c) => c.name.slice(prefix.length + 1).split(' ')[0]))];
      out(`${overview(group, `Usage: bolivar ${prefix} <${next.join('|')}> [flags]`)}\n`);
      return 0;
    }
    throw new UsageError(
      `"${prefix}" needs a subcommand: ${group.map((c) => c.name).join(', ')}; see "bolivar ${prefix} --help"`,
    );
  }
  throw new UsageError(`unknown command "${words.join(' ')}"; see "bolivar --help" for the list`);
}

/** The exit code of a failure, and its one line. */
function failure(error: unknown, err: (text: string) => void): number {
  if (error instanceof UsageError) {
    err(`bolivar: ${error.message}\n`);
    return 2;
  }
  if (error instanceof ConfigError) {
    err(`bolivar: ${error.message}\n`);
    return 1;
  }
  const message = error instanceof Error ? error.message : String(error);
  err(`bolivar: ${message.replace(/\s*\n\s*/g, ' ')}\n`);
  return 1;
}

/** Runs the CLI; returns the exit code. Output goes to `out`, the one-line failure to `err`. */
export async function runCli(
  argv: readonly string[],
  out: (text: string) => void,
  err: (text: string) => void,
): Promise<number> {
  warnTo(err);
  try {
    const { command, rest, words } = resolve(argv);
    if (!command) return withoutCommand(argv, words, out);
    if (wantsHelp(rest)) {
      out(`${commandHelp(command)}\n`);
      return 0;
    }
    const result = await command.run(parseFlags(command, rest));
    if (result !== undefined) out(`${JSON.stringify(result, null, 2)}\n`);
    return command.exitCode?.(result) ?? 0;
  } catch (error) {
    return failure(error, err);
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  process.exitCode = await runCli(
    process.argv.slice(2),
    (text) => process.stdout.write(text),
    (text) => process.stderr.write(text),
  );
}
