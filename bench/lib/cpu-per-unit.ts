/**
 * `phase`'s result and the CPU each named process spent while it ran, in µs per unit of its work
 * (`units` of the result, at least 1). `readers` tell how many ms of CPU each has spent so far.
 */
export async function cpuPerUnit<K extends string, T>(
  readers: Record<K, () => number>,
  phase: () => Promise<T>,
  units: (result: T) => number,
): Promise<{ result: T; cpuUs: Record<K, number> }> {
  const names = Object.keys(readers) as K[];
  const read = () => names.map((name) => readers[name]());
  const before = read();
  const result = await phase();
  const after = read();
  const n = Math.max(1, units(result));
  const cpuUs = Object.fromEntries(
    names.map((name, i) => [name, ((after[i]! - before[i]!) * 1000) / n]),
  ) as Record<K, number>;
  return { result, cpuUs };
}
