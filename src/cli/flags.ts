// Reading the command line: a command's flags checked against its own (node:util parseArgs, strict),
// and the flag values turned into what the admin API reads. A value that cannot be right is a usage
// mistake (exit 2) before anything is sent; whether an id or a mode exists is the service's to say.
import { parseArgs } from 'node:util';
import { UsageError, type Command, type Flag, type Values } from './command.ts';

type Value = string | boolean | undefined;

export function parseFlags(command: Command, rest: string[]): Values {
  const hint = `see "bolivar ${command.name} --help"`;
  let values: Values;
  try {
    ({ values } = parseArgs({
      args: rest,
      options: Object.fromEntries(Object.entries(command.flags).map(([name, flag]) => [name, { type: flag.type }])),
      strict: true,
      allowPositionals: false,
    }));
  } catch (error) {
    const message = ((error as Error).message ?? String(error))
      .split('\n')[0]!
      .replace(/\. This command does not take positional arguments$/, '');
    throw new UsageError(`${command.name}: ${message}; ${hint}`);
  }
  const missing = Object.entries(command.flags)
    .filter(([name, flag]) => flag.required && (values[name] === undefined || values[name] === ''))
    .map(([name]) => `--${name}`);
  if (missing.length > 0)
    throw new UsageError(
      `${command.name}: ${missing.join(', ')} ${missing.length === 1 ? 'is' : 'are'} required; ${hint}`,
    );
  return values;
}

export function int(value: Value, name: string): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !/^\d+$/.test(value))
    throw new UsageError(`--${name} must be a non-negative integer, got ${JSON.stringify(value)}`);
  return Number(value);
}

/**
 * An amount in minor units, as the digits typed: the SDK sends it as the JSON integer the API reads,
 * and refuses one beyond 2^53 − 1 before anything is sent (as a number it would no longer be exact).
 */
export function minor(value: Value, name: string): string | undefined {
  return int(value, name) === undefined ? undefined : (value as string);
}

export function onOff(value: Value, name: string): boolean | undefined {
  if (value === undefined) return undefined;
  if (value === 'on') return true;
  if (value === 'off') return false;
  throw new UsageError(`--${name} must be on or off, got ${JSON.stringify(value)}`);
}

/** A comma-separated list flag (`--modes test,live`); undefined when not given. */
export function listOf<T extends string = string>(value: Value, name: string): T[] | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw new UsageError(`--${name} takes a comma-separated list`);
  return value === '' ? [] : (value.split(',').map((item) => item.trim()) as T[]);
}

/**
 * A string flag's value as the field of the request it fills (`--mode` as `'test' | 'live'`): sent
 * as typed, for the service to accept or refuse in its own words, as it always was.
 */
export function text<T extends string = string>(value: Value): T | undefined {
  return value as T | undefined;
}

/** The value of a required flag: parseFlags has refused the command without it. */
export function given<T extends string = string>(value: Value): T {
  return value as T;
}

export const TENANT: Flag = { type: 'string', value: 'ID', required: true, description: 'the tenant id' };
export const MODE: Flag = {
  type: 'string',
  value: 'test|live',
  required: true,
  description: 'the mode (program) it applies to',
};
