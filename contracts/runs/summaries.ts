import {
  code,
  escapeMarkdown,
  oneLine,
  platformSummary,
  shortId,
  summary,
  type ExecutionSummary,
} from '../shared/summaries';

/**
 * The runs service's executions as a person sees them in the Web UI (contracts/shared/
 * summaries.ts says what is never shown). Pure: the API's starters and the DAG and trigger
 * workflows (child starts) call them.
 */

/** Env variable names shown in a run's details (values never). */
const ENV_NAMES_MAX = 10;

/**
 * A command as shown: its first argument (the program, bounded) and how many arguments follow,
 * never those arguments (they may carry credentials).
 */
export function commandShown(command: readonly string[] | undefined): string {
  if (!command || command.length === 0) return "the image's default command";
  const program = oneLine(command[0]!, 40);
  const more = command.length - 1;
  return more === 0 ? program : `${program} (+${more} arg${more === 1 ? '' : 's'})`;
}

/** A run (run/<track_id>): image, command (its program), tenant. */
export function runSummary(run: {
  trackId: string;
  tenantId: string;
  image: string;
  command: readonly string[];
  env?: Record<string, string>;
  cpuLimit?: number;
  memoryLimitMb?: number;
  timeoutSeconds?: number;
}): ExecutionSummary {
  const envNames = Object.keys(run.env ?? {}).sort();
  const shownNames = envNames.slice(0, ENV_NAMES_MAX).map((name) => code(name, 40));
  const limits = [
    run.cpuLimit === undefined ? null : `${run.cpuLimit} CPU`,
    run.memoryLimitMb === undefined ? null : `${run.memoryLimitMb} MB`,
    run.timeoutSeconds === undefined ? null : `${run.timeoutSeconds} s timeout`,
  ].filter((l) => l !== null);
  return summary(
    `run ${oneLine(run.image)} · ${commandShown(run.command)} · tenant ${oneLine(run.tenantId, 40)}`,
    [
      `**Run** ${code(run.trackId)}`,
      `- Image: ${code(run.image)}`,
      `- Command: ${code(commandShown(run.command))} (arguments are not shown: they may carry credentials)`,
      `- Tenant: ${code(run.tenantId)}`,
      ...(limits.length ? [`- Limits: ${limits.join(', ')}`] : []),
      envNames.length === 0
        ? '- Env: none'
        : `- Env: ${envNames.length} variable${envNames.length === 1 ? '' : 's'}, values never shown: ${shownNames.join(', ')}${envNames.length > ENV_NAMES_MAX ? ', …' : ''}`,
      '- State: the `RunState` search attribute',
    ],
  );
}

/** A DAG (dag/<workflow_id>): its name, node count, tenant. */
export function dagSummary(dag: {
  workflowId: string;
  tenantId: string;
  name?: string | null;
  nodeCount?: number;
}): ExecutionSummary {
  const name = dag.name ? `"${oneLine(dag.name, 60)}"` : 'unnamed';
  const nodes =
    dag.nodeCount === undefined ? '' : ` · ${dag.nodeCount} node${dag.nodeCount === 1 ? '' : 's'}`;
  return summary(`DAG ${name}${nodes} · tenant ${oneLine(dag.tenantId, 40)}`, [
    `**DAG** ${code(dag.workflowId)}`,
    `- Name: ${dag.name ? escapeMarkdown(oneLine(dag.name)) : '(none)'}`,
    `- Nodes: ${dag.nodeCount ?? 'unknown'} (each node's run is a child run/<track_id>)`,
    `- Tenant: ${code(dag.tenantId)}`,
    '- State: the `DagState` search attribute',
  ]);
}

/** A timer (timer/<timer_id>). */
export function timerSummary(t: {
  timerId: string;
  tenantId: string;
  fireAt: string;
}): ExecutionSummary {
  return summary(`timer fires at ${oneLine(t.fireAt, 40)} · tenant ${oneLine(t.tenantId, 40)}`, [
    `**Timer** ${code(t.timerId)}`,
    `- Fires at: ${code(t.fireAt)}`,
    `- Tenant: ${code(t.tenantId)}`,
  ]);
}

/** A schedule's fire (schedule-fire/<schedule_id>-<time>), as its Temporal Schedule starts it. */
export function scheduleFireSummary(s: {
  scheduleId: string;
  tenantId: string;
  cron?: string;
  timezone?: string;
}): ExecutionSummary {
  const cron = s.cron ? ` · cron "${oneLine(s.cron, 40)}" ${oneLine(s.timezone ?? 'UTC', 40)}` : '';
  return summary(
    `schedule ${shortId(s.scheduleId, 12)} fire${cron} · tenant ${oneLine(s.tenantId, 40)}`,
    [
      `**Schedule fire** of ${code(s.scheduleId)}: submits the schedule's run`,
      ...(s.cron ? [`- Cron: ${code(s.cron)} in ${code(s.timezone ?? 'UTC')}`] : []),
      `- Tenant: ${code(s.tenantId)}`,
    ],
  );
}

/** A trigger's fire (trigger-fire/<trigger_id>-<time>): launches a template as a DAG. */
export function triggerFireSummary(t: {
  triggerId: string;
  tenantId: string;
  templateId: string;
  cron: string;
  timezone: string;
}): ExecutionSummary {
  return summary(
    `trigger ${shortId(t.triggerId, 12)} fire · template ${shortId(t.templateId, 12)} · tenant ${oneLine(t.tenantId, 40)}`,
    [
      `**Trigger fire** of ${code(t.triggerId)}: launches template ${code(t.templateId)} as a DAG (its child dag/<workflow_id>)`,
      `- Cron: ${code(t.cron)} in ${code(t.timezone)}`,
      `- Tenant: ${code(t.tenantId)}`,
      '- Parameters: not shown (secret ones among them)',
    ],
  );
}

/** A self-check (self-check/<check_id>): one container on one host. */
export function selfCheckSummary(c: {
  checkId: string;
  image: string;
  command: readonly string[];
}): ExecutionSummary {
  return summary(`self-check · ${oneLine(c.image)} · ${commandShown(c.command)}`, [
    `**Self-check** ${code(c.checkId)}: one container on a Docker host, by an operator`,
    `- Image: ${code(c.image)}`,
    `- Command: ${code(commandShown(c.command))}`,
  ]);
}

export const retentionSummary = (): ExecutionSummary =>
  platformSummary(
    'runs retention purge',
    'Deletes the runs, logs and events past their retention (platform, periodic).',
  );

export const reconcileSummary = (): ExecutionSummary =>
  platformSummary(
    'runs reconcile',
    'Compares runs, slots and containers and repairs what drifted (platform, periodic).',
  );
