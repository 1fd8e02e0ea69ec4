import fs from 'node:fs';
import http from 'node:http';
import { portOf, type PortOwner as Role } from '../platform/ports';

/**
 * The image's HEALTHCHECK (Dockerfile) and docker-compose.yml's per service: asks a process of this
 * container its readiness probe on 127.0.0.1 at the port its configuration names.
 *
 *   node dist/cli/healthcheck.js                      what the container's main process serves
 *                                                     (servedRoles), else every port that listens
 *   node dist/cli/healthcheck.js ledger|runs|quota|worker
 *
 * Exit 0: every probe asked answered 2xx (asking every port that listens: at least one listened,
 * and each that did answered 2xx). Exit 1: refused, no answer within PROBE_TIMEOUT_MS, a non-2xx,
 * or nothing listens. Exit 2: usage. One line per probe asked says what it asked and got.
 *
 * It runs every 10 s in every container, so it loads only the ports' settings (not the whole
 * configuration, whose validation costs half a second of CPU) and opens no Postgres, Redis or
 * Temporal client: one HTTP request per port, all at once.
 */

/** Docker's own timeout is 5 s (docker-compose.yml): an answer later than this is none. */
const PROBE_TIMEOUT_MS = 3_000;
/** How much of a probe's body the line shows. */
const BODY_SHOWN_CHARS_MAX = 300;

/** Each process's readiness probe, on the port its configuration names (platform/ports.ts). */
const PROBES: Record<Role, string> = {
  ledger: '/healthz',
  runs: '/readyz',
  quota: '/readyz',
  worker: '/readyz',
};

const USAGE = `usage: healthcheck [${Object.keys(PROBES).join('|')}]
  asks the role's readiness probe on 127.0.0.1 at its configured port; without a role, every
  probe port that listens. Exit 0 ready, 1 not ready or nothing listens, 2 usage.`;

/** What one probe got: a status, or that nothing listens, or why no status came. */
type Outcome = { status: number; body: string } | { refused: true } | { failed: string };

function ask(port: number, path: string): Promise<Outcome> {
  return new Promise((resolve) => {
    const request = http.get(
      { host: '127.0.0.1', port, path, agent: false, timeout: PROBE_TIMEOUT_MS },
      (response) => {
        let body = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => {
          if (body.length < BODY_SHOWN_CHARS_MAX) body += chunk;
        });
        response.on('end', () =>
          resolve({ status: response.statusCode ?? 0, body: body.slice(0, BODY_SHOWN_CHARS_MAX) }),
        );
        response.on('error', (error) => resolve({ failed: error.message }));
      },
    );
    request.on('timeout', () =>
      request.destroy(new Error(`no answer within ${PROBE_TIMEOUT_MS} ms`)),
    );
    request.on('error', (error: NodeJS.ErrnoException) =>
      resolve(error.code === 'ECONNREFUSED' ? { refused: true } : { failed: error.message }),
    );
  });
}

const isReady = (outcome: Outcome) =>
  'status' in outcome && outcome.status >= 200 && outcome.status < 300;

function line(role: Role, port: number, path: string, outcome: Outcome): string {
  const asked = `${role}: GET http://127.0.0.1:${port}${path}`;
  if ('refused' in outcome) return `${asked}: connection refused`;
  if ('failed' in outcome) return `${asked}: ${outcome.failed}`;
  return `${asked}: ${outcome.status} ${outcome.body.trim()}`.trimEnd();
}

const API_ROLES: Role[] = ['ledger', 'runs', 'quota'];

/**
 * What the container's main process serves, read from its command line (PID 1's, in a container
 * that runs the image's CMD or `node dist/api/main.js ledger`): every API it names, all three when
 * it names none, or the worker. Null when the command line is not one of those (the health check
 * run outside such a container): then every port that listens is asked. Without it, the image's
 * check had said healthy while one API still booted, its port not yet listening.
 */
export function servedRoles(argv: readonly string[] | null): Role[] | null {
  const entry = argv?.findIndex((arg) => /(^|\/)(api|worker)\/main\.[jt]s$/.test(arg)) ?? -1;
  if (argv === null || entry < 0) return null;
  if (/worker\/main\.[jt]s$/.test(argv[entry]!)) return ['worker'];
  const named = argv.slice(entry + 1).filter((arg): arg is Role => API_ROLES.includes(arg as Role));
  return named.length > 0 ? named : API_ROLES;
}

/** PID 1's command line, or null where it cannot be read. */
function containerMainArgv(): string[] | null {
  try {
    return fs.readFileSync('/proc/1/cmdline', 'utf8').split('\0').filter(Boolean);
  } catch {
    return null;
  }
}

/**
 * The exit code and the lines to print, for the arguments given; `served` the roles the
 * container's main process serves (servedRoles), asked all when no role is named.
 */
export async function healthcheck(
  args: string[],
  env: NodeJS.ProcessEnv,
  served: Role[] | null = null,
): Promise<{ code: 0 | 1 | 2; lines: string[] }> {
  if (args.length > 1 || (args[0] !== undefined && !Object.hasOwn(PROBES, args[0])))
    return { code: 2, lines: [USAGE] };
  if (args[0] === undefined && served !== null && served.length === 1)
    return healthcheck([served[0]!], env);
  const role = args[0] as Role | undefined;
  const required = role ? [role] : served;
  const roles = required ?? (Object.keys(PROBES) as Role[]);
  const ports = roles.map((name) => portOf(name, env));
  const bad = ports.filter((port): port is string => typeof port === 'string');
  // A setting its process could not have started with.
  if (bad.length > 0) return { code: 1, lines: bad };
  const asked = roles.map((name, i) => ({
    role: name,
    port: ports[i] as number,
    path: PROBES[name],
  }));
  // Port 0: the process took a free port at start (WORKER_METRICS_PORT=0, as the tests' workers
  // do), which only its log says.
  const fixed = asked.filter((probe) => probe.port !== 0);
  if (role && fixed.length === 0)
    return { code: 1, lines: [`${role}: its port is 0 (chosen at start): nothing to ask`] };
  const outcomes = await Promise.all(fixed.map((probe) => ask(probe.port, probe.path)));
  const answered = fixed
    .map((probe, i) => ({ ...probe, outcome: outcomes[i]! }))
    .filter((probe) => required || !('refused' in probe.outcome));
  if (answered.length === 0)
    return {
      code: 1,
      lines: [
        `nothing listens on 127.0.0.1 at ${fixed.map((p) => `${p.role} ${p.port}`).join(', ')}`,
      ],
    };
  return {
    code: answered.every((probe) => isReady(probe.outcome)) ? 0 : 1,
    lines: answered.map((probe) => line(probe.role, probe.port, probe.path, probe.outcome)),
  };
}

if (require.main === module) {
  const served = servedRoles(containerMainArgv());
  void healthcheck(process.argv.slice(2), process.env, served).then(({ code, lines }) => {
    for (const text of lines) (code === 0 ? process.stdout : process.stderr).write(`${text}\n`);
    process.exit(code);
  });
}
