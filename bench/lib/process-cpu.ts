import fs from 'node:fs';
import { sql, type DatabasePool } from '../../db/pool';

/** /proc/<pid>/stat counts CPU time in clock ticks of 10 ms (USER_HZ 100 on Linux). */
const TICK_MS = 10;

/**
 * The fields of /proc/<pid>/stat from the state on ("pid (comm) state ...": comm may hold spaces
 * and parentheses, so cut after its last ")"); null where /proc cannot tell.
 */
function statFields(pid: number): string[] | null {
  try {
    return fs
      .readFileSync(`/proc/${pid}/stat`, 'utf8')
      .replace(/^.*\) /s, '')
      .split(' ');
  } catch {
    return null;
  }
}

/** CPU time (user + system) of a Linux process in ms, or 0 where /proc cannot tell. */
export function processCpuMs(pid: number): number {
  const fields = statFields(pid);
  // utime and stime are fields 14 and 15 of stat.
  return fields ? (Number(fields[11]) + Number(fields[12])) * TICK_MS : 0;
}

/**
 * CPU time in ms of a process's children that ended and were waited for (cutime + cstime,
 * fields 16 and 17 of stat): a server's exited workers, or a command this process ran.
 */
export function endedChildrenCpuMs(pid: number): number {
  const fields = statFields(pid);
  return fields ? (Number(fields[13]) + Number(fields[14])) * TICK_MS : 0;
}

/** The parent of a Linux process (field 4 of stat), or 0 where /proc cannot tell. */
export function parentPid(pid: number): number {
  return Number(statFields(pid)?.[1] ?? 0);
}

/** The postmaster of the pool's server: the parent of one of its backends. */
export async function postmasterPid(pool: DatabasePool): Promise<number> {
  const backend = (await pool.oneFirst(sql.unsafe`SELECT pg_backend_pid()`)) as number;
  const pid = parentPid(backend);
  if (pid <= 1) throw new Error(`no postmaster above backend ${backend} in /proc`);
  return pid;
}
