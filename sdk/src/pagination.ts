// Cursor pagination: every list answers `{ data, has_more, next_cursor }`, and the next page is the
// same request with `cursor` = `next_cursor`. `Paginated` walks the pages for the caller, reading a
// page only when the previous one is used up.

export interface PageAnswer<T> {
  data: T[];
  has_more: boolean;
  next_cursor: string | null;
}

export class Paginated<T> implements AsyncIterable<T> {
  constructor(private readonly fetchPage: (cursor: string | undefined) => Promise<PageAnswer<T>>) {}

  /** Every page in order, the first one included, until the last. */
  async *pages(): AsyncGenerator<PageAnswer<T>, void, undefined> {
    let cursor: string | undefined;
    for (;;) {
      const page = await this.fetchPage(cursor);
      yield page;
      if (!page.has_more || page.next_cursor === null) return;
      cursor = page.next_cursor;
    }
  }

  /** Every item of every page: `for await (const payment of client.payments.list())`. */
  async *[Symbol.asyncIterator](): AsyncGenerator<T, void, undefined> {
    for await (const page of this.pages()) yield* page.data;
  }

  /** Every item, read into an array (stops at `max` items, when given). */
  async toArray(max = Number.POSITIVE_INFINITY): Promise<T[]> {
    const items: T[] = [];
    for await (const item of this) {
      if (items.length >= max) break;
      items.push(item);
    }
    return items;
  }
}
