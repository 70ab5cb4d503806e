import { randomUUID } from 'node:crypto';
import type { Database, Queryable } from '../db/database.ts';
import {
  findBeneficiary,
  listBeneficiaries,
  upsertBeneficiary,
  type BeneficiaryRow,
} from '../db/repositories/beneficiaries.ts';
import {
  validateBeneficiary,
  type BankCodes,
  type BeneficiaryDetails,
  type BeneficiaryInput,
} from '../domain/beneficiary.ts';
import { pageOf, positionAfter } from '../domain/page-cursor.ts';
import { notFound, validationFailed } from '../domain/errors.ts';
import type { RoutedBankCatalogue } from './routed-catalogue.ts';
import type { Partition } from '../domain/partition.ts';
import { InvariantError } from '../domain/assert.ts';

/** The caller's (tenant, mode) partition: every beneficiary read and write is scoped by it. */
export interface BeneficiaryPage {
  rows: BeneficiaryRow[];
  hasMore: boolean;
  nextCursor: string | null;
}

// A registration that races one of the same identity may not see the winner's row in its own
// statement; the next statement does. The bound turns a broken invariant into an error, not a loop.
const REGISTER_ATTEMPTS_MAX = 3;

/** Registers and reads beneficiaries. */
export class BeneficiaryService {
  constructor(
    private readonly db: Database,
    private readonly catalogue: RoutedBankCatalogue,
    /** The list's handle: the read replica's (docs/read-replica.md), or `db`. */
    private readonly reads: Queryable = db,
  ) {}

  /** The partition's rail's catalogue codes per instrument, as `validateBeneficiary` needs them (cached by the catalogue). */
  async bankCodes(partition: Partition): Promise<BankCodes> {
    return this.catalogue.codes(partition);
  }

  /**
   * Idempotent per (national id, bank, instrument): an existing beneficiary keeps its id and history
   * (`created: false`) and takes the name, phone and account number given. Nothing is stored unless
   * every rule passes.
   */
  async register(
    partition: Partition,
    input: BeneficiaryInput,
  ): Promise<{ beneficiary: BeneficiaryRow; created: boolean }> {
    const result = validateBeneficiary(input, await this.bankCodes(partition));
    if (!result.ok) throw validationFailed(result.errors);
    return this.save(partition, result.beneficiary);
  }

  /** Registers validated details (also the inline beneficiary of a payout). */
  async save(
    partition: Partition,
    details: BeneficiaryDetails,
  ): Promise<{ beneficiary: BeneficiaryRow; created: boolean }> {
    for (let attempt = 1; attempt <= REGISTER_ATTEMPTS_MAX; attempt += 1) {
      const saved = await upsertBeneficiary(this.db, partition.tenantId, partition.mode, randomUUID(), details);
      if (saved) return saved;
    }
    throw new InvariantError('beneficiary neither inserted nor found by its identity');
  }

  async get(partition: Partition, id: string): Promise<BeneficiaryRow> {
    const row = await findBeneficiary(this.db, partition.tenantId, partition.mode, id);
    if (!row) throw notFound('beneficiary');
    return row;
  }

  async list(partition: Partition, page: { limit: number; cursor?: string }): Promise<BeneficiaryPage> {
    const after = positionAfter(page.cursor);
    return pageOf(
      await listBeneficiaries(this.reads, partition.tenantId, partition.mode, { limit: page.limit, after }),
      page.limit,
    );
  }
}
