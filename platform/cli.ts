import { parseArgs, type ParseArgsConfig } from 'node:util';
import { DomainError } from './errors';

/**
 * The one convention of the operator CLIs (scripts/ledger-admin, scripts/runs-admin,
 * scripts/quota-admin → api/<service>/cli.ts). Each cli.ts keeps its own commands; the parsing,
 * help, exit codes, error rendering and the main wrapper are here.
 *
 * 1. `--help`, `-h` or `help` prints the usage to stdout, exit 0. No command, an unknown command,
 *    or a bad or missing option or argument is a usage error: the error and the usage on stderr,
 *    exit 2 (nothing is opened: no database, no Redis). A failure of the operation itself (not
 *    found, refused, a backend down) exits 1.
 * 2. The entity a command acts on is positional (`tenant suspend <tenant_id>`,
 *    `key revoke <key_id>`, `tenant create <tenant_id>` where the operator chooses the id); what
 *    it is scoped to or what it sets is a flag (`key create --tenant T --role R`,
 *    `key list --tenant T`).
 * 3. With `--json`, success prints exactly one JSON object on stdout, and every error exactly one
 *    JSON object on stderr: `{"error": "<code>", "message": "<text>"}`, code `usage` for a usage
 *    error (exit 2), otherwise the operation's own code (exit 1): a DomainError's code, a
 *    CliError's (`not_found`, ...), `failed` for an error that names none. Without `--json`, an
 *    error is one readable line on stderr (`<cli>: <message>`; a usage error adds the usage).
 * 4. A cli.ts calls its main only when run directly (`if (require.main === module) runMain(cli)`),
 *    so its compiled form is an entry point as it is: in the built image, where tsx is pruned,
 *    `node dist/cli/<service>.js <command> ...`.
 */

type OptionsConfig = NonNullable<ParseArgsConfig['options']>;

/** An error of a CLI command with its code (exit 1), or `usage` (a UsageError, exit 2). */
export class CliError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'CliError';
  }
}

/** A usage error: no or an unknown command, a bad or missing option or argument (exit 2). */
export class UsageError extends CliError {
  constructor(message: string) {
    super('usage', message);
    this.name = 'UsageError';
  }
}

/** What the operation acts on does not exist (exit 1, code `not_found`). */
export const notFound = (message: string): CliError => new CliError('not_found', message);

/** What a command prints: `json` with `--json` (one JSON object), `text` otherwise. */
export interface Printed {
  json: unknown;
  text: string;
}

export type OptionValues = Record<string, string | boolean | undefined>;

export interface CommandLine {
  /** The command: its first two words (`tenant suspend`). */
  command: string;
  /** The positionals after the command: the entity it acts on. */
  args: string[];
  values: OptionValues;
  json: boolean;
  help: boolean;
}

/** The usage text: the commands' lines between the common first line and the common last. */
export const usageText = (name: string, commands: string): string =>
  `usage: ${name} <command> [options] [--json]
${commands}
-h, --help: this text. Exit 0 done, 1 the operation failed, 2 a usage error; with --json the
result is one JSON object on stdout, an error {"error": "<code>", "message": "<text>"} on stderr.`;

/** Parses argv with a CLI's options (plus --json and --help); a parse error is a usage error. */
export function parseCommandLine(argv: string[], options: OptionsConfig): CommandLine {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      options: { ...options, json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } },
      allowPositionals: true,
      strict: true,
    });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const { values, positionals } = parsed;
  return {
    command: positionals.slice(0, 2).join(' '),
    args: positionals.slice(2),
    values,
    json: values.json === true,
    help: values.help === true || positionals[0] === 'help',
  };
}

/**
 * The one entity a command acts on (`tenant suspend <tenant_id>`). `legacy`: the value of the
 * flag older scripts named it with, taken in its place (giving both is a usage error).
 */
export function positional(args: string[], what: string, legacy?: string | boolean): string {
  const given = legacy === undefined ? args : [...args, legacy];
  const [value] = given;
  if (given.length !== 1 || typeof value !== 'string' || value === '')
    throw new UsageError(`expected exactly one ${what}`);
  return value;
}

/** A command that acts on no entity takes no positional after it. */
export function noPositionals(args: string[]): void {
  if (args.length > 0) throw new UsageError(`unexpected argument: ${args.join(' ')}`);
}

/** A string option the command cannot do without. */
export function requiredOption(values: OptionValues, name: string): string {
  const value = values[name];
  if (typeof value !== 'string' || value === '') throw new UsageError(`--${name} is required`);
  return value;
}

export interface Cli {
  /** Its name in messages: `ledger-admin`. */
  name: string;
  usage: string;
  /** Its options, without --json and --help (every CLI has those). */
  options: OptionsConfig;
  /** Its commands (`tenant suspend`, ...): any other is a usage error before anything opens. */
  commands: readonly string[];
  /** Runs one parsed command line, opening and closing what it needs. */
  run(line: CommandLine): Promise<Printed>;
}

/** Where runCli writes: the console, or a test's collector. */
export interface CliOutput {
  log(text: string): void;
  error(text: string): void;
}

function describe(error: unknown): { code: string; message: string } {
  const code =
    error instanceof CliError || error instanceof DomainError ? String(error.code) : 'failed';
  const named = (error as { code?: unknown } | null)?.code;
  const message =
    (error instanceof Error && error.message) ||
    (typeof named === 'string' ? named : '') ||
    String(error);
  return { code, message: message.replace(/\s*\n\s*/g, '; ') };
}

/** Runs a CLI on argv by the convention above; returns its exit code (never throws). */
export async function runCli(
  cli: Cli,
  argv: string[],
  output: CliOutput = console,
): Promise<number> {
  let json = argv.includes('--json');
  try {
    const line = parseCommandLine(argv, cli.options);
    json = line.json;
    if (line.help) {
      output.log(cli.usage);
      return 0;
    }
    if (line.command === '') throw new UsageError('no command given');
    if (!cli.commands.includes(line.command))
      throw new UsageError(`unknown command: ${line.command}`);
    const printed = await cli.run(line);
    output.log(json ? JSON.stringify(printed.json) : printed.text);
    return 0;
  } catch (error) {
    const { code, message } = describe(error);
    if (json) output.error(JSON.stringify({ error: code, message }));
    else output.error(`${cli.name}: ${message}${code === 'usage' ? `\n${cli.usage}` : ''}`);
    return code === 'usage' ? 2 : 1;
  }
}

const flushed = (stream: NodeJS.WriteStream) =>
  new Promise<void>((resolve) => stream.write('', () => resolve()));

/** The main of a cli.ts run directly: runs it on process.argv, then exits with its code. */
export function runMain(cli: Cli): void {
  const exit = async (code: number) => {
    await Promise.all([flushed(process.stdout), flushed(process.stderr)]);
    process.exit(code);
  };
  runCli(cli, process.argv.slice(2)).then(exit, async (error: unknown) => {
    console.error(error);
    await exit(1);
  });
}
