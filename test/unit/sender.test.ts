import { ISO_3166_ALPHA3 } from '../../src/domain/iso-countries.ts';
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  VENEZUELAN_MOBILE_PREFIXES,
  normalizeVenezuelanMobile,
  validateSender,
  type Sender,
  type SenderInput,
} from '../../src/domain/sender.ts';

const RUNS = { numRuns: 300 };

const VALID: Required<Omit<SenderInput, 'nationality'>> = {
  nationalId: 'V12345678',
  firstName: 'María',
  lastName: 'Pérez',
  phone: '04141234567',
  email: 'maria.perez@example.com',
};

function accepted(input: SenderInput, fieldPrefix?: string): Sender {
  const result = validateSender(input, fieldPrefix);
  if (!result.ok) assert.fail(`expected the sender to be accepted, got ${JSON.stringify(result.errors)}`);
  return result.sender;
}

/** Asserts a rejection naming exactly these fields (in any order), each with a usable message. */
function rejected(input: SenderInput, fields: string[], fieldPrefix?: string): { field: string; message: string }[] {
  const result = validateSender(input, fieldPrefix);
  if (result.ok) assert.fail(`expected a rejection on ${fields.join(', ')}, got ${JSON.stringify(result.sender)}`);
  assert.deepEqual(
    result.errors.map((e) => e.field).sort(),
    [...fields].sort(),
    `errors: ${JSON.stringify(result.errors)}`,
  );
  for (const error of result.errors) {
    assert.ok(error.message.length > 10, `message too short: ${error.message}`);
    assert.match(error.message, /e\.g\./, `message gives no example: ${error.message}`);
  }
  return result.errors;
}

const only = (field: keyof SenderInput, value: unknown): SenderInput => ({ ...VALID, [field]: value });

// ---- the block as a whole ----------------------------------------------------------------

describe('validateSender: the block', () => {
  it('accepts a complete Venezuelan sender and defaults nationality to VEN', () => {
    assert.deepEqual(accepted(VALID), {
      nationalId: 'V12345678',
      nationality: 'VEN',
      firstName: 'María',
      lastName: 'Pérez',
      phone: '04141234567',
      email: 'maria.perez@example.com',
    });
  });

  it('trims every string', () => {
    const sender = accepted({
      nationalId: '  V12345678 ',
      firstName: ' María ',
      lastName: '\tPérez\n',
      phone: ' +58 414 123 4567 ',
      email: ' maria.perez@example.com ',
    });
    assert.deepEqual(sender, { ...VALID, nationality: 'VEN' });
  });

  it('treats a null nationality as absent', () => {
    assert.equal(accepted({ ...VALID, nationality: null }).nationality, 'VEN');
  });

  for (const field of ['nationalId', 'firstName', 'lastName', 'phone', 'email'] as const) {
    it(`requires ${field}`, () => {
      const { [field]: _omitted, ...rest } = VALID;
      const [error] = rejected(rest, [`sender.${field}`]);
      assert.match(error!.message, new RegExp(`^${field} is required`));
      rejected({ ...VALID, [field]: null }, [`sender.${field}`]);
    });

    it(`rejects a non-string ${field}`, () => {
      for (const value of [12345678, true, {}, ['V12345678']]) {
        const [error] = rejected(only(field, value), [`sender.${field}`]);
        assert.match(error!.message, /must be a string/);
      }
    });
  }

  it('reports every violation at once', () => {
    rejected({}, ['sender.nationalId', 'sender.firstName', 'sender.lastName', 'sender.phone', 'sender.email']);
    rejected(
      { nationality: 'XX', nationalId: '!', firstName: 'A', lastName: '', phone: '02121234567', email: 'nope' },
      [
        'sender.nationality',
        'sender.nationalId',
        'sender.firstName',
        'sender.lastName',
        'sender.phone',
        'sender.email',
      ],
    );
  });

  it('prefixes field names with fieldPrefix', () => {
    rejected(only('phone', 'x'), ['customer.sender.phone'], 'customer.sender');
    rejected(only('phone', 'x'), ['phone'], '');
  });

  it('rejects a block that is not an object', () => {
    for (const value of [null, 'V12345678', 42, [VALID]]) {
      const result = validateSender(value as unknown as SenderInput);
      assert.equal(result.ok, false);
      if (!result.ok)
        assert.deepEqual(
          result.errors.map((e) => e.field),
          ['sender'],
        );
    }
  });
});

