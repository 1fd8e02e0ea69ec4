import type { EffectivePolicyRow } from '../../../db/quota/consumption';
import type { CatalogueView } from '../catalogue-cache';
import { bodyRefusal } from '../errors';

/**
 * The policies that govern a subject, from the catalogue a request is judged by: its plan's
 * enabled policies with its overrides applied (enabled: false drops one; a limit replaces the
 * policy's), for the resources named (all when null), in policy id order: the one order every
 * strict decision locks in, so two never wait on each other.
 */
export function governingPolicies(
  view: CatalogueView,
  resourceNames: ReadonlySet<string> | null,
): EffectivePolicyRow[] {
  const all = allGoverning(view);
  return resourceNames === null ? all : all.filter((p) => resourceNames.has(p.resource));
}

/** Every policy governing the subject, made once per subject and catalogue read. */
const governingBySubject = new WeakMap<
  CatalogueView['entry'],
  { catalogue: CatalogueView['catalogue']; all: EffectivePolicyRow[] }
>();

function allGoverning(view: CatalogueView): EffectivePolicyRow[] {
  const made = governingBySubject.get(view.entry);
  if (made?.catalogue === view.catalogue) return made.all;
  const all = Object.freeze(governingOf(view)) as EffectivePolicyRow[];
  governingBySubject.set(view.entry, { catalogue: view.catalogue, all });
  return all;
}

function governingOf({ catalogue, entry }: CatalogueView): EffectivePolicyRow[] {
  if (entry.planId === null) return [];
  const governing: EffectivePolicyRow[] = [];
  for (const id of catalogue.planPolicies.get(entry.planId) ?? []) {
    const policy = catalogue.policies.get(id);
    if (!policy?.enabled) continue;
    const override = entry.overrides.get(id);
    if (override && !override.enabled) continue;
    governing.push({
      ...policy,
      limit_override: override?.limit_amount ?? null,
      source: override ? 'override' : 'plan',
    });
  }
  return governing.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

/** The policies governing a request's items; an item naming a resource the tenant lacks is 422. */
export function governingItems(
  view: CatalogueView,
  items: readonly { resource: string }[],
): EffectivePolicyRow[] {
  const refusals = items.flatMap((item, index) =>
    view.catalogue.resourceIds.has(item.resource)
      ? []
      : [
          {
            path: ['items', index, 'resource'],
            message: 'no resource with this name in the tenant',
            type: 'reference_not_found',
          },
        ],
  );
  if (refusals.length > 0) throw bodyRefusal(refusals);
  return governingPolicies(view, new Set(items.map((i) => i.resource)));
}
