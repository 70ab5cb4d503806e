import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  decideRoute,
  type RouteBeneficiary,
  type RouteDecision,
  type RouteInput,
} from '../../src/domain/payout-route.ts';
import type { Instrument } from '../../src/domain/instrument.ts';

// 0102 is in both catalogues, 0105 only in pago_movil's, 0108 only in transferencia's, 0999 in neither.
const CATALOGUE: Record<Instrument, ReadonlySet<string>> = {
  pago_movil: new Set(['0102', '0105']),
  transferencia: new Set(['0102', '0108']),
};
const inCatalogue = (instrument: Instrument, bankCode: string): boolean => CATALOGUE[instrument].has(bankCode);

const PHONE = '04141234567';
const ACCOUNT = '01020123450123456789';

const BOTH_AVAILABLE = { pago_movil: true, transferencia: true };
/** The V99990008 sandbox trigger: the rail makes exactly the requested instrument unavailable. */
const unavailable = (instrument: Instrument): Record<Instrument, boolean> => ({
  ...BOTH_AVAILABLE,
  [instrument]: false,
});

function input(overrides: {
  requested: Instrument;
  policy: RouteInput['policy'];
  bankCode?: string;
  accountNumber?: string | null;
  phone?: string | null;
  railAvailable?: Record<Instrument, boolean>;
}): RouteInput {
  const beneficiary: RouteBeneficiary = {
    bankCode: overrides.bankCode ?? '0102',
    accountNumber: overrides.accountNumber === undefined ? ACCOUNT : overrides.accountNumber,
    phone: overrides.phone === undefined ? PHONE : overrides.phone,
  };
  return {
    requested: overrides.requested,
    policy: overrides.policy,
    beneficiary,
    inCatalogue,
    railAvailable: overrides.railAvailable ?? BOTH_AVAILABLE,
  };
}

type Expected =
  { method: Instrument; methodChanged: boolean } | { reason: Extract<RouteDecision, { ok: false }>['reason'] };

interface Case {
  name: string;
  input: RouteInput;
  expected: Expected;
  /** Fragments the failure message must contain, so the integrator knows what to fix. */
  mentions?: RegExp[];
}

