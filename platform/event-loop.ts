import { monitorEventLoopDelay } from 'node:perf_hooks';

/** A hold-up of the event loop longer than this is logged: every request in flight waited it. */
export const EVENT_LOOP_STALL_MS = 50;

export interface EventLoopStall {
  maxMs: number;
  meanMs: number;
}

/**
 * Calls `onStall`, at most once a second, when the process's event loop was held up for longer
 * than `thresholdMs` in the last second (a long synchronous task, a GC pause, or the process not
 * getting a core). A latency spike with no such call was spent outside this process.
 * Returns a stop function.
 */
export function watchEventLoop(
  onStall: (stall: EventLoopStall) => void,
  thresholdMs = EVENT_LOOP_STALL_MS,
  intervalMs = 1_000,
): () => void {
  const delays = monitorEventLoopDelay({ resolution: 10 });
  delays.enable();
  const timer = setInterval(() => {
    const maxMs = delays.max / 1e6;
    if (maxMs > thresholdMs)
      onStall({ maxMs: Math.round(maxMs), meanMs: Math.round(delays.mean / 1e6) });
    delays.reset();
  }, intervalMs);
  timer.unref();
  return () => {
    clearInterval(timer);
    delays.disable();
  };
}
