import type { BeneficiaryRow } from '../../db/repositories/beneficiaries.ts';
import { checkAccountNumber, checkRif } from '../../domain/account-check.ts';
import type { BeneficiaryService } from '../../services/beneficiaries.ts';
import { partitionOf } from '../context.ts';
import {
  BeneficiaryList,
  BeneficiaryListQuery,
  Beneficiary,
  RegisterBeneficiaryBody,
  RegisteredBeneficiary,
} from '../schemas/beneficiaries.ts';
import { Answer, errorResponses } from '../schemas/common.ts';
import { IdParam } from '../schemas/tenant.ts';
import type { App } from '../types.ts';

/** The public shape: snake_case, no tenant, mode or instrument. */
function beneficiaryView(row: BeneficiaryRow) {
  return {
    id: row.id,
    full_name: row.full_name,
    national_id: row.national_id,
    national_id_check: checkRif(row.national_id),
    bank_code: row.bank_code,
    account_number: row.account_number,
    account_check: checkAccountNumber(row.account_number),
    phone: row.phone,
    asset: row.asset,
    country: row.country,
    status: row.status,
    payout_count: row.payout_count,
    last_success_at: row.last_success_at ? row.last_success_at.toISOString() : null,
    last_failure_reason: row.last_failure_reason,
    created_at: row.created_at.toISOString(),
    metadata: row.metadata,
  };
}

export async function beneficiaryRoutes(app: App, beneficiaries: BeneficiaryService): Promise<void> {
  registerBeneficiaryRoute(app, beneficiaries);
  listBeneficiariesRoute(app, beneficiaries);
  getBeneficiaryRoute(app, beneficiaries);
}

function registerBeneficiaryRoute(app: App, beneficiaries: BeneficiaryService): void {
  app.post(
    '/v1/beneficiaries',
    {
      config: { scopes: ['beneficiaries:write'], idempotency: 'optional' },
      schema: {
        tags: ['Beneficiaries'],
        operationId: 'registerBeneficiary',
        summary: 'Register a beneficiary',
        description: `Registers who receives the bolivares. The instrument follows from the data: \`transferencia\` when \`accountNumber\` is given, else \`pago_movil\`; \`bankCode\` must be in that instrument's catalogue (\`GET /v1/payouts/banks?method=…\`).

Idempotent per (\`nationalId\`, \`bankCode\`, instrument): the first call answers 201 with \`created: true\`; sending the same identity again answers 200 with \`created: false\` and the existing beneficiary (same id and payout history), which takes the \`fullName\`, \`phone\` and \`accountNumber\` sent. \`metadata\` sent with it replaces the stored metadata; a registration without \`metadata\` leaves it as it is. The inline \`beneficiary\` of a payout follows the same rules.

Every field is validated before anything is stored; all violations come together as 400 \`validation_failed\` with \`meta.errors\`. A beneficiary without \`phone\` (or, for \`transferencia\`, without \`accountNumber\`) is accepted, but a payout to it fails with \`beneficiary_missing_phone\` (or \`beneficiary_missing_account\`).`,
        body: RegisterBeneficiaryBody,
        response: {
          200: Answer(
            'Already registered: the existing beneficiary (`created: false`), with the `fullName`, `phone`, `accountNumber` and `metadata` sent',
            RegisteredBeneficiary,
          ),
          201: Answer('Registered now (`created: true`)', RegisteredBeneficiary),
          ...errorResponses(),
        },
      },
    },
    async function registerBeneficiary(request, reply) {
      const { beneficiary, created } = await beneficiaries.register(partitionOf(request.auth), request.body);
      return reply.code(created ? 201 : 200).send({ ...beneficiaryView(beneficiary), created });
    },
  );
}

function listBeneficiariesRoute(app: App, beneficiaries: BeneficiaryService): void {
  app.get(
    '/v1/beneficiaries',
    {
      config: { scopes: ['beneficiaries:read'] },
      schema: {
        tags: ['Beneficiaries'],
        operationId: 'listBeneficiaries',
        summary: 'List beneficiaries',
        description:
          'Newest first (`created_at`, then `id`, descending). Pass `next_cursor` as `cursor` for the next page; the cursor is opaque and stable while beneficiaries are being added, so no row is skipped or repeated.',
        querystring: BeneficiaryListQuery,
        response: { 200: BeneficiaryList, ...errorResponses() },
      },
    },
    async function listBeneficiaries(request) {
      const page = await beneficiaries.list(partitionOf(request.auth), {
        limit: request.query.limit ?? 25,
        cursor: request.query.cursor,
      });
      return { data: page.rows.map(beneficiaryView), has_more: page.hasMore, next_cursor: page.nextCursor };
    },
  );
}

function getBeneficiaryRoute(app: App, beneficiaries: BeneficiaryService): void {
  app.get(
    '/v1/beneficiaries/:id',
    {
      config: { scopes: ['beneficiaries:read'] },
      schema: {
        tags: ['Beneficiaries'],
        operationId: 'getBeneficiary',
        summary: 'Read a beneficiary and its payout history',
        description:
          '`payout_count`, `last_success_at` and `last_failure_reason` are the recipient history: use them to judge whether a new payment is routine.',
        params: IdParam,
        response: { 200: Beneficiary, ...errorResponses('resource_not_found') },
      },
    },
    async function getBeneficiary(request) {
      return beneficiaryView(await beneficiaries.get(partitionOf(request.auth), request.params.id));
    },
  );
}
