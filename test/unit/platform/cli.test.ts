import { CliError, positional, runCli, UsageError, type Cli } from '../../../platform/cli';
import { DomainError } from '../../../platform/errors';

/** A CLI of one command, `thing poke <thing_id>`, whose outcome the test chooses. */
function fake(outcome: (id: string) => unknown): { cli: Cli; opened: () => number } {
  let opened = 0;
  const cli: Cli = {
    name: 'fake-admin',
    usage: 'usage: fake-admin thing poke <thing_id> [--hard]',
    options: { hard: { type: 'boolean' } },
    commands: ['thing poke'],
    run({ args, values }) {
      opened += 1;
      const id = positional(args, 'thing_id');
      const result = outcome(id);
      return Promise.resolve({ json: { id, hard: values.hard === true, result }, text: `${id}` });
    },
  };
  return { cli, opened: () => opened };
}

async function ran(cli: Cli, argv: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(cli, argv, { log: (t) => out.push(t), error: (t) => err.push(t) });
  return { code, out, err };
}

describe('the operator CLI convention (platform/cli.ts)', () => {
  it('prints the usage on stdout with exit 0 for --help, -h and help, opening nothing', async () => {
    const { cli, opened } = fake(() => 'ok');
    for (const argv of [['--help'], ['-h'], ['help'], ['thing', 'poke', '--help']])
      expect(await ran(cli, argv)).toEqual({ code: 0, out: [cli.usage], err: [] });
    expect(opened()).toBe(0);
  });

  it('exits 2 with the error and the usage on stderr for no, an unknown command, a bad option or argument', async () => {
    const { cli, opened } = fake(() => 'ok');
    expect(await ran(cli, [])).toEqual({
      code: 2,
      out: [],
      err: [`fake-admin: no command given\n${cli.usage}`],
    });
    expect((await ran(cli, ['thing', 'kick'])).err).toEqual([
      `fake-admin: unknown command: thing kick\n${cli.usage}`,
    ]);
    expect(opened()).toBe(0);
    expect((await ran(cli, ['thing', 'poke', '--soft'])).code).toBe(2);
    expect(await ran(cli, ['thing', 'poke', '--json'])).toEqual({
      code: 2,
      out: [],
      err: ['{"error":"usage","message":"expected exactly one thing_id"}'],
    });
  });

  it('prints one JSON object on success with --json, the text line without', async () => {
    const { cli } = fake(() => 'ok');
    expect(await ran(cli, ['thing', 'poke', 't1', '--hard', '--json'])).toEqual({
      code: 0,
      out: ['{"id":"t1","hard":true,"result":"ok"}'],
      err: [],
    });
    expect((await ran(cli, ['thing', 'poke', 't1'])).out).toEqual(['t1']);
  });

  it("exits 1 with the operation's own code for its failures, `failed` for an error naming none", async () => {
    const cases: [unknown, string, string][] = [
      [new CliError('not_found', 'no thing t1'), 'not_found', 'no thing t1'],
      [new DomainError('thing_locked', { message: 'locked' }), 'thing_locked', 'locked'],
      [
        new Error('connect ECONNREFUSED\n127.0.0.1:5432'),
        'failed',
        'connect ECONNREFUSED; 127.0.0.1:5432',
      ],
    ];
    for (const [error, code, message] of cases) {
      const { cli } = fake(() => {
        throw error;
      });
      expect(await ran(cli, ['thing', 'poke', 't1', '--json'])).toEqual({
        code: 1,
        out: [],
        err: [JSON.stringify({ error: code, message })],
      });
      expect(await ran(cli, ['thing', 'poke', 't1'])).toEqual({
        code: 1,
        out: [],
        err: [`fake-admin: ${message}`],
      });
    }
  });

  it('takes a legacy flag in place of the positional, never both', () => {
    expect(positional([], 'tenant_id', 'a')).toBe('a');
    expect(positional(['a'], 'tenant_id')).toBe('a');
    expect(() => positional(['a'], 'tenant_id', 'a')).toThrow(UsageError);
    expect(() => positional([], 'tenant_id')).toThrow('expected exactly one tenant_id');
  });
});
