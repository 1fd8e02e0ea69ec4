import {
  code,
  oneLine,
  platformSummary,
  shortId,
  summary,
  type ExecutionSummary,
} from '../shared/summaries';

/**
 * The ledger's executions as a person sees them in the Web UI (contracts/shared/summaries.ts
 * says what is never shown). Pure.
 */

/** One leg of a held transaction: its account, side, amount (a decimal) and asset code. */
export interface HoldLeg {
  accountId: string;
  direction: 'debit' | 'credit';
  amount: string;
  asset: string;
}

/** Legs listed in a hold's details; accounts named on its summary line, per side. */
const LEGS_SHOWN_MAX = 10;
const ACCOUNTS_ON_LINE_MAX = 2;

/** The held amount: the debits' total per asset (a balanced posting's credits are the same). */
function heldAmounts(legs: readonly HoldLeg[]): string {
  const totals = new Map<string, { units: bigint; scale: number }>();
  for (const leg of legs.filter((l) => l.direction === 'debit')) {
    const [whole = '0', fraction = ''] = leg.amount.split('.');
    const total = totals.get(leg.asset) ?? { units: 0n, scale: 0 };
    const scale = Math.max(total.scale, fraction.length);
    const units =
      total.units * 10n ** BigInt(scale - total.scale) +
      BigInt(whole + fraction.padEnd(scale, '0'));
    totals.set(leg.asset, { units, scale });
  }
  return [...totals]
    .map(([asset, { units, scale }]) => {
      const digits = units.toString().padStart(scale + 1, '0');
      const amount = scale === 0 ? digits : `${digits.slice(0, -scale)}.${digits.slice(-scale)}`;
      return `${amount} ${oneLine(asset, 20)}`;
    })
    .join(' + ');
}

function accountsOf(legs: readonly HoldLeg[], direction: HoldLeg['direction']): string {
  const ids = [...new Set(legs.filter((l) => l.direction === direction).map((l) => l.accountId))];
  const shown = ids.slice(0, ACCOUNTS_ON_LINE_MAX).map((id) => shortId(id));
  return ids.length > ACCOUNTS_ON_LINE_MAX
    ? `${shown.join(', ')} +${ids.length - ACCOUNTS_ON_LINE_MAX}`
    : shown.join(', ');
}

/** A hold (ledger-hold/<transaction_id>): amount and asset, accounts, expiry. */
export function holdSummary(hold: {
  tenantId: string;
  transactionId: string;
  expiresAtMs: number;
  legs: readonly HoldLeg[] | null;
}): ExecutionSummary {
  const expires = Number.isFinite(hold.expiresAtMs)
    ? new Date(hold.expiresAtMs).toISOString()
    : 'unknown';
  const legs = hold.legs ?? [];
  const what =
    legs.length === 0
      ? 'hold'
      : `hold ${heldAmounts(legs)}: ${accountsOf(legs, 'debit')} → ${accountsOf(legs, 'credit')}`;
  return summary(`${what} · expires ${expires} · tenant ${shortId(hold.tenantId, 12)}`, [
    `**Hold** of transaction ${code(hold.transactionId)}: expires it at its expiry unless committed or voided first`,
    `- Expires at: ${code(expires)} (the \`HoldExpiresAt\` search attribute)`,
    `- Tenant: ${code(hold.tenantId)}`,
    ...(legs.length === 0
      ? ['- Legs: not known at start']
      : [
          `- Held: ${heldAmounts(legs)}`,
          ...legs
            .slice(0, LEGS_SHOWN_MAX)
            .map(
              (l) =>
                `- ${l.direction} ${code(l.accountId, 40)} ${oneLine(l.amount, 40)} ${code(l.asset, 20)}`,
            ),
          ...(legs.length > LEGS_SHOWN_MAX
            ? [`- … ${legs.length - LEGS_SHOWN_MAX} more legs`]
            : []),
        ]),
  ]);
}

export const holdSweepSummary = (): ExecutionSummary =>
  platformSummary(
    'ledger hold sweep',
    'Expires every pending hold past its expires_at: the backstop for a lost hold workflow (platform, periodic).',
  );
