// The operator CLI's rail statement commands (`npx bolivar rails statement …`), spawned as an operator
// runs them against a listening test server: the file is sent as it is read, the answers are the
// admin API's, a malformed file is the 400 in one line.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { businessDate } from '../../src/domain/caracas-time.ts';
import { assertOneLine, bolivar, startCliTarget, type CliTarget } from '../support/cli.ts';
import { client } from '../support/harness.ts';
import { beneficiary, fundedTenant, payout } from '../support/payouts.ts';

describe('bolivar rails statement', () => {
  let target: CliTarget;
  before(async () => {
    target = await startCliTarget();
  });
  after(async () => {
    await target.close();
  });

  it('import, list and show are the admin API; the same file again is the same statement; a bad line is one line', async () => {
    const { t, env, cwd } = target;
    const admin = client(t.app, t.platformKey);
    const tenant = await fundedTenant(t);
    const made = await payout(tenant.api, { beneficiary: beneficiary('V99990001') });
    assert.equal(made.body.status, 'settled', made.raw);
    const { rows } = await t.db.query<{ settled_at: Date; bank_reference: string; payout_amount: bigint }>(
      `SELECT settled_at, bank_reference, payout_amount FROM payments WHERE id = $1`,
      [made.body.id],
    );
    const day = businessDate(rows[0]!.settled_at);
    const unknown = randomUUID();
    const file = path.join(cwd, 'statement.csv');
    writeFileSync(
      file,
      `Referencia,Ref banco,Monto,Estado,Fecha\n${made.body.id},${rows[0]!.bank_reference},${rows[0]!.payout_amount},liquidada,${day}\n${unknown},1,5,settled,${day}\n`,
    );
    const ok = async (args: string[]) => {
      const run = await bolivar(args, env, cwd);
      assert.equal(run.code, 0, `${args.join(' ')}: ${run.stderr}`);
      return JSON.parse(run.stdout);
    };
    const columns = 'reference:Referencia,bank_reference:Ref banco,amount:Monto,status:Estado,value_date:Fecha';

    const imported = await ok([
      'rails',
      'statement',
      'import',
      '--rail',
      'sandbox',
      '--day',
      day,
      '--file',
      file,
      '--columns',
      columns,
    ]);
    assert.deepEqual(imported.counts, {
      matched: 1,
      unknown_reference: 1,
      missing_at_rail: 0,
      amount_mismatch: 0,
      status_mismatch: 0,
      bank_reference_mismatch: 0,
    });
    const again = await ok([
      'rails',
      'statement',
      'import',
      '--rail',
      'sandbox',
      '--day',
      day,
      '--file',
      file,
      '--columns',
      columns,
    ]);
    assert.deepEqual(again, imported, 'the same file: the stored statement');

    const listed = await ok(['rails', 'statement', 'list', '--rail', 'sandbox', '--all']);
    assert.deepEqual(listed.data, [imported]);
    const shown = await ok(['rails', 'statement', 'show', '--rail', 'sandbox', '--statement', imported.id]);
    assert.deepEqual(shown, (await admin.get(`/v1/admin/rails/sandbox/statements/${imported.id}`)).body);
    assert.deepEqual(
      shown.mismatches.data.map((m: { result: string; reference: string }) => [m.result, m.reference]),
      [['unknown_reference', unknown]],
    );

    const bad = path.join(cwd, 'bad.csv');
    writeFileSync(bad, `reference,bank_reference,amount,status,value_date\n${made.body.id},1,1.5,settled,${day}\n`);
    const refused = await bolivar(
      ['rails', 'statement', 'import', '--rail', 'sandbox', '--day', day, '--file', bad],
      env,
      cwd,
    );
    assert.equal(refused.code, 1);
    assertOneLine(refused, /^bolivar: 400 statement_malformed: Line 2: amount/);
    const missing = await bolivar(
      ['rails', 'statement', 'import', '--rail', 'sandbox', '--day', day, '--file', path.join(cwd, 'none.csv')],
      env,
      cwd,
    );
    assert.equal(missing.code, 1);
    assertOneLine(missing, /cannot read the statement file/);
    const noDay = await bolivar(['rails', 'statement', 'import', '--rail', 'sandbox', '--file', file], env, cwd);
    assert.equal(noDay.code, 2);
    assertOneLine(noDay, /rails statement import: --day is required/);
    assert.equal((await admin.get('/v1/admin/rails/sandbox/statements')).body.data.length, 1, 'nothing more stored');
  });

  it('pull asks the statement-pulls route: the sandbox gives no statement, said in one line', async () => {
    const { env, cwd } = target;
    const pulled = await bolivar(
      ['rails', 'statement', 'pull', '--rail', 'sandbox', '--day', businessDate(new Date())],
      env,
      cwd,
    );
    assert.equal(pulled.code, 1);
    assertOneLine(pulled, /^bolivar: 400 validation_failed: .*gives no statement/);
  });
});
