/**
 * PostgreSQL: the rows of array parameters (one per type of `types`, numbered from `$first`) as a
 * relation `as` whose length the planner cannot see.
 *
 * A prepared statement is planned with its values on each of its first five runs on a
 * connection; after that PostgreSQL keeps one generic plan unless the plans made with the values
 * came out cheaper. Seeing an array of one or two values, the planner counts that many rows and
 * finds such a plan cheaper than the generic one, which counts on more, so it plans every run
 * afresh: for a read of a few keys the planning cost more than the read (bench/FINDINGS.md).
 * Behind `offset 0` the arrays are out of its sight: it counts on ten rows with the values as
 * without them, and keeps the generic plan.
 */
export function hiddenArrays(types: readonly string[], first: number, as: string): string {
  const arrays = types.map((t, i) => `$${first + i}::${t}[] as a${i}`);
  return (
    `(select ${arrays.join(', ')} offset 0) as a ` +
    `cross join lateral unnest(${types.map((_, i) => `a.a${i}`).join(', ')}) as ${as}`
  );
}