// ---- nationality and nationalId ----------------------------------------------------------

describe('validateSender: nationality and nationalId', () => {
  it('accepts V, E and J followed by 4 to 9 digits for a Venezuelan sender', () => {
    for (const id of ['V1234', 'E123456789', 'J12345678', 'V99990001', 'E1234567']) {
      assert.equal(accepted(only('nationalId', id)).nationalId, id);
      assert.equal(accepted({ ...VALID, nationalId: id, nationality: 'VEN' }).nationalId, id);
    }
  });

  it('rejects a Venezuelan id with a lower-case letter instead of correcting it', () => {
    for (const id of ['v12345678', 'e1234567', 'j12345678']) rejected(only('nationalId', id), ['sender.nationalId']);
  });

  it('rejects other Venezuelan ids, naming the format', () => {
    for (const id of [
      'G12345678',
      'P12345678',
      'V123',
      'V1234567890',
      'AB12345',
      'V-12345678',
      'V 12345678',
      '12345678',
      'V',
      '',
    ]) {
      const [error] = rejected(only('nationalId', id), ['sender.nationalId']);
      assert.match(error!.message, /V, E or J followed by 4 to 9 digits/);
    }
  });

  it('accepts a foreign sender with an alphanumeric id (COL, AB12345)', () => {
    const sender = accepted({ ...VALID, nationality: 'COL', nationalId: 'AB12345' });
    assert.equal(sender.nationality, 'COL');
    assert.equal(sender.nationalId, 'AB12345');
    // As issued by the country: case is kept, only surrounding spaces go.
    assert.equal(
      accepted({ ...VALID, nationality: 'USA', nationalId: ' a1b2c3d4e5f6g7h8i9j0 ' }).nationalId,
      'a1b2c3d4e5f6g7h8i9j0',
    );
    assert.equal(accepted({ ...VALID, nationality: 'ESP', nationalId: '12345' }).nationalId, '12345');
  });

  it('rejects foreign ids outside 5 to 20 letters and digits', () => {
    for (const id of ['AB12', 'A'.repeat(21), 'AB-12345', 'AB 12345', 'ÄB12345', '']) {
      const [error] = rejected({ ...VALID, nationality: 'COL', nationalId: id }, ['sender.nationalId']);
      assert.match(error!.message, /5 to 20 letters and digits/);
      assert.match(error!.message, /COL/);
    }
  });

  it('uppercases a lowercase nationality', () => {
    assert.equal(accepted({ ...VALID, nationality: 'col', nationalId: 'AB12345' }).nationality, 'COL');
    assert.equal(accepted({ ...VALID, nationality: 'ven' }).nationality, 'VEN');
    // Lowercase "ven" is still Venezuelan, so the Venezuelan id rule applies.
    rejected({ ...VALID, nationality: 'ven', nationalId: 'AB12345' }, ['sender.nationalId']);
  });

  it('rejects a nationality that is not 3 letters', () => {
    for (const nationality of ['VE', 'VENE', 'V3N', '', 'CO L', 123, true]) {
      const [error] = rejected({ ...VALID, nationality }, ['sender.nationality']);
      assert.match(error!.message, /ISO 3166-1 alpha-3/);
    }
  });

  it('rejects three letters that are no assigned ISO 3166-1 alpha-3 code, and accepts every assigned one', () => {
    for (const nationality of ['XYZ', 'QQQ', 'ZZZ', 'xyz', 'UK', 'EUR']) {
      const [error] = rejected({ ...VALID, nationality, nationalId: 'AB12345' }, ['sender.nationality']);
      assert.match(error!.message, /ISO 3166-1 alpha-3/);
    }
    assert.equal(ISO_3166_ALPHA3.size, 249);
    for (const code of ISO_3166_ALPHA3)
      assert.equal(
        accepted({ ...VALID, nationality: code, nationalId: code === 'VEN' ? 'V12345678' : 'AB12345' }).nationality,
        code,
      );
  });

  it('with an invalid nationality still checks the id against the looser foreign shape', () => {
    rejected({ ...VALID, nationality: 'VE', nationalId: 'AB-1' }, ['sender.nationality', 'sender.nationalId']);
  });

  it('property: every V/E/J + 4..9 digits is a valid Venezuelan id', () => {
    const arbId = fc
      .tuple(fc.constantFrom('V', 'E', 'J'), fc.stringMatching(/^[0-9]{4,9}$/))
      .map(([letter, digits]) => letter + digits);
    fc.assert(
      fc.property(arbId, (id) => {
        assert.equal(accepted(only('nationalId', id)).nationalId, id);
      }),
      RUNS,
    );
  });
});

