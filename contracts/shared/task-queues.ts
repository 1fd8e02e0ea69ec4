/**
 * Every task queue of the platform, named in one place. Pure, so workflow code can use it.
 * The prefix lets a test run start its own worker beside a live one without either
 * stealing the other's tasks.
 */
export function taskQueues(prefix: string) {
  const runsDockerAnyHost = `${prefix}runs-docker`;
  return {
    ledger: `${prefix}ledger`,
    runs: `${prefix}runs`,
    quota: `${prefix}quota`,
    /** Any host with a Docker daemon polls this queue to claim work; see claimDockerHost. */
    runsDockerAnyHost,
    /** Docker activities of one host: its containers are always driven by the worker beside them. */
    runsDockerHost: (workerId: string) => dockerHostQueue(runsDockerAnyHost, workerId),
  };
}

/** The queue of one Docker host, named after the any-host queue its workflow was given. */
export const dockerHostQueue = (anyHostQueue: string, workerId: string): string =>
  `${anyHostQueue}/${workerId}`;
export type TaskQueues = ReturnType<typeof taskQueues>;

// NOTE for workflow code: never derive queue names from `workflowInfo().taskQueue`. During
// replay (Worker.runReplayHistories, test/replay/) that is a fake queue ("fake_replay_queue-0"),
// so the workflow would fail to replay. Pass the queue names a workflow needs in its input
// (they are then recorded in its history), as `SelfCheckInput.dockerAnyHostQueue` does.
