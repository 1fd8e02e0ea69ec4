import crypto from 'node:crypto';

/**
 * The machine's speed of the moment, on one core: the wall time of a fixed CPU-bound task
 * (chained SHA-256 digests), best of three. The same code's figures on this VM move by up to 2x
 * from hour to hour while the VM reports no steal time, so each bench prints this beside its
 * figures: a run is comparable with another only at a similar speed. It is itself noisy (167 to
 * 317 ms within the same hour here), so it tells a slow spell from a fast one, no finer.
 */
export function machineSpeedMs(digests = 100_000): number {
  let best = Infinity;
  for (let round = 0; round < 3; round++) {
    const started = performance.now();
    let digest = Buffer.alloc(32);
    for (let i = 0; i < digests; i++) digest = crypto.createHash('sha256').update(digest).digest();
    best = Math.min(best, performance.now() - started);
  }
  return best;
}