// ---- names -------------------------------------------------------------------------------

describe('validateSender: firstName and lastName', () => {
  for (const field of ['firstName', 'lastName'] as const) {
    it(`${field}: 2 to 100 characters after trimming`, () => {
      assert.equal(accepted(only(field, 'Al'))[field], 'Al');
      assert.equal(accepted(only(field, 'Ñ'.repeat(100)))[field], 'Ñ'.repeat(100));
      assert.equal(accepted(only(field, `  ${'x'.repeat(100)}  `))[field], 'x'.repeat(100));
      for (const bad of ['', 'A', ' A ', '   ', 'x'.repeat(101)]) {
        rejected(only(field, bad), [`sender.${field}`]);
      }
    });
  }
});

// ---- phone -------------------------------------------------------------------------------

const MOBILE = /^04(?:12|14|16|24|26)[0-9]{7}$/;

describe('validateSender: phone', () => {
  it('accepts every mobile prefix in every form and normalises it to 04XXXXXXXXX', () => {
    for (const prefix of VENEZUELAN_MOBILE_PREFIXES) {
      const expected = `${prefix}1234567`;
      const bare = expected.slice(1);
      const forms = [
        expected,
        `+58${bare}`,
        bare,
        `${prefix}-123-4567`,
        `(${prefix}) 123 45 67`,
        `+58 ${bare.slice(0, 3)} ${bare.slice(3)}`,
        `+58 (${bare.slice(0, 3)}) 123-4567`,
        `${bare.slice(0, 3)}-1234567`,
      ];
      for (const form of forms) {
        assert.equal(accepted(only('phone', form)).phone, expected, `form ${form}`);
        assert.equal(normalizeVenezuelanMobile(form), expected, `form ${form}`);
      }
    }
  });

  it('rejects landlines, saying only mobile prefixes are accepted', () => {
    for (const landline of ['02129876543', '+582129876543', '2129876543', '0261-987-6543', '(0241) 9876543']) {
      assert.equal(normalizeVenezuelanMobile(landline), null);
      const [error] = rejected(only('phone', landline), ['sender.phone']);
      assert.match(error!.message, /landline/);
      assert.match(error!.message, /0412\/0414\/0416\/0424\/0426/);
      // Personal data: only the prefix is echoed, never the number.
      assert.doesNotMatch(error!.message, /9876543/);
    }
  });

  it('rejects other 04 prefixes that are not mobile ones', () => {
    for (const phone of ['04181234567', '04221234567', '+584151234567', '4001234567']) {
      const [error] = rejected(only('phone', phone), ['sender.phone']);
      assert.match(error!.message, /only mobile prefixes 0412\/0414\/0416\/0424\/0426 are accepted/);
    }
  });

  it('rejects malformed numbers, naming the accepted forms', () => {
    const bad = [
      '0414123456', // 10 digits
      '041412345678', // 12 digits
      '+5804141234567', // +58 keeps the leading 0
      '584141234567', // country code without +
      '00584141234567', // international prefix
      '+574141234567', // another country
      '+58414123456',
      '0414.123.4567', // dots are not a tolerated separator
      '0414/1234567',
      'abc',
      '',
      '   ',
      '٠٤١٤١٢٣٤٥٦٧', // Arabic-Indic digits
      '04141234567x',
      '+',
    ];
    for (const phone of bad) {
      assert.equal(normalizeVenezuelanMobile(phone), null, phone);
      const [error] = rejected(only('phone', phone), ['sender.phone']);
      assert.match(error!.message, /04XXXXXXXXX/);
      assert.match(error!.message, /\+584141234567/);
    }
  });

  it('normalizeVenezuelanMobile returns null for non-strings', () => {
    assert.equal(normalizeVenezuelanMobile(4141234567 as unknown as string), null);
    assert.equal(normalizeVenezuelanMobile(null as unknown as string), null);
  });

  /** Interleaves optional separators (the tolerated ones) into the characters of `text`. */
  const withSeparators = (text: string): fc.Arbitrary<string> =>
    fc
      .array(fc.constantFrom('', '', '', ' ', '-', '(', ')', '  '), {
        minLength: text.length + 1,
        maxLength: text.length + 1,
      })
      .map((seps) => [...text].map((ch, i) => seps[i] + ch).join('') + seps[text.length]);

  const arbMobile = fc
    .tuple(fc.constantFrom(...VENEZUELAN_MOBILE_PREFIXES), fc.stringMatching(/^[0-9]{7}$/))
    .map(([prefix, rest]) => prefix + rest);

  const forms = (national: string): string[] => [national, `+58${national.slice(1)}`, national.slice(1)];

  it('property: every valid mobile in any accepted form normalises to the same 04 form', () => {
    fc.assert(
      fc.property(
        arbMobile.chain((national) =>
          fc.tuple(fc.constant(national), fc.constantFrom(...forms(national)).chain(withSeparators)),
        ),
        ([national, written]) => {
          assert.equal(normalizeVenezuelanMobile(written), national);
          assert.equal(accepted(only('phone', written)).phone, national);
        },
      ),
      RUNS,
    );
  });

  it('property: no landline or other non-mobile prefix is ever accepted, in any form', () => {
    const arbNonMobile = fc
      .tuple(fc.integer({ min: 100, max: 999 }), fc.stringMatching(/^[0-9]{7}$/))
      .map(([code, rest]) => `0${code}${rest}`)
      .filter((national) => !(VENEZUELAN_MOBILE_PREFIXES as readonly string[]).includes(national.slice(0, 4)));
    fc.assert(
      fc.property(
        arbNonMobile.chain((national) => fc.constantFrom(...forms(national)).chain(withSeparators)),
        (written) => {
          assert.equal(normalizeVenezuelanMobile(written), null);
          rejected(only('phone', written), ['sender.phone']);
        },
      ),
      RUNS,
    );
  });

  it('property: any string normalises to null or a valid mobile, and normalising is idempotent', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.stringMatching(/^[+0-9 ()-]{0,16}$/)), (raw) => {
        const normalised = normalizeVenezuelanMobile(raw);
        if (normalised !== null) {
          assert.match(normalised, MOBILE);
          assert.equal(normalizeVenezuelanMobile(normalised), normalised);
        }
      }),
      RUNS,
    );
  });
});

