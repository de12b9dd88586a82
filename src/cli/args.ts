// A small argument reader for the CLI: `--name value`, `--name=value` and bare
// flags; unknown options are errors, never ignored.

import { ControlError } from '../control-errors.js';

export interface ParsedArgs {
  readonly positional: string[];
  readonly options: Map<string, string | true>;
}

/** A command line the CLI does not take: said with the help text. */
export class UsageError extends ControlError {
  constructor(message: string) {
    super('INVALID_INPUT', message);
    this.name = 'UsageError';
  }
}

export function parseArgs(argv: readonly string[], valued: readonly string[], flags: readonly string[]): ParsedArgs {
  const positional: string[] = [];
  const options = new Map<string, string | true>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (!arg.startsWith('--')) {
      positional.push(arg);
      continue;
    }
    const eq = arg.indexOf('=');
    const name = arg.slice(2, eq < 0 ? undefined : eq);
    if (flags.includes(name)) {
      if (eq >= 0) throw new UsageError(`--${name} takes no value`);
      options.set(name, true);
    } else if (valued.includes(name)) {
      const value = eq >= 0 ? arg.slice(eq + 1) : argv[++i];
      if (value === undefined || value === '') throw new UsageError(`--${name} needs a value`);
      options.set(name, value);
    } else {
      throw new UsageError(`unknown option --${name}`);
    }
  }
  return { positional, options };
}

export function option(args: ParsedArgs, name: string): string | undefined {
  const v = args.options.get(name);
  return typeof v === 'string' ? v : undefined;
}
