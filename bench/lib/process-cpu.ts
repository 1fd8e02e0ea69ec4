import fs from 'node:fs';

/** CPU time (user + system) of a Linux process in ms, or 0 where /proc cannot tell. */
export function processCpuMs(pid: number): number {
  try {
    const fields = fs
      .readFileSync(`/proc/${pid}/stat`, 'utf8')
      .replace(/^.*\) /, '')
      .split(' ');
    // utime and stime are fields 14 and 15 of stat, in clock ticks (100 per second on Linux).
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return 0;
  }
}
