import type { FieldError } from './errors.ts';
import type { Asset } from './money.ts';

// The five quote rules, as a pure function: each violation says what to send instead.

interface QuoteSideInput {
  asset: Asset;
  amount?: number;
}

export interface QuoteRequestInput {
  deliver?: QuoteSideInput;
  spend?: QuoteSideInput;
}

export type QuotePlan =
  | { ok: true; mode: 'deliver'; deliverAmount: bigint }
  | { ok: true; mode: 'spend'; spendAsset: Exclude<Asset, 'BS'>; spendAmount: bigint }
  | { ok: false; errors: FieldError[] };

const fail = (field: string, message: string): QuotePlan => ({ ok: false, errors: [{ field, message }] });

export function planQuote(input: QuoteRequestInput): QuotePlan {
  const deliverAmount = input.deliver?.amount;
  const spendAmount = input.spend?.amount;

  // Rule 1: the amount is fixed on exactly one side.
  if (deliverAmount !== undefined && spendAmount !== undefined) {
    return fail(
      'spend.amount',
      'Give the amount on one side only: deliver.amount to fix what the beneficiary receives (recommended for BS), or spend.amount to fix what you pay — not both.',
    );
  }
  if (deliverAmount === undefined && spendAmount === undefined) {
    return fail(
      'deliver.amount',
      'Give an amount on exactly one side: deliver.amount (what the beneficiary receives, BS minor units) or spend.amount (what you pay, with deliver.asset).',
    );
  }

  if (deliverAmount !== undefined) {
    // Rule 2: only exact BS amounts can be delivered.
    if (input.deliver!.asset !== 'BS') {
      return fail(
        'deliver.asset',
        'Only bolivares are delivered: send deliver.asset "BS" with deliver.amount in BS minor units.',
      );
    }
    // Rule 5: a fixed BS amount is paid in BS; to pay in another asset the caller fixes spend instead.
    const payIn = input.spend?.asset ?? 'BS';
    if (payIn !== 'BS') {
      return fail(
        'spend.asset',
        `deliver.amount can only be fixed when paying in BS. To pay in ${payIn}, send spend {asset: "${payIn}", amount} and deliver {asset: "BS"} instead.`,
      );
    }
    return { ok: true, mode: 'deliver', deliverAmount: BigInt(deliverAmount) };
  }

  // Rule 4: a fixed spend needs to know what it converts to.
  if (!input.deliver) {
    return fail(
      'deliver.asset',
      'spend.amount is fixed: also send deliver {asset: "BS"} so the amount can be converted to bolivares.',
    );
  }
  const spendAsset = input.spend!.asset;
  // Rule 3: spend mode converts, so the assets differ; without conversion the caller fixes deliver.
  if (spendAsset === input.deliver.asset) {
    return fail(
      'spend.asset',
      `spend and deliver are both ${spendAsset}: with no conversion, fix deliver.amount instead (the fee is added on top).`,
    );
  }
  if (input.deliver.asset !== 'BS') {
    return fail('deliver.asset', 'Only bolivares are delivered: send deliver.asset "BS".');
  }
  return { ok: true, mode: 'spend', spendAsset: spendAsset as Exclude<Asset, 'BS'>, spendAmount: BigInt(spendAmount!) };
}
