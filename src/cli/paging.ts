// The list commands' paging: one page as the service answers it, or with --all every page from
// --cursor on, printed as one list. `limit` and `cursor` left undefined are not sent.
import { int } from './flags.ts';
import type { Flag, Values } from './command.ts';

export interface Page {
  data: unknown[];
  has_more: boolean;
  next_cursor: string | null;
}

/** The paging flags of a list command. */
export function pageFlags(what: string): Record<string, Flag> {
  return {
    limit: { type: 'string', value: 'N', description: 'page size, 1 to 100 (default 25; 100 with --all)' },
    cursor: { type: 'string', value: 'CURSOR', description: 'the next_cursor of the previous page' },
    all: { type: 'boolean', description: `read every page and print all ${what} as one list` },
  };
}

/** One page of a cursor-paginated admin list, or every page from --cursor on with --all. */
export async function listPages(
  readPage: (page: { limit: number | undefined; cursor: string | undefined }) => Promise<Page>,
  v: Values,
): Promise<unknown> {
  const limit = int(v.limit, 'limit');
  if (!v.all) return readPage({ limit, cursor: v.cursor as string | undefined });
  const data: unknown[] = [];
  let cursor = v.cursor as string | undefined;
  do {
    const answer = await readPage({ limit: limit ?? 100, cursor });
    data.push(...answer.data);
    cursor = answer.next_cursor ?? undefined;
  } while (cursor !== undefined);
  return { data, has_more: false, next_cursor: null };
}
