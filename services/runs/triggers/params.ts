import type { TriggerParams, TriggerRow } from '../../../db/runs/triggers';
import { decryptSecret, encryptSecret } from '../../../platform/secrets';
import { runsError } from '../errors';
import type { TemplateParam } from '../templates/params';

/**
 * A trigger's parameter values at rest: the template's secret parameters sealed under
 * RUNS_SECRETS_KEY (AES-256-GCM, bound to the trigger), the others in clear. A read shows the
 * names of the sealed ones only; a fire opens them to launch the template.
 */

const contextOf = (triggerId: string) => `trigger:${triggerId}`;

/** The values as stored, split by the declarations of the version they were checked against. */
export function sealTriggerParams(
  key: Buffer | null,
  triggerId: string,
  declared: TemplateParam[],
  values: Record<string, string>,
): TriggerParams {
  const secret = new Set(declared.filter((p) => p.secret).map((p) => p.name));
  const plain: Record<string, string> = {};
  const hidden: Record<string, string> = {};
  for (const [name, value] of Object.entries(values))
    (secret.has(name) ? hidden : plain)[name] = value;
  const secretNames = Object.keys(hidden).sort();
  if (secretNames.length === 0) return { plain, sealed: null, secretNames };
  if (key === null) throw runsError('secrets_unavailable');
  const sealed = encryptSecret(key, JSON.stringify(hidden), contextOf(triggerId));
  return { plain, sealed, secretNames };
}

/** Every value of the trigger, the sealed ones opened (SecretDecryptionError if they cannot be). */
export function openTriggerParams(key: Buffer | null, trigger: TriggerRow): Record<string, string> {
  if (trigger.sealed_params === null) return trigger.params;
  if (key === null) throw runsError('secrets_unavailable');
  const opened = decryptSecret(key, trigger.sealed_params, contextOf(trigger.trigger_id));
  return { ...trigger.params, ...(JSON.parse(opened) as Record<string, string>) };
}
