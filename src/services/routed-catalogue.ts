// The bank catalogue a tenant is served is its rail's: GET /v1/payouts/banks, a beneficiary's
// bankCode and a payout's inline beneficiary are checked against the catalogue of the rail that the
// tenant's payouts in that mode and instrument go to first (domain/rail-routing.ts#catalogueRail).
// Each rail's lists are cached apart (BankCatalogue: ten minutes; the shipped list, briefly, when the
// rail's catalogue does not answer), so a rail's outage never fails a registration.
import type { BankCodes } from '../domain/beneficiary.ts';
import type { Instrument } from '../domain/instrument.ts';
import type { Partition } from '../domain/partition.ts';
import { catalogueRail, SANDBOX_RAIL } from '../domain/rail-routing.ts';
import { BankCatalogue, type Bank, type BankCatalogueOptions } from '../rails/catalogue.ts';
import type { RailRegistry } from './rail-registry.ts';

export class RoutedBankCatalogue {
  private readonly byRail = new Map<string, BankCatalogue>();

  /** `sandbox`: the sandbox rail's catalogue, also served when no rail serves a tenant's payouts. */
  constructor(
    private readonly registry: RailRegistry,
    readonly sandbox: BankCatalogue,
    private readonly options: BankCatalogueOptions,
  ) {
    this.byRail.set(SANDBOX_RAIL, sandbox);
  }

  /** The banks `method` reaches for this tenant and mode: its rail's list. */
  async list(partition: Partition, method: Instrument): Promise<Bank[]> {
    return (await this.catalogueOf(partition, method)).list(method);
  }

  /** The codes of each instrument's list for this tenant and mode, for validation. */
  async codes(partition: Partition): Promise<BankCodes> {
    const [pagoMovil, transferencia] = await Promise.all([
      this.codesOf(partition, 'pago_movil'),
      this.codesOf(partition, 'transferencia'),
    ]);
    return { pago_movil: pagoMovil, transferencia };
  }

  /** The name of the rail whose catalogue this tenant and mode are served for `method`. */
  async railOf(partition: Partition, method: Instrument): Promise<string> {
    const { settings, routes } = await this.registry.routing();
    return catalogueRail(partition.tenantId, partition.mode, method, settings, routes) ?? SANDBOX_RAIL;
  }

  private async codesOf(partition: Partition, method: Instrument): Promise<ReadonlySet<string>> {
    return (await this.catalogueOf(partition, method)).codes(method);
  }

  private async catalogueOf(partition: Partition, method: Instrument): Promise<BankCatalogue> {
    const name = await this.railOf(partition, method);
    const known = this.byRail.get(name);
    if (known) return known;
    const rail = this.registry.named(name);
    if (!rail) return this.sandbox;
    // One per configured rail: the map is bounded by the rails of this process.
    const log = this.options.log;
    const catalogue = new BankCatalogue(
      { fetchBanks: (instrument) => rail.adapter.banks(instrument) },
      {
        ...this.options,
        ...(log && {
          log: { warn: (details: object, message: string) => log.warn({ ...details, rail: name }, message) },
        }),
      },
    );
    this.byRail.set(name, catalogue);
    return catalogue;
  }
}
