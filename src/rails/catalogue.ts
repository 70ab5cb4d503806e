/**
 * The bank catalogue: which banks each instrument reaches. The rail owns it;
 * we cache it and, when the rail's catalogue does not answer, serve the copy shipped with the
 * service, so neither the endpoint nor a beneficiary registration fails for that reason.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { INSTRUMENTS, type Instrument } from '../domain/instrument.ts';
import { assert } from '../domain/assert.ts';

export interface Bank {
  /** 4 digits; the beneficiary's `bankCode` and the first 4 digits of its account number. */
  code: string;
  /** Full name, for receipts. */
  name: string;
  /** Never empty, for UI. */
  shortName: string;
}

/** Where a rail publishes its catalogue. A code may carry a different name in each instrument's list. */
export interface BankCatalogueProvider {
  fetchBanks(method: Instrument): Promise<Bank[]>;
}

const LOCAL_FILE = path.join(path.dirname(fileURLToPath(import.meta.url)), 'data', 've-banks.json');

/** A list is usable only if every entry is complete; an empty list would reject every beneficiary. */
function isCatalogue(value: unknown): value is Bank[] {
  return (
    Array.isArray(value) &&
    value.length > 0 &&
    value.every(
      (bank) =>
        bank !== null &&
        typeof bank === 'object' &&
        typeof bank.code === 'string' &&
        /^[0-9]{4}$/.test(bank.code) &&
        typeof bank.name === 'string' &&
        typeof bank.shortName === 'string' &&
        bank.shortName !== '',
    )
  );
}

const copy = (banks: readonly Bank[]): Bank[] => banks.map(({ code, name, shortName }) => ({ code, name, shortName }));

/** The catalogue shipped in `data/ve-banks.json`: what the sandbox rail serves, and the fallback of every rail. */
export class LocalBankCatalogue implements BankCatalogueProvider {
  private readonly banks: Readonly<Record<Instrument, readonly Bank[]>>;

  constructor(file = LOCAL_FILE) {
    const parsed = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
    const banks = {} as Record<Instrument, readonly Bank[]>;
    for (const method of INSTRUMENTS) {
      const list = parsed[method];
      // The shipped file is part of the program: a broken one is a build error, not a runtime case.
      assert(isCatalogue(list), `${file} has no valid "${method}" bank list`);
      banks[method] = Object.freeze(copy(list));
    }
    this.banks = banks;
  }

  /** Synchronous access for the fallback path, which must not wait on anything. */
  banksOf(method: Instrument): Bank[] {
    return copy(this.banks[method]);
  }

  async fetchBanks(method: Instrument): Promise<Bank[]> {
    return this.banksOf(method);
  }
}

export interface BankCatalogueOptions {
  /** How long a list fetched from the rail is served before asking again. */
  ttlMs?: number;
  /** How long the local copy is served after the rail failed, before the rail is tried again. */
  fallbackTtlMs?: number;
  /** How long to wait for the rail's catalogue. */
  timeoutMs?: number;
  nowMs?: () => number;
  fallback?: LocalBankCatalogue;
  log?: { warn(details: object, message: string): void };
}

interface Entry {
  banks: readonly Bank[];
  codes: ReadonlySet<string>;
  expiresAtMs: number;
}

const CATALOGUE_TTL_MS = 10 * 60 * 1000;
const CATALOGUE_FALLBACK_TTL_MS = 30 * 1000;
const CATALOGUE_TIMEOUT_MS = 2000;

class CatalogueTimeout extends Error {
  constructor() {
    super('bank catalogue timed out');
    this.name = 'CatalogueTimeout';
  }
}

/**
 * Cached catalogue with a local fallback. Never throws because of the provider: a failure, a
 * timeout or an unusable answer serves the local copy (cached briefly, so a hanging rail costs one
 * timeout per `fallbackTtlMs`, not one per request).
 */
export class BankCatalogue {
  private readonly cache = new Map<Instrument, Entry>();
  private readonly inflight = new Map<Instrument, Promise<Entry>>();
  private readonly ttlMs: number;
  private readonly fallbackTtlMs: number;
  private readonly timeoutMs: number;
  private readonly nowMs: () => number;
  private readonly fallback: LocalBankCatalogue;

  constructor(
    private readonly provider: BankCatalogueProvider,
    private readonly options: BankCatalogueOptions = {},
  ) {
    this.ttlMs = options.ttlMs ?? CATALOGUE_TTL_MS;
    this.fallbackTtlMs = options.fallbackTtlMs ?? CATALOGUE_FALLBACK_TTL_MS;
    this.timeoutMs = options.timeoutMs ?? CATALOGUE_TIMEOUT_MS;
    this.nowMs = options.nowMs ?? Date.now;
    this.fallback = options.fallback ?? (provider instanceof LocalBankCatalogue ? provider : new LocalBankCatalogue());
  }

  async list(method: Instrument): Promise<Bank[]> {
    return copy((await this.entry(method)).banks);
  }

  async has(method: Instrument, code: string): Promise<boolean> {
    return (await this.entry(method)).codes.has(code);
  }

  /** The codes of one instrument's list, for validation. */
  async codes(method: Instrument): Promise<ReadonlySet<string>> {
    return (await this.entry(method)).codes;
  }

  private async entry(method: Instrument): Promise<Entry> {
    const cached = this.cache.get(method);
    if (cached && cached.expiresAtMs > this.nowMs()) return cached;
    // Concurrent misses share one call to the rail.
    let pending = this.inflight.get(method);
    if (!pending) {
      pending = this.refresh(method).finally(() => this.inflight.delete(method));
      this.inflight.set(method, pending);
    }
    return pending;
  }

  private async refresh(method: Instrument): Promise<Entry> {
    let banks: Bank[];
    let ttlMs = this.ttlMs;
    try {
      const fetched = await this.fetchWithTimeout(method);
      if (!isCatalogue(fetched)) throw new TypeError('bank catalogue answer is not a non-empty list of banks');
      banks = copy(fetched);
    } catch (error) {
      // Only the kind of failure is logged: a provider's message may carry URLs or credentials.
      this.options.log?.warn(
        {
          method,
          cause: error instanceof CatalogueTimeout ? 'timeout' : error instanceof Error ? error.name : 'unknown',
        },
        'bank catalogue unavailable; serving the local copy',
      );
      banks = this.fallback.banksOf(method);
      ttlMs = this.fallbackTtlMs;
    }
    const entry: Entry = { banks, codes: new Set(banks.map((bank) => bank.code)), expiresAtMs: this.nowMs() + ttlMs };
    this.cache.set(method, entry);
    return entry;
  }

  private fetchWithTimeout(method: Instrument): Promise<unknown> {
    let timer: NodeJS.Timeout | undefined;
    // Not unref'd: a caller awaiting only this answer must get the fallback, not an exited process.
    // The timer is cleared as soon as the race settles, so it never outlives one call.
    const timeout = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => reject(new CatalogueTimeout()), this.timeoutMs);
    });
    // A provider that throws synchronously is a failure like any other.
    const call = Promise.resolve().then(() => this.provider.fetchBanks(method));
    return Promise.race([call, timeout]).finally(() => clearTimeout(timer));
  }
}
