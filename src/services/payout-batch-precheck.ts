// A batch's items checked against what the tenant can pay before anything of them is written: one read
// of its funding account, its credit terms and today's tenant counters, then each item in item order
// against what the items before it would take. An item this refuses is refused as its payout would be
// (insufficient_tenant_funds, limit_exceeded: the same codes and meta), with no quote written and no
// transaction spent on it; so a batch that can pay nothing costs one read and one write of its items.
// The reads take no lock: an item it lets through is still decided under the locks (payout-lane.ts),
// which may refuse it after all when another request spent meanwhile. It refuses only what is certain
// given what it read, with the code its transaction would give: an item under a limit rule that counts
// per customer or beneficiary is left to the transaction whole.
import type { Queryable } from '../db/database.ts';
import { accountBalances } from '../db/repositories/ledger.ts';
import { readUsage } from '../db/repositories/limit-usage.ts';
import { findTenant } from '../db/repositories/tenants.ts';
import { businessDate } from '../domain/caracas-time.ts';
import { creditCeiling } from '../domain/credit.ts';
import type { ApiError } from '../domain/errors.ts';
import { INSTRUMENTS, type Instrument } from '../domain/instrument.ts';
import { instrumentCapBreach } from '../domain/instrument-caps.ts';
import { countedSubject, ruleBreach, winningRule, type LimitRule } from '../domain/limit-rules.ts';
import type { Partition } from '../domain/partition.ts';
import { refusalError } from './payout-refusals.ts';

/** What an item would take: the charge to the tenant's funding account, and the amount delivered. */
export interface ItemCost {
  spend: { asset: string; amount: bigint };
  deliverAmount: bigint;
  method: Instrument;
  customerId: string | null;
  /** '' for an inline beneficiary not registered yet (its id is made in the transaction). */
  beneficiaryId: string;
  /**
   * Whether, once it passes the checks, it is charged: false for an item its transaction will fail
   * (no route, no sender, below the rail floor), which takes nothing from the items after it.
   */
  consumes: boolean;
}

/** A limit the precheck cannot judge from the tenant's counters (a rule that counts per customer or beneficiary). */
const UNDECIDED = Symbol('undecided');

type Funds = { funding: 'prefunding'; available: bigint } | { funding: 'credit_receivable'; drawn: bigint; limit: bigint | null };

export class BatchPrecheck {
  private constructor(
    private readonly tenantId: string,
    private readonly rules: readonly LimitRule[],
    private readonly funds: Map<string, Funds>,
    /** Today's and this month's tenant counters by method, as the items before add to them. */
    private readonly counters: Map<Instrument, { dayAmount: bigint; dayCount: bigint; monthAmount: bigint }>,
  ) {}

  static async read(db: Queryable, partition: Partition, rules: readonly LimitRule[], assets: readonly string[], now: Date): Promise<BatchPrecheck> {
    const tenant = await findTenant(db, partition.tenantId);
    if (!tenant) throw new Error(`invariant: tenant ${partition.tenantId} has no row`);
    const funds = new Map<string, Funds>();
    for (const asset of new Set(assets)) {
      const balances = await accountBalances(db, partition, asset);
      // Prefunding is credit-normal: what the tenant has is the negated balance; a credit draw is debit-normal.
      funds.set(
        asset,
        tenant.credit_enabled
          ? { funding: 'credit_receivable', drawn: balances.credit_receivable, limit: creditCeiling(tenant.credit_limit, tenant.credit_limits, asset) }
          : { funding: 'prefunding', available: -balances.prefunding },
      );
    }
    const day = businessDate(now);
    const counters = new Map<Instrument, { dayAmount: bigint; dayCount: bigint; monthAmount: bigint }>();
    const key = { ...partition, kind: 'tenant' as const, subjectId: partition.tenantId };
    for (const method of INSTRUMENTS) counters.set(method, await readUsage(db, key, [method], day, `${day.slice(0, 7)}-01`));
    return new BatchPrecheck(partition.tenantId, rules, funds, counters);
  }

  /** The refusal of an item that cannot pay after the items before it; undefined: it goes on (and its cost is counted). */
  refusal(cost: ItemCost): ApiError | undefined {
    // The order of its transaction: limits, then funds. An item whose limit only the transaction can
    // judge is left to it whole, and counted as taking nothing (it may be refused there).
    const limit = this.limitRefusal(cost);
    if (limit === UNDECIDED) return undefined;
    const refused = limit ?? this.fundsRefusal(cost);
    if (refused || !cost.consumes) return refused;
    const funds = this.funds.get(cost.spend.asset)!;
    if (funds.funding === 'prefunding') funds.available -= cost.spend.amount;
    else funds.drawn += cost.spend.amount;
    const counted = this.counters.get(cost.method)!;
    this.counters.set(cost.method, { dayAmount: counted.dayAmount + cost.deliverAmount, dayCount: counted.dayCount + 1n, monthAmount: counted.monthAmount + cost.deliverAmount });
    return undefined;
  }

  private fundsRefusal(cost: ItemCost): ApiError | undefined {
    const funds = this.funds.get(cost.spend.asset);
    if (!funds) throw new Error(`invariant: the precheck read no funds of ${cost.spend.asset}`);
    const { asset, amount } = cost.spend;
    if (funds.funding === 'prefunding') {
      if (amount <= funds.available) return undefined;
      const available = funds.available > 0n ? funds.available : 0n;
      return refusalError({ code: 'insufficient_tenant_funds', funds: { funding: 'prefunding', asset, required: amount, available } });
    }
    if (funds.limit === null || funds.drawn + amount <= funds.limit) return undefined;
    return refusalError({ code: 'insufficient_tenant_funds', funds: { funding: 'credit_receivable', asset, required: amount, creditDrawn: funds.drawn, creditLimit: funds.limit } });
  }

  private limitRefusal(cost: ItemCost): ApiError | undefined | typeof UNDECIDED {
    const cap = instrumentCapBreach(cost.method, cost.deliverAmount);
    if (cap) return refusalError({ code: 'limit_exceeded', breach: cap });
    // A beneficiary not registered yet may have a rule of its own once it is (the transaction knows).
    if (cost.beneficiaryId === '' && this.rules.some((rule) => rule.scope === 'beneficiary')) return UNDECIDED;
    const target = { tenantId: this.tenantId, customerId: cost.customerId, beneficiaryId: cost.beneficiaryId };
    const rule = winningRule(this.rules, target, cost.method);
    if (!rule) return undefined;
    if (countedSubject(rule, target).kind !== 'tenant') return UNDECIDED;
    const consumed = { dayAmount: 0n, dayCount: 0n, monthAmount: 0n };
    for (const method of rule.method === '*' ? INSTRUMENTS : [cost.method]) {
      const counted = this.counters.get(method)!;
      consumed.dayAmount += counted.dayAmount;
      consumed.dayCount += counted.dayCount;
      consumed.monthAmount += counted.monthAmount;
    }
    const breach = ruleBreach(rule, consumed, cost.deliverAmount);
    return breach ? refusalError({ code: 'limit_exceeded', breach }) : undefined;
  }
}