const CASES: Case[] = [
  // -- the requested instrument is usable
  ...(['preferred', 'strict'] as const).flatMap((policy): Case[] => [
    {
      name: `${policy}: pago_movil requested and usable`,
      input: input({ requested: 'pago_movil', policy }),
      expected: { method: 'pago_movil', methodChanged: false },
    },
    {
      name: `${policy}: pago_movil needs no account`,
      input: input({ requested: 'pago_movil', policy, bankCode: '0105', accountNumber: null }),
      expected: { method: 'pago_movil', methodChanged: false },
    },
    {
      name: `${policy}: transferencia requested and usable`,
      input: input({ requested: 'transferencia', policy }),
      expected: { method: 'transferencia', methodChanged: false },
    },
    {
      name: `${policy}: transferencia at a transferencia-only bank`,
      input: input({ requested: 'transferencia', policy, bankCode: '0108' }),
      expected: { method: 'transferencia', methodChanged: false },
    },
  ]),

  // -- transferencia without an account number
  {
    name: 'preferred: transferencia without account → pago_movil when the bank is in its catalogue',
    input: input({ requested: 'transferencia', policy: 'preferred', accountNumber: null }),
    expected: { method: 'pago_movil', methodChanged: true },
  },
  {
    name: 'preferred: transferencia without account at a pago_movil-only bank → pago_movil',
    input: input({ requested: 'transferencia', policy: 'preferred', bankCode: '0105', accountNumber: null }),
    expected: { method: 'pago_movil', methodChanged: true },
  },
  {
    name: 'preferred: transferencia without account, bank not in the pago_movil catalogue → beneficiary_missing_account',
    input: input({ requested: 'transferencia', policy: 'preferred', bankCode: '0108', accountNumber: null }),
    expected: { reason: 'beneficiary_missing_account' },
    mentions: [/accountNumber/, /0108 is not in the pago_movil catalogue/],
  },
  {
    name: 'preferred: transferencia without account, pago_movil unavailable at the rail → beneficiary_missing_account',
    input: input({
      requested: 'transferencia',
      policy: 'preferred',
      accountNumber: null,
      railAvailable: unavailable('pago_movil'),
    }),
    expected: { reason: 'beneficiary_missing_account' },
    mentions: [/accountNumber/, /pago_movil/],
  },
  {
    name: 'preferred: a blank account number counts as missing',
    input: input({ requested: 'transferencia', policy: 'preferred', bankCode: '0108', accountNumber: '  ' }),
    expected: { reason: 'beneficiary_missing_account' },
  },
  {
    name: 'strict: transferencia without account → beneficiary_missing_account even though pago_movil would work',
    input: input({ requested: 'transferencia', policy: 'strict', accountNumber: null }),
    expected: { reason: 'beneficiary_missing_account' },
    mentions: [/no accountNumber, which transferencia needs/, /strict/, /request pago_movil/],
  },
  {
    name: 'strict: transferencia without account at a bank outside its catalogue → still beneficiary_missing_account',
    input: input({ requested: 'transferencia', policy: 'strict', bankCode: '0105', accountNumber: null }),
    expected: { reason: 'beneficiary_missing_account' },
    mentions: [/accountNumber/, /0105 is not in the transferencia catalogue/],
  },

  // -- the rail says the requested instrument is unavailable (sandbox V99990008)
  {
    name: 'preferred: pago_movil unavailable at the rail → transferencia',
    input: input({ requested: 'pago_movil', policy: 'preferred', railAvailable: unavailable('pago_movil') }),
    expected: { method: 'transferencia', methodChanged: true },
  },
  {
    name: 'preferred: transferencia unavailable at the rail → pago_movil',
    input: input({ requested: 'transferencia', policy: 'preferred', railAvailable: unavailable('transferencia') }),
    expected: { method: 'pago_movil', methodChanged: true },
  },
  {
    name: 'strict: pago_movil unavailable at the rail → instrument_unsupported',
    input: input({ requested: 'pago_movil', policy: 'strict', railAvailable: unavailable('pago_movil') }),
    expected: { reason: 'instrument_unsupported' },
    mentions: [/rail cannot deliver .* pago_movil/, /request transferencia/],
  },
  {
    name: 'strict: transferencia unavailable at the rail → instrument_unsupported',
    input: input({ requested: 'transferencia', policy: 'strict', railAvailable: unavailable('transferencia') }),
    expected: { reason: 'instrument_unsupported' },
    mentions: [/rail cannot deliver .* transferencia/],
  },
  {
    name: 'preferred: pago_movil unavailable and the beneficiary has no account → instrument_unsupported',
    input: input({
      requested: 'pago_movil',
      policy: 'preferred',
      accountNumber: null,
      railAvailable: unavailable('pago_movil'),
    }),
    expected: { reason: 'instrument_unsupported' },
    mentions: [/rail cannot deliver/, /transferencia cannot be used either: the beneficiary has no accountNumber/],
  },
  {
    name: 'preferred: both instruments unavailable at the rail → instrument_unsupported',
    input: input({
      requested: 'pago_movil',
      policy: 'preferred',
      railAvailable: { pago_movil: false, transferencia: false },
    }),
    expected: { reason: 'instrument_unsupported' },
  },

  // -- the bank is not in the requested instrument's catalogue
  {
    name: 'preferred: bank not in the pago_movil catalogue → transferencia',
    input: input({ requested: 'pago_movil', policy: 'preferred', bankCode: '0108' }),
    expected: { method: 'transferencia', methodChanged: true },
  },
  {
    name: 'preferred: bank not in the transferencia catalogue → pago_movil',
    input: input({ requested: 'transferencia', policy: 'preferred', bankCode: '0105' }),
    expected: { method: 'pago_movil', methodChanged: true },
  },
  {
    name: 'strict: bank not in the pago_movil catalogue → instrument_unsupported',
    input: input({ requested: 'pago_movil', policy: 'strict', bankCode: '0108' }),
    expected: { reason: 'instrument_unsupported' },
    mentions: [/0108 is not in the pago_movil catalogue/, /GET \/v1\/payouts\/banks\?method=pago_movil/],
  },
  {
    name: 'strict: bank not in the transferencia catalogue → instrument_unsupported',
    input: input({ requested: 'transferencia', policy: 'strict', bankCode: '0105' }),
    expected: { reason: 'instrument_unsupported' },
  },
  {
    name: 'preferred: bank not in the pago_movil catalogue and no account → instrument_unsupported',
    input: input({ requested: 'pago_movil', policy: 'preferred', bankCode: '0108', accountNumber: null }),
    expected: { reason: 'instrument_unsupported' },
  },
  {
    name: 'preferred: bank in neither catalogue → instrument_unsupported',
    input: input({ requested: 'transferencia', policy: 'preferred', bankCode: '0999' }),
    expected: { reason: 'instrument_unsupported' },
    mentions: [/0999 is not in the transferencia catalogue/, /0999 is not in the pago_movil catalogue/],
  },
  {
    name: 'preferred: transferencia with no account AND an unsupported bank, no fallback → no_route',
    input: input({ requested: 'transferencia', policy: 'preferred', bankCode: '0999', accountNumber: null }),
    expected: { reason: 'no_route' },
    mentions: [/accountNumber/, /not in the transferencia catalogue/, /not in the pago_movil catalogue/],
  },
  {
    name: 'strict: the same beneficiary → beneficiary_missing_account',
    input: input({ requested: 'transferencia', policy: 'strict', bankCode: '0999', accountNumber: null }),
    expected: { reason: 'beneficiary_missing_account' },
  },

  // -- no phone: fails whatever the policy, instrument or anything else
  ...(['preferred', 'strict'] as const).flatMap((policy) =>
    (['pago_movil', 'transferencia'] as const).flatMap((requested) =>
      [null, '', '   '].map((phone): Case => ({
        name: `${policy}: ${requested} with phone ${JSON.stringify(phone)} → beneficiary_missing_phone`,
        input: input({ requested, policy, phone }),
        expected: { reason: 'beneficiary_missing_phone' },
        mentions: [/no phone/, /04XXXXXXXXX/],
      })),
    ),
  ),
  {
    name: 'preferred: no phone wins over every other problem',
    input: input({
      requested: 'transferencia',
      policy: 'preferred',
      phone: null,
      accountNumber: null,
      bankCode: '0999',
    }),
    expected: { reason: 'beneficiary_missing_phone' },
  },
];

