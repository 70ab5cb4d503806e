// A batch's items checked against what the tenant can pay before anything of them is written: one read
// of its funding account, its credit terms and today's tenant counters, then each item in item order
// against what the items before it would take. An item this refuses is refused as its payout would be
// (insufficient_tenant_funds, limit_exceeded: the same codes and meta), with no quote written and no
// transaction spent on it; so a batch that can pay nothing costs one read and one write of its items.
// The reads take no lock: an item it lets through is still decided under the locks (commit/payout-lane.ts),
// which may refuse it after all when another request spent meanwhile. It refuses only what is certain
// given what it read, with the code its transaction would give: an item under a limit rule that counts
// per customer or beneficiary is left to the transaction whole.
import type { Queryable } from '../db/database.ts';
import { accountBalances } from '../db/repositories/ledger.ts';
import { readUsage } from '../db/repositories/limit-usage.ts';
import { findTenant } from '../db/repositories/tenants.ts';
import { businessDate } from '../domain/caracas-time.ts';
import { creditCeiling } from '../domain/credit.ts';
import { ApiError } from '../domain/errors.ts';
import { INSTRUMENTS, type Instrument } from '../domain/instrument.ts';
import { ASSET_DECIMALS } from '../domain/money.ts';
import { instrumentCapBreach } from '../domain/instrument-caps.ts';
import { countedSubject, ruleBreach, winningRule, type LimitRule } from '../domain/limit-rules.ts';
import type { Partition } from '../domain/partition.ts';
import type { PayoutRefusal } from '../domain/commit/payout-decision.ts';
import { refusalError } from './payout-refusals.ts';
import { assert } from '../domain/assert.ts';

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

type Funds =
  { funding: 'prefunding'; available: bigint } | { funding: 'credit_receivable'; drawn: bigint; limit: bigint | null };

export class BatchPrecheck {
  private constructor(
    private readonly tenantId: string,
    private readonly rules: readonly LimitRule[],
    private readonly funds: Map<string, Funds>,
    /** Today's and this month's tenant counters by method, as the items before add to them. */
    private readonly counters: Map<Instrument, { dayAmount: bigint; dayCount: bigint; monthAmount: bigint }>,
  ) {}

  static async read(
    db: Queryable,
    partition: Partition,
    rules: readonly LimitRule[],
    assets: readonly string[],
    now: Date,
  ): Promise<BatchPrecheck> {
    const tenant = await findTenant(db, partition.tenantId);
    assert(tenant, `tenant ${partition.tenantId} has no row`);
    const funds = new Map<string, Funds>();
    for (const asset of new Set(assets)) funds.set(asset, await fundsOf(db, partition, tenant, asset));
    const day = businessDate(now);
    const counters = new Map<Instrument, { dayAmount: bigint; dayCount: bigint; monthAmount: bigint }>();
    const key = { ...partition, kind: 'tenant' as const, subjectId: partition.tenantId };
    for (const method of INSTRUMENTS)
      counters.set(method, await readUsage(db, key, [method], day, `${day.slice(0, 7)}-01`));
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
    this.counters.set(cost.method, {
      dayAmount: counted.dayAmount + cost.deliverAmount,
      dayCount: counted.dayCount + 1n,
      monthAmount: counted.monthAmount + cost.deliverAmount,
    });
    return undefined;
  }

  private fundsRefusal(cost: ItemCost): ApiError | undefined {
    const funds = this.funds.get(cost.spend.asset);
    assert(funds, `the precheck read no funds of ${cost.spend.asset}`);
    const refusal = shortfallOf(funds, cost.spend.asset, cost.spend.amount);
    return refusal ? refusalError(refusal) : undefined;
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

/**
 * The refusal of a batch that cannot pay even its cheapest item, read before any item is priced, looked
 * up or written: the tenant's funds in each asset against the least an item can take in it. A `deliver`
 * item takes at least its amount in BS (its fee comes on top); an item paying with a quote takes at
 * least one minor unit of the quote's asset, which is not read here, so any funds at all let such a
 * batch on to the item-by-item checks. Undefined: some item may be paid. The answer is a 422
 * insufficient_tenant_funds for the whole batch, with the meta of the cheapest item's refusal.
 */
export async function unpayableBatchRefusal(
  db: Queryable,
  partition: Partition,
  items: readonly BatchItemCost[],
): Promise<ApiError | undefined> {
  const least = new Map<string, bigint>();
  for (const item of items) {
    const floors: Array<[string, bigint]> = item.deliver
      ? [['BS', BigInt(item.deliver.amount)]]
      : ASSETS.map((asset) => [asset, 1n]);
    for (const [asset, amount] of floors) if (!least.has(asset) || amount < least.get(asset)!) least.set(asset, amount);
  }
  const tenant = await findTenant(db, partition.tenantId);
  assert(tenant, `tenant ${partition.tenantId} has no row`);
  let first: FundsShortfall | undefined;
  for (const [asset, amount] of least) {
    const refusal = shortfallOf(await fundsOf(db, partition, tenant, asset), asset, amount);
    if (!refusal) return undefined;
    first ??= refusal;
  }
  if (!first) return undefined;
  const refusal = refusalError(first);
  return new ApiError(
    'insufficient_tenant_funds',
    `This batch cannot pay any of its items: the cheapest takes at least ${first.funds.required} ${first.funds.asset} minor units, more than the ${first.funds.funding === 'prefunding' ? 'prefunding balance' : 'credit line'} has. Nothing was recorded: fund the tenant and send the batch again (the same Idempotency-Key may be used).`,
    refusal.meta,
  );
}

/** What a batch item can take at least, before it is priced. */
export interface BatchItemCost {
  deliver?: { amount: number } | undefined;
}

const ASSETS = Object.keys(ASSET_DECIMALS);

type FundsShortfall = Extract<PayoutRefusal, { code: 'insufficient_tenant_funds' }>;

/** The tenant's funds in one asset: prefunding is credit-normal (what it has is the negated balance), a credit draw is debit-normal. */
async function fundsOf(
  db: Queryable,
  partition: Partition,
  tenant: NonNullable<Awaited<ReturnType<typeof findTenant>>>,
  asset: string,
): Promise<Funds> {
  const balances = await accountBalances(db, partition, asset);
  return tenant.credit_enabled
    ? {
        funding: 'credit_receivable',
        drawn: balances.credit_receivable,
        limit: creditCeiling(tenant.credit_limit, tenant.credit_limits, asset),
      }
    : { funding: 'prefunding', available: -balances.prefunding };
}

/** The refusal of taking `amount` of `asset` from these funds, or undefined when they cover it. */
function shortfallOf(funds: Funds, asset: string, amount: bigint): FundsShortfall | undefined {
  if (funds.funding === 'prefunding') {
    if (amount <= funds.available) return undefined;
    return {
      code: 'insufficient_tenant_funds',
      funds: { funding: 'prefunding', asset, required: amount, available: funds.available > 0n ? funds.available : 0n },
    };
  }
  if (funds.limit === null || funds.drawn + amount <= funds.limit) return undefined;
  return {
    code: 'insufficient_tenant_funds',
    funds: {
      funding: 'credit_receivable',
      asset,
      required: amount,
      creditDrawn: funds.drawn,
      creditLimit: funds.limit,
    },
  };
}
