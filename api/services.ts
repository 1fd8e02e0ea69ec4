import type { ServiceFactory } from './service';
import { createLedgerApi } from './ledger/app';
import { createRunsApi } from './runs/app';
import { createQuotaApi } from './quota/app';

export const SERVICES = {
  ledger: createLedgerApi,
  runs: createRunsApi,
  quota: createQuotaApi,
} satisfies Record<string, ServiceFactory>;
export type ServiceName = keyof typeof SERVICES;

export function isServiceName(name: string): name is ServiceName {
  return Object.prototype.hasOwnProperty.call(SERVICES, name);
}
