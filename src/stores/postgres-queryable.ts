/**
 * What the store needs from `pg`: a `Pool` fits (so does a `Client` or a `PoolClient`, for tests and
 * migrations). Typed structurally, so this subpath needs neither `pg` nor `@types/pg` to load. When the
 * object also has an EventEmitter's `on`, as a `Pool` has, the store listens for its 'error' events (see
 * {@link PostgresStore}).
 *
 * @example
 * ```ts
 * const pool: PostgresQueryable = new pg.Pool({ connectionString: process.env.DATABASE_URL });
 * ```
 */
export interface PostgresQueryable {
  query<Row extends object>(
    text: string,
    values?: unknown[],
  ): Promise<{ rows: Row[]; rowCount: number | null }>;
}
