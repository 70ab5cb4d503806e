// Parameters by name for a statement whose text is a module constant that another module or a test
// reads as it is (one that embeds it, or finds its prepared statement by that text): the text is
// built once, and each parameter is named where it is used by what it takes of a call's input.
import { Params } from './sql-params.ts';

/** Params for a statement built once: `add` takes what a parameter picks from the input, `values` gives them for one call. */
export class ParamsOf<Input> {
  readonly #params = new Params();
  readonly #picks: Array<(input: Input) => unknown> = [];

  add(pick: (input: Input) => unknown): string {
    this.#picks.push(pick);
    return this.#params.add(undefined);
  }

  /** Params.unnest, each column's values picked from the input. */
  unnest(
    columns: Record<string, readonly [type: string, pick: (input: Input) => readonly unknown[]]>,
    options?: { alias?: string; ordinality?: boolean },
  ): string {
    const added = Object.fromEntries(
      Object.entries(columns).map(([name, [type, pick]]) => [name, [type, this.add(pick)] as const]),
    );
    return this.#params.unnest(added, options);
  }

  /** The parameters' values for one call, in the statement's numbering. */
  values(input: Input): unknown[] {
    return this.#picks.map((pick) => pick(input));
  }
}
