import fs from 'node:fs';

/** /proc/stat counts CPU time in clock ticks of 10 ms (USER_HZ 100 on Linux). */
const TICK_MS = 10;

interface Sample {
  atMs: number;
  /** Summed over the machine's CPUs, in ms: all time, idle (idle + iowait), steal. */
  totalMs: number;
  idleMs: number;
  stealMs: number;
}

/** The machine's CPU counters now; null where /proc/stat cannot tell (not Linux). */
function read(): Omit<Sample, 'atMs'> | null {
  try {
    // "cpu  user nice system idle iowait irq softirq steal guest guest_nice"
    const counts = fs
      .readFileSync('/proc/stat', 'utf8')
      .split('\n', 1)[0]!
      .trim()
      .split(/\s+/)
      .slice(1, 9)
      .map(Number);
    if (counts.length < 8 || counts.some((n) => !Number.isFinite(n))) return null;
    const [, , , idle, iowait, , , steal] = counts;
    return {
      totalMs: counts.reduce((a, b) => a + b, 0) * TICK_MS,
      idleMs: (idle! + iowait!) * TICK_MS,
      stealMs: steal! * TICK_MS,
    };
  } catch {
    return null;
  }
}

/**
 * The whole machine's CPU during a phase, from /proc/stat: how busy it was (every process: the
 * service, Postgres, Redis, the load generator, the kernel), and how much CPU time the VM's host
 * gave to other guests while this VM wanted it ("steal"), per window, so that a slow window can be
 * told apart from a host that took the CPU away.
 */
export class HostCpu {
  private readonly samples: Sample[] = [];
  private timer?: NodeJS.Timeout;

  /** False where /proc/stat cannot tell: nothing is reported then. */
  readonly available = read() !== null;

  start(everyMs = 25): void {
    if (!this.available) return;
    this.take();
    this.timer = setInterval(() => this.take(), everyMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    if (this.available) this.take();
  }

  /** Busy share of all the machine's CPU time over the phase, 0 to 1. */
  busyShare(): number {
    const first = this.samples[0];
    const last = this.samples.at(-1);
    if (!first || !last || last.totalMs === first.totalMs) return NaN;
    return 1 - (last.idleMs - first.idleMs) / (last.totalMs - first.totalMs);
  }

  /** Steal ms in [fromMs, toMs) (performance.now() instants), to the sampling's resolution. */
  stealBetween(fromMs: number, toMs: number): number {
    return this.at(toMs).stealMs - this.at(fromMs).stealMs;
  }

  private take(): void {
    const now = read();
    if (now) this.samples.push({ atMs: performance.now(), ...now });
  }

  /** The last sample taken at or before t (the counters only grow). */
  private at(t: number): Sample {
    let found = this.samples[0]!;
    for (const s of this.samples) {
      if (s.atMs > t) break;
      found = s;
    }
    return found;
  }
}

/** CPU time every process of the machine has spent so far, in ms (all CPUs; idle and steal not counted). */
export function machineBusyCpuMs(): number {
  const now = read();
  return now ? now.totalMs - now.idleMs - now.stealMs : 0;
}
