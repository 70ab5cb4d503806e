// The help: the overview of every command (or of a group, `bolivar rails --help`), and each
// command's usage line and flags, built from the commands' own definitions.
import type { Command } from './command.ts';

const ENVIRONMENT = `Environment:
  BOLIVAR_URL        base URL of the running service (default http://localhost:$PORT; PORT defaults to 3000)
  PLATFORM_API_KEY   the platform key (default: platformApiKey in $DATA_DIR/bootstrap.json; DATA_DIR defaults to ./data)`;

export const wantsHelp = (args: readonly string[]) => args.includes('--help') || args.includes('-h');

function usageLine(command: Command): string {
  const parts = Object.entries(command.flags).map(([name, flag]) => {
    const text = flag.type === 'boolean' ? `--${name}` : `--${name} ${flag.value ?? 'VALUE'}`;
    return flag.required ? text : `[${text}]`;
  });
  return ['bolivar', command.name, ...parts].join(' ');
}

export function commandHelp(command: Command): string {
  const rows: Array<[string, string]> = Object.entries(command.flags).map(([name, flag]) => [
    flag.type === 'boolean' ? `--${name}` : `--${name} ${flag.value ?? 'VALUE'}`,
    `${flag.description}${flag.required ? ' (required)' : ''}`,
  ]);
  rows.push(['--help', 'show this help']);
  const width = Math.max(...rows.map(([left]) => left.length));
  return [
    `Usage: ${usageLine(command)}`,
    '',
    command.summary + '.',
    ...(command.details ? [command.details] : []),
    '',
    'Flags:',
    ...rows.map(([left, right]) => `  ${left.padEnd(width)}  ${right}`),
    '',
    ENVIRONMENT,
  ].join('\n');
}

export function overview(commands: readonly Command[], heading = 'Usage: bolivar <command> [flags]'): string {
  const width = Math.max(...commands.map((c) => c.name.length));
  return [
    heading,
    '',
    'Commands:',
    ...commands.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    '',
    'Run "bolivar <command> --help" for the flags of a command.',
    '',
    ENVIRONMENT,
  ].join('\n');
}