describe('decideRoute: table', () => {
  for (const c of CASES) {
    it(c.name, () => {
      const decision = decideRoute(c.input);
      if ('method' in c.expected) {
        assert.deepEqual(decision, { ok: true, ...c.expected });
      } else {
        if (decision.ok) assert.fail(`expected ${c.expected.reason}, got ${JSON.stringify(decision)}`);
        assert.equal(decision.reason, c.expected.reason, decision.message);
        assert.equal(decision.methodTried, c.input.requested);
        // A readable sentence: capitalised, ends with a full stop.
        assert.match(decision.message, /^[A-Z].*\.$/s);
        for (const fragment of c.mentions ?? []) assert.match(decision.message, fragment);
      }
    });
  }

  it('the strict hint does not suggest the other instrument when it would not work either', () => {
    const decision = decideRoute(
      input({ requested: 'pago_movil', policy: 'strict', bankCode: '0108', accountNumber: null }),
    );
    assert.equal(decision.ok, false);
    if (!decision.ok) assert.doesNotMatch(decision.message, /request transferencia/);
  });
});

// ---- every combination against an independent statement of the rules ---------------------

const usable = (i: RouteInput, instrument: Instrument): boolean =>
  i.inCatalogue(instrument, i.beneficiary.bankCode) &&
  i.railAvailable[instrument] &&
  (instrument === 'pago_movil' || (i.beneficiary.accountNumber ?? '').trim() !== '');

function* everyInput(): Generator<RouteInput> {
  for (const requested of ['pago_movil', 'transferencia'] as const)
    for (const policy of ['preferred', 'strict'] as const)
      for (const phone of [PHONE, null])
        for (const accountNumber of [ACCOUNT, null])
          for (const bankCode of ['0102', '0105', '0108', '0999'])
            for (const pm of [true, false])
              for (const tf of [true, false])
                yield input({
                  requested,
                  policy,
                  phone,
                  accountNumber,
                  bankCode,
                  railAvailable: { pago_movil: pm, transferencia: tf },
                });
}

describe('decideRoute: invariants over every combination', () => {
  it('matches the rules for all 256 inputs', () => {
    let count = 0;
    for (const i of everyInput()) {
      count += 1;
      const d = decideRoute(i);
      const other: Instrument = i.requested === 'pago_movil' ? 'transferencia' : 'pago_movil';
      const label = JSON.stringify({ ...i, inCatalogue: undefined });
      if (i.beneficiary.phone === null) {
        assert.equal(d.ok, false, label);
        if (!d.ok) assert.equal(d.reason, 'beneficiary_missing_phone', label);
      } else if (usable(i, i.requested)) {
        assert.deepEqual(d, { ok: true, method: i.requested, methodChanged: false }, label);
      } else if (i.policy === 'preferred' && usable(i, other)) {
        assert.deepEqual(d, { ok: true, method: other, methodChanged: true }, label);
      } else {
        assert.equal(d.ok, false, label);
        if (d.ok) continue;
        assert.equal(d.methodTried, i.requested, label);
        const missingAccount = i.requested === 'transferencia' && i.beneficiary.accountNumber === null;
        const unsupported = !i.inCatalogue(i.requested, i.beneficiary.bankCode) || !i.railAvailable[i.requested];
        const expected =
          i.policy === 'strict'
            ? missingAccount
              ? 'beneficiary_missing_account'
              : 'instrument_unsupported'
            : missingAccount && unsupported
              ? 'no_route'
              : missingAccount
                ? 'beneficiary_missing_account'
                : 'instrument_unsupported';
        assert.equal(d.reason, expected, label);
        assert.match(d.message, /^[A-Z].*\.$/s, label);
      }
      // strict never switches; a switch is always reported.
      if (d.ok) {
        assert.equal(d.methodChanged, d.method !== i.requested, label);
        if (i.policy === 'strict') assert.equal(d.method, i.requested, label);
        assert.ok(usable(i, d.method), label);
      }
    }
    assert.equal(count, 256);
  });
});
