import { sql } from 'kysely';
import { preparedStatement } from '../../../src/database/transaction';

describe('preparedStatement', () => {
  const statement = preparedStatement<{ ids: readonly string[]; rows: string }, { n: number }>(
    'probe',
    (p) => sql<{ n: number }>`SELECT ${p.ids}::text[], ${7}::int, ${p.rows}::json, ${p.ids}::text[]`,
  );

  it('When it is run, then its text is the same each time, its values are filled where their slots were, and constants stay', () => {
    const first = statement({ ids: ['a'], rows: '[1]' });
    const second = statement({ ids: ['b', 'c'], rows: '[]' });
    expect(first.sql).toBe(second.sql);
    expect(first.sql).toBe('SELECT $1::text[], $2::int, $3::json, $4::text[]');
    expect(first.name).toBe('probe');
    expect(first.parameters).toEqual([['a'], 7, '[1]', ['a']]);
    expect(second.parameters).toEqual([['b', 'c'], 7, '[]', ['b', 'c']]);
  });
});
