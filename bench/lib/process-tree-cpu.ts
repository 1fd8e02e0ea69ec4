import fs from 'node:fs';
import { processCpuMs } from './process-cpu';

/**
 * A process and its descendants, from each /proc/<pid>/stat's parent pid; [root] alone where
 * /proc cannot tell. A process started through the tsx binary (the worker of
 * test/support/worker-process.ts) does its work in a child node process, not in the pid spawn
 * answered.
 */
export function processTree(root: number): number[] {
  const children = new Map<number, number[]>();
  let names: string[];
  try {
    names = fs.readdirSync('/proc');
  } catch {
    return [root];
  }
  for (const name of names) {
    if (!/^\d+$/.test(name)) continue;
    try {
      // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so cut after its last ")".
      const ppid = Number(
        fs
          .readFileSync(`/proc/${name}/stat`, 'utf8')
          .replace(/^.*\) /s, '')
          .split(' ')[1],
      );
      const siblings = children.get(ppid) ?? [];
      siblings.push(Number(name));
      children.set(ppid, siblings);
    } catch {
      // it ended meanwhile
    }
  }
  const tree = [root];
  for (let i = 0; i < tree.length; i++) tree.push(...(children.get(tree[i]!) ?? []));
  return tree;
}

/**
 * CPU time (user + system) of a process and its live descendants in ms (bench/lib/process-cpu.ts
 * for each). A descendant that ended since the last reading takes its CPU with it: read it
 * around phases during which the tree keeps its shape.
 */
export function processTreeCpuMs(root: number): number {
  return processTree(root).reduce((sum, pid) => sum + processCpuMs(pid), 0);
}