// ---- email -------------------------------------------------------------------------------

describe('validateSender: email', () => {
  it('accepts ordinary addresses', () => {
    for (const email of [
      'maria.perez@example.com',
      'maria+pagos@sub.example.co.ve',
      'x@y.io',
      "o'neil_99@mail-server.example.org",
      `${'a'.repeat(64)}@${'b'.repeat(63)}.com`,
    ]) {
      assert.equal(accepted(only('email', email)).email, email);
    }
  });

  it('rejects bad addresses, naming the format', () => {
    const long = `${'a'.repeat(64)}@${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(58)}.com`; // 255 characters
    assert.equal(long.length, 255);
    const longest = long.replace('d.com', '.com');
    assert.equal(longest.length, 254);
    assert.equal(accepted(only('email', longest)).email, longest);
    for (const email of [
      'maria',
      'maria@',
      '@example.com',
      'maria@example',
      'maria@@example.com',
      'maria@exa@mple.com',
      'ma ria@example.com',
      'maria@exa mple.com',
      'maria..perez@example.com',
      '.maria@example.com',
      'maria.@example.com',
      'maria@example.c',
      'maria@example.123',
      'maria@-example.com',
      'maria@example-.com',
      'maria@example..com',
      'maria@.example.com',
      'maria@example.com.',
      'maría@example.com',
      '"maria"@example.com',
      `${'a'.repeat(65)}@example.com`,
      long,
      '',
    ]) {
      const [error] = rejected(only('email', email), ['sender.email']);
      assert.match(error!.message, /local@domain\.tld/, email);
    }
  });
});
