import type { KyselyPlugin } from 'kysely';

/** A Kysely plugin that counts the statements run through it (`count`, set back with `reset`). */
export function statementCounter(): KyselyPlugin & { readonly count: number; reset(): void } {
  let count = 0;
  return {
    transformQuery: (a) => a.node,
    transformResult: async (a) => {
      count++;
      return a.result;
    },
    get count() {
      return count;
    },
    reset() {
      count = 0;
    },
  };
}
